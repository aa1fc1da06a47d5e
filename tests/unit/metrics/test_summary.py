"""End-of-run summary (dict and terminal table) and the client-saturation verdict, on small known inputs."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from loadlib.errors import ErrorClass
from loadlib.histogram import RELATIVE_ERROR, Histogram
from loadlib.metrics.saturation import SaturationThresholds, Verdict, saturation_verdict
from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary, render_table
from loadlib.records.record import RequestRecord
from tests.support.records import make_record


def rec(**kw: Any) -> RequestRecord:
    return make_record(**{"run_id": "demo-1", **kw})


def known_stats() -> LLMStats:
    """chat @ mock: 4 successes (TTFT 100..400 ms, 100 tokens, $0.001 each) and one 429; summarise: 1 open-loop."""
    s = LLMStats()
    for ttft in (100.0, 200.0, 300.0, 400.0):
        s.add(
            rec(
                ttft_ms=ttft,
                ttfo_ms=ttft,
                first_event_ms=ttft - 10.0,
                ttfb_ms=ttft - 20.0,
                e2e_ms=ttft + 900.0,
                tpot_ms=900.0 / 99,
                stream_tpot_ms=9.0,
                stream_tail_ms=9.0,
                output_events=100,
                itl_ms=(9.0,) * 99,
                completion_tokens=100,
                completion_tokens_est=130,
                prompt_tokens=50,
                prompt_tokens_est=50,
                cost_usd=0.001,
            )
        )
    s.add(rec(status=ErrorClass.RATE_LIMITED, http_status=429, e2e_ms=2.0))
    s.add(
        rec(
            scenario="summarise",
            ttft_ms=2000.0,
            e2e_ms=12000.0,
            completion_tokens=500,
            prompt_tokens=8000,
            cost_usd=None,
            intended_send_ms=5.0,
            schedule_lag_ms=12.5,
        )
    )
    return s


def ok_verdict() -> Verdict:
    lag = Histogram()
    lag.record_many([1.0, 2.0, 3.0])
    return saturation_verdict(lag, [20.0, 40.0, 30.0])


GOLDEN = "\n".join(
    [
        "LLM summary of run demo-1 (10.0 s); latencies in ms (stream: TPOT from the events alone;"
        " tail: last token to stream end); [low–high]: 95 % confidence interval (docs/statistics.md)",
        "name              reqs  errs  TTFT p50            p95   p99  E2E p50              p95   "
        " p99  TPOT p50  stream  tail  tok/s  cost $",
        "chat @ mock          5     1       200    400 [300–?]   400     1101    1300 [1201–?]  "
        " 1300       9.1     9.0   9.0   40.0  0.0040",
        "summarise @ mock     1     0      2000  2000 [2000–?]  2000    12000  12000 [12000–?] "
        " 12000         -       -     -   50.0       -",
        "-" * 131,
        "Aggregated           6     1       300   2000 [400–?]  2000     1201   12000 [1301–?] "
        " 12000       9.1     9.0   9.0   90.0  0.0040",
        "errors by class, chat @ mock: rate_limited 1",
        "cost excludes 1 request of models missing from the price table",
        "open loop, summarise @ mock: schedule lag p50 12.5 p99 12.5 ms; E2E from intended send"
        " p50/p95/p99 12012/12012/12012 ms",
        "client OK: loop lag p99 3.0 ms, CPU p90 40.0 %",
    ]
)


def test_golden_table() -> None:
    summary = build_summary(known_stats(), 10.0, ok_verdict(), {"run_id": "demo-1", "users": 4})
    assert render_table(summary) == GOLDEN


def test_summary_structure_and_key_numbers() -> None:
    summary = build_summary(known_stats(), 10.0, ok_verdict(), {"run_id": "demo-1", "users": 4})
    assert json.loads(json.dumps(summary)) == summary  # JSON-able as is
    assert summary["meta"] == {"run_id": "demo-1", "users": 4}
    assert summary["client_saturated"] is False
    assert [r["name"] for r in summary["rows"]] == ["chat @ mock", "summarise @ mock"]
    chat = summary["rows"][0]
    assert (chat["count"], chat["ok"], chat["errors_total"]) == (5, 4, 1)
    assert chat["errors"] == {"rate_limited": 1}
    assert chat["error_rate"] == 0.2
    ttft = chat["latency_ms"]["ttft"]
    assert ttft["count"] == 4
    assert ttft["p50"] == pytest.approx(200.0, rel=RELATIVE_ERROR)
    assert (ttft["p95"], ttft["p99"], ttft["max"], ttft["mean"]) == (400.0, 400.0, 400.0, 250.0)
    assert chat["latency_ms"]["first_event"]["p50"] == pytest.approx(190.0, rel=RELATIVE_ERROR)
    assert chat["latency_ms"]["ttfb"]["p95"] == 380.0
    assert chat["latency_ms"]["itl"]["count"] == 396
    assert chat["latency_ms"]["tpot"]["p50"] == pytest.approx(9.091, rel=RELATIVE_ERROR)
    assert chat["requests_per_s"] == 0.5
    assert chat["output_tokens_per_s"] == 40.0
    assert chat["decode_tokens_per_s"]["p50"] == pytest.approx(100 / 0.9, rel=RELATIVE_ERROR)
    assert (chat["prompt_tokens"], chat["completion_tokens"]) == (200, 400)
    assert chat["cost_usd"] == pytest.approx(0.004)
    assert chat["cost_per_1k_requests"] == pytest.approx(0.8)
    assert chat["token_estimate"]["completion"]["over_10pct"] == 4
    assert chat["token_estimate"]["completion"]["abs_pct_p50"] == pytest.approx(30.0, rel=RELATIVE_ERROR)
    assert chat["token_estimate"]["prompt"]["abs_pct_p95"] == 0.0
    assert chat["open_loop"] is None
    summarise = summary["rows"][1]
    assert summarise["cost_usd"] is None
    assert summarise["unpriced_requests"] == 1
    assert summarise["open_loop"]["schedule_lag_ms"]["p99"] == 12.5
    assert summarise["open_loop"]["e2e_from_intended_ms"]["p50"] == 12012.5
    total = summary["total"]
    assert total["name"] == "Aggregated"
    assert (total["count"], total["completion_tokens"], total["output_tokens_per_s"]) == (6, 900, 90.0)


def test_empty_stats_render_dashes() -> None:
    summary = build_summary(LLMStats(), 0.0, None, {})
    text = render_table(summary)
    assert summary["rows"] == []
    assert summary["total"]["requests_per_s"] is None
    assert summary["client_saturated"] is None
    lines = text.splitlines()
    assert lines[-1] == "client: not checked (no loop-lag samples)"
    assert cells(lines[-2]) == ["Aggregated", "0", "0", *["-"] * 11]


def test_missing_and_none_fields_render_without_crashing() -> None:
    assert render_table({}).splitlines()[-1] == "client: not checked (no loop-lag samples)"
    row = {"name": "x @ y", "count": None, "latency_ms": {"ttft": None, "e2e": {"p50": None}}, "errors": None}
    text = render_table({"rows": [row, None], "total": None, "client": {"saturated": False}})
    assert cells(text.splitlines()[2]) == ["x @ y"] + ["-"] * 13
    assert "client OK: loop lag p99 - ms, CPU p90 - %" in text


def test_summary_read_back_from_json_renders_the_same() -> None:
    summary = build_summary(known_stats(), 10.0, ok_verdict(), {"run_id": "demo-1"})
    assert render_table(json.loads(json.dumps(summary))) == render_table(summary)


def cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def test_number_formats() -> None:
    s = LLMStats()
    s.add(rec(ttft_ms=12.345, e2e_ms=99.94, cost_usd=12.5, completion_tokens=3))
    s.add(rec(endpoint="b", ttft_ms=0.04, e2e_ms=123456.0, cost_usd=0.00001234, completion_tokens=1))
    a, b = (cells(line) for line in render_table(build_summary(s, 1.0, None, {})).splitlines()[2:4])
    assert a[0] == "chat @ b" and b[0] == "chat @ mock"
    assert b[3:7] == [
        "12.3",
        "12.3 [12.3–?]",
        "12.3",
        "99.9",
    ]  # one decimal below 100 ms; one sample: p95 unbounded above
    assert b[-1] == "12.50"
    assert a[3] == "0.0"
    assert a[6] == "123456"  # whole ms above 100
    assert a[-1] == "1.2e-05"


def test_saturated_run() -> None:
    lag = Histogram()
    lag.record_many([1.0] * 95 + [120.3] * 5)
    verdict = saturation_verdict(lag, [95.0] * 20 + [10.0] * 80, SaturationThresholds())
    assert verdict.saturated
    assert verdict.reasons[0] == (
        "worker event-loop lag p99 120.3 ms > 50 ms: latencies are inflated by the load generator, add workers"
    )
    assert verdict.reasons[1].startswith("worker CPU p90 95.0 % > 90 %")
    summary = build_summary(known_stats(), 10.0, verdict, {})
    assert summary["client_saturated"] is True
    last = render_table(summary).splitlines()[-1]
    assert last.startswith("CLIENT SATURATED: worker event-loop lag p99 120.3 ms > 50 ms")
    assert "; worker CPU p90 95.0 %" in last


def test_verdict_thresholds_and_missing_samples() -> None:
    lag = Histogram()
    lag.record_many([10.0] * 100)
    assert not saturation_verdict(lag, []).saturated
    assert saturation_verdict(lag, [], SaturationThresholds(loop_lag_p99_ms=5.0)).saturated
    cpu = Histogram()
    cpu.record_many([95.0] * 10 + [50.0] * 90)  # pegged 10 % of the time: p90 is still 50
    verdict = saturation_verdict(lag, cpu)
    assert not verdict.saturated
    assert verdict.cpu_p90_percent == pytest.approx(50.0, rel=RELATIVE_ERROR)
    cpu.record(95.0)  # now more than a tenth of the samples
    assert saturation_verdict(lag, cpu).saturated
    empty = saturation_verdict(Histogram(), Histogram())
    assert empty == Verdict(saturated=False, reasons=[], loop_lag_p99_ms=None, cpu_p90_percent=None)
    assert json.loads(json.dumps(empty.to_dict()))["saturated"] is False


def test_lag_beyond_a_token_gap_warns_that_the_itl_tail_is_the_clients() -> None:
    lag = Histogram()
    lag.record_many([1.0] * 95 + [30.0] * 5)  # p99 30 ms: under the 50 ms saturation threshold
    verdict = saturation_verdict(lag, [40.0] * 10, itl_p50_ms=10.0)
    assert not verdict.saturated
    assert verdict.warnings == [
        "loop lag p99 30.0 ms > ITL p50 10.0 ms: tokens that arrived while the loop ran late were read together, so "
        "the ITL tail is the load generator's (TTFT, TPOT and E2E use arrival stamps)"
    ]
    lines = render_table(build_summary(known_stats(), 10.0, verdict, {})).splitlines()
    assert lines[-2].startswith("client OK: loop lag p99 30.0 ms")
    assert lines[-1].startswith("client warning: loop lag p99 30.0 ms > ITL p50 10.0 ms")
    assert saturation_verdict(lag, [40.0] * 10, itl_p50_ms=40.0).warnings == []  # slow tokens: gaps stay apart
    assert saturation_verdict(lag, [40.0] * 10).warnings == []  # no ITL samples: nothing to judge


def test_tpot_vs_stream_sets_the_tail_against_the_gap_of_the_same_statistic() -> None:
    """Issue 21's case: 27 streams of 64 tokens at 10 ms, each held 138.6 ms at the end and one 1.2 s more. The p50
    gap is 2.2 ms per token while the mean tail spread over the tokens is 2.9 ms; the line set the 2.9 against the
    2.2. Now the tail's share is set against the gap of the means, which it explains whole."""
    s = LLMStats()
    for i in range(27):
        tail = 138.6 + (1200.0 if i == 0 else 0.0)
        e2e = 100.0 + 630.0 + tail
        s.add(
            rec(
                ttft_ms=100.0,
                e2e_ms=e2e,
                tpot_ms=(e2e - 100.0) / 63,
                stream_tpot_ms=10.0,
                stream_tail_ms=tail,
                output_events=64,
                completion_tokens=64,
            )
        )
    text = render_table(build_summary(s, 10.0, None, {"run_id": "demo-1"}))
    (line,) = [x for x in text.splitlines() if x.startswith("TPOT vs stream")]
    means = re.search(r"the means are ([0-9.]+) and ([0-9.]+) ms \(\+([0-9.]+) ms per token\)", line)
    tail = re.search(
        r"tail \(mean ([0-9.]+) ms, p50 [0-9.]+ ms from the last token to the end\) adds \+([0-9.]+) ms", line
    )
    assert means and tail, line
    assert "is 22 % above" in line, "the p50s, as the table shows them"
    assert float(means.group(3)) == pytest.approx(2.9, abs=0.1) and float(tail.group(2)) == pytest.approx(2.9, abs=0.1)


def test_stale_connection_retries_are_counted_per_row_not_errors_and_printed_with_the_hint() -> None:
    worker = LLMStats()
    worker.add(rec(ttft_ms=50.0, e2e_ms=90.0, stale_retry_ms=0.7))
    worker.add(rec(ttft_ms=40.0, e2e_ms=80.0))
    worker.add(rec(status=ErrorClass.CONNECT_ERROR, e2e_ms=3.0, stale_retry_ms=0.5))  # the new connection failed too
    master = LLMStats()
    master.merge_serialized(worker.serialize())
    summary = build_summary(master, 10.0, ok_verdict(), {})
    row, total = summary["rows"][0], summary["total"]
    assert (row["stale_connection_retries"], total["stale_connection_retries"]) == (2, 2)
    assert (total["errors_total"], total["errors"]) == (1, {"connect_error": 1})
    assert "2 requests met a stale keep-alive connection" in render_table(summary)
    assert "--llm-keepalive-idle-s" in render_table(summary)
    quiet = build_summary(known_stats(), 10.0, ok_verdict(), {})
    assert quiet["total"]["stale_connection_retries"] == 0 and "stale" not in render_table(quiet)
