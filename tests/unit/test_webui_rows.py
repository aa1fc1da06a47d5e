from loadlib.locust.webui import COLUMNS, table_rows
from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary
from tests.support.records import make_record


def test_rows_carry_every_column_and_numbers():
    stats = LLMStats()
    for i in range(20):
        stats.add(
            make_record(
                request_id=str(i),
                ttft_ms=100.0 + i,
                ttfo_ms=100.0 + i,
                e2e_ms=500.0 + i,
                tpot_ms=10.0,
                itl_ms=(10.0, 10.0),
                output_events=3,
                completion_tokens=3,
                prompt_tokens=7,
                start_unix_ns=i,
                cost_usd=0.001,
            )
        )
    rows = table_rows(build_summary(stats, 10.0, None, {}))
    assert [r["name"] for r in rows] == ["chat @ mock", "Aggregated"]
    for row in rows:
        assert all(key in row for key, _ in COLUMNS)
    assert 108 <= rows[0]["ttft_p50"] <= 111
    assert rows[0]["requests"] == 20 and rows[0]["client"] == "-"


def test_empty_summary_renders_dashes():
    rows = table_rows(build_summary(LLMStats(), 0.0, None, {}))
    assert rows[-1]["ttft_p50"] == "-"


def test_client_column_says_when_the_itl_tail_is_blurred():
    from loadlib.metrics.saturation import Verdict

    def client(verdict: Verdict) -> str:
        return table_rows(build_summary(LLMStats(), 1.0, verdict, {}))[0]["client"]

    assert client(Verdict(saturated=False)) == "ok"
    assert client(Verdict(saturated=False, warnings=["lag > ITL"])) == "ok (ITL tail blurred)"
    assert client(Verdict(saturated=True, reasons=["lag"], warnings=["lag > ITL"])) == "SATURATED"
