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


def test_failover_events_are_rows_newest_first_bounded_and_masked():
    from loadlib.locust.webui import EVENT_COLUMNS, MAX_EVENT_ROWS, event_rows

    events = [
        {"at": 1796040000.0 + i, "kind": "circuit_open", "endpoint": "primary", "worker": "w1", "message": f"m{i} sk-1"}
        for i in range(MAX_EVENT_ROWS + 5)
    ]
    rows = event_rows({"failover": {"events": events}}, lambda text: text.replace("sk-1", "***"))
    assert len(rows) == MAX_EVENT_ROWS
    assert rows[0]["message"] == f"m{MAX_EVENT_ROWS + 4} ***" and rows[-1]["message"] == "m5 ***"
    assert all(key in rows[0] for key, _ in EVENT_COLUMNS) and rows[0]["time"].endswith(".000")
    assert event_rows({}) == []


def test_tab_rows_keep_aggregated_last_and_share_cells_per_metric():
    """Locust's extended tables sort by `name`: the tab's `name` is the row's place, so Aggregated stays last."""
    from loadlib.locust.webui import TAB_COLUMNS, tab_rows

    stats = LLMStats()
    for i, endpoint in enumerate(["zeta", "alpha"]):
        stats.add(make_record(request_id=str(i), endpoint=endpoint, ttft_ms=100.0, e2e_ms=500.0, prompt_tokens=7))
    rows = tab_rows(build_summary(stats, 10.0, None, {}))
    by_place = sorted(rows, key=lambda r: r["name"])
    assert by_place[-1]["row"] == "Aggregated" and len(by_place) == 3
    assert all(key in row for row in rows for key, _ in TAB_COLUMNS)
    assert len(TAB_COLUMNS) <= 13, "the tab fits 1,400 px"
    assert rows[-1]["ttft"].count(" / ") == 2 and rows[-1]["tokens"].startswith("14 / ")
