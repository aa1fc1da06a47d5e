"""Thresholds against hand-built summaries shaped like loadlib.metrics.summary's: pass, fail, no data, too few
samples, tag filters over several rows (exact sums, worst row for percentiles), error classes, cost, shares."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loadlib.histogram import RELATIVE_ERROR
from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary
from loadlib.verdicts.evaluate import evaluate, required_samples, stats_histograms
from loadlib.verdicts.thresholds import parse
from tests.support.records import make_record

KEYS = {
    "expression",
    "metric",
    "aggregate",
    "tags",
    "op",
    "limit",
    "unit",
    "value",
    "passed",
    "samples",
    "reason",
    "origin",
}


def latency(count: int, p50: float, p95: float, p99: float, mean: float | None = None) -> dict[str, Any]:
    return {"count": count, "mean": p50 if mean is None else mean, "p50": p50, "p95": p95, "p99": p99, "max": p99 * 2}


def row(scenario: str, endpoint: str, count: int = 1000, errors: dict[str, int] | None = None, **kw: Any) -> dict:
    errors = errors or {}
    failed = sum(errors.values())
    ok = count - failed
    lat = kw.pop("ttft", latency(ok, 50.0, 90.0, 120.0))
    return {
        "name": f"{scenario} @ {endpoint}",
        "scenario": scenario,
        "endpoint": endpoint,
        "count": count,
        "ok": ok,
        "errors_total": failed,
        "error_rate": failed / count if count else None,
        "errors": errors,
        "latency_ms": {"ttft": lat, "e2e": latency(ok, 500.0, 900.0, 1500.0), "ttfb": {"count": ok, "p50": 5.0}},
        "requests_per_s": count / 100.0,
        "output_tokens_per_s": count * 50 / 100.0,
        "prompt_tokens": count * 200,
        "completion_tokens": count * 50,
        "cost_usd": kw.pop("cost_usd", count * 250 * 1e-6),
        "unpriced_requests": kw.pop("unpriced", 0),
        **kw,
    }


def summary(*rows: dict, total: dict | None = None, scenarios: dict | None = None) -> dict[str, Any]:
    return {"duration_s": 100.0, "rows": list(rows), "total": total, "scenarios": scenarios}


def one(expr: str, s: dict[str, Any], min_samples: int = 20) -> dict[str, Any]:
    (result,) = evaluate([parse(expr)], s, min_samples)
    assert set(result) == KEYS
    json.dumps(result, allow_nan=False)  # JSON-able as it is
    return result


RUN = summary(row("chat", "a"), total=row("", "", ttft=latency(1000, 50.0, 140.0, 200.0)))


def test_pass_reports_value_limit_and_samples() -> None:
    r = one("ttft p95 < 150ms", RUN)
    assert r["passed"] is True
    assert (r["value"], r["limit"], r["unit"], r["samples"], r["aggregate"], r["tags"]) == (
        140.0,
        150.0,
        "ms",
        1000,
        "p95",
        {},
    )
    assert r["reason"] == "ttft p95 = 140 ms < 150 ms (1,000 requests)"


def test_fail_speaks_the_unit_written() -> None:
    r = one("ttft p95 < 0.1s", RUN)
    assert (r["passed"], r["limit"], r["unit"]) == (False, 100.0, "s")
    assert r["reason"] == "ttft p95 = 0.14 s > 0.1 s (1,000 requests)"


@pytest.mark.parametrize(
    ("expr", "passed"),
    [("ttft p95 <= 140", True), ("ttft p95 >= 140", True), ("ttft p95 == 140", True), ("ttft p95 > 140", False)],
)
def test_operators(expr: str, passed: bool) -> None:
    assert one(expr, RUN)["passed"] is passed


def test_one_row_runs_use_the_total() -> None:
    # the only row matches {scenario=chat}: that is every row, so the total's merged percentiles answer
    assert one("ttft{scenario=chat} p95 < 150ms", RUN)["value"] == 140.0


def test_no_matching_rows_is_no_data_and_says_what_the_run_has() -> None:
    r = one("ttft{scenario=chta} p95 < 150ms", RUN)
    assert (r["passed"], r["value"], r["samples"]) == (None, None, 0)
    assert r["reason"] == "no requests match {scenario=chta}; scenarios in this run: chat"


def test_no_successful_requests_is_no_data() -> None:
    dead = row("chat", "a", count=30, errors={"http_5xx": 30}, ttft={"count": 0, "p95": None})
    r = one("ttft p95 < 150ms", summary(dead))
    assert (r["passed"], r["samples"]) == (None, 0)
    assert "no requests behind ttft p95" in r["reason"]


@pytest.mark.parametrize(
    ("expr", "count", "needed"),
    [("ttft p99 < 1s", 400, 500), ("ttft p95 < 1s", 99, 100), ("ttft p50 < 1s", 15, 20), ("error_rate < 1%", 19, 20)],
)
def test_too_few_samples_cannot_pass(expr: str, count: int, needed: int) -> None:
    s = summary(row("chat", "a", count=count, ttft=latency(count, 1.0, 1.0, 1.0)))
    r = one(expr, s)
    assert (r["passed"], r["samples"]) == (None, count)
    assert f"only {count:,} requests for " in r["reason"]
    assert f"at least {needed:,} needed" in r["reason"]


@pytest.mark.parametrize(
    ("expr", "min_samples", "needed"),
    [
        ("ttft p50 < 1", 0, 10),
        ("ttft p95 < 1", 20, 100),
        ("ttft p99 < 1", 20, 500),
        ("ttft p99 < 1", 1000, 1000),
        ("ttft mean < 1", 20, 20),
        ("ttft p90 < 1", 20, 50),
        ("ttft p99.9 < 1", 20, 5000),
        ("ttft p(99.99) < 1", 20, 50000),
        ("ttft p97 < 1", 20, 170),  # ceil(100 / 3) = 34
        ("error_rate < 1%", 5, 5),
        ("errors == 0", 20, 0),
        ("cost_usd < 1", 20, 0),
    ],
)
def test_the_sample_rule(expr: str, min_samples: int, needed: int) -> None:
    assert required_samples(parse(expr), min_samples) == needed


# several rows

A = row("chat", "a", count=1000, errors={"rate_limited": 30, "http_5xx": 10}, ttft=latency(960, 40.0, 100.0, 130.0))
B = row("chat", "b", count=500, errors={"rate_limited": 20}, ttft=latency(480, 60.0, 170.0, 260.0))
C = row("support_chat", "a", count=200, ttft=latency(200, 80.0, 300.0, 500.0))
THREE = summary(A, B, C, total=row("", "", count=1700, ttft=latency(1640, 50.0, 160.0, 400.0)))


def test_percentile_over_several_rows_is_the_worst_row() -> None:
    r = one("ttft{scenario=chat} p95 < 150ms", THREE)
    assert (r["passed"], r["value"], r["samples"]) == (False, 170.0, 480)
    assert r["reason"].startswith(
        "ttft{scenario=chat} p95 = 170 ms > 150 ms (480 requests) at chat @ b, the worst of 2"
    )
    assert "cannot be merged" in r["reason"]


def test_a_lower_bound_takes_the_lowest_row() -> None:
    r = one("ttft{scenario=chat} p95 > 120ms", THREE)
    assert (r["passed"], r["value"]) == (False, 100.0)
    assert "at chat @ a" in r["reason"]


def test_percentile_over_several_rows_passes_only_if_every_row_passes() -> None:
    r = one("ttft{scenario=chat} p95 < 200ms", THREE)
    assert (r["passed"], r["value"]) == (True, 170.0)


def test_a_failing_row_decides_even_when_another_has_too_few_samples() -> None:
    small = row("chat", "c", count=50, ttft=latency(50, 10.0, 10.0, 10.0))
    s = summary(A, B, small, C)
    assert one("ttft{scenario=chat} p95 < 150ms", s)["passed"] is False
    r = one("ttft{scenario=chat} p95 < 200ms", s)
    assert (r["passed"], r["samples"]) == (None, 50)
    assert r["reason"].startswith("only 50 requests for ttft{scenario=chat} p95: at least 100 needed")
    assert "at chat @ c (one of 3 matching rows" in r["reason"]


def test_every_row_selected_uses_the_total_percentile() -> None:
    assert one("ttft p95 < 150ms", THREE)["value"] == 160.0
    assert one("ttft{endpoint=a} p95 < 1s", THREE)["reason"].endswith(
        "the worst of 2 matching rows (percentiles of rows cannot be merged)"
    )


def test_mean_and_max_combine_exactly() -> None:
    r = one("ttft{endpoint=a} mean < 1s", THREE)
    assert r["value"] == pytest.approx((40.0 * 960 + 80.0 * 200) / 1160)
    assert r["samples"] == 1160
    assert one("ttft{endpoint=a} max < 1s", THREE)["value"] == 1000.0


def test_rates_sum_exactly_over_rows() -> None:
    r = one("error_rate{scenario=chat} < 5%", THREE)
    assert (r["value"], r["samples"], r["passed"]) == (60 / 1500, 1500, True)
    assert r["reason"] == "error_rate{scenario=chat} = 4% < 5% (1,500 requests)"


def test_error_rate_of_one_class() -> None:
    r = one("error_rate{scenario=chat,class=rate_limited} < 3%", THREE)
    assert r["value"] == pytest.approx(50 / 1500)
    assert r["passed"] is False
    assert r["tags"] == {"scenario": "chat", "class": "rate_limited"}
    assert one("error_rate{class=timeout_ttft} == 0", THREE)["passed"] is True


def test_error_count_of_one_class_needs_no_samples() -> None:
    s = summary(row("chat", "a", count=3, errors={"http_5xx": 1}))
    r = one("errors{class=http_5xx} == 0", s)
    assert (r["passed"], r["value"], r["samples"]) == (False, 1, 3)


def test_throughput_sums_over_rows() -> None:
    r = one("output_tokens_per_s{scenario=chat} > 700", THREE)
    assert (r["value"], r["passed"]) == (750.0, True)
    assert one("requests_per_s{endpoint=a} >= 12", THREE)["value"] == 12.0


def test_cost_per_1k_tokens_divides_summed_cost_by_summed_tokens() -> None:
    r = one("cost_per_1k_tokens{scenario=chat} <= 0.0015", THREE)
    # 250e-6 USD per request for 250 tokens: 0.001 USD per 1,000 tokens
    assert r["value"] == pytest.approx(0.001)
    assert (r["passed"], r["samples"], r["unit"]) == (True, 1500, "")
    assert one("cost_per_1k_tokens <= 0.0009", THREE)["passed"] is False


def test_total_cost() -> None:
    r = one("cost_usd{scenario=chat} < 0.5", THREE)
    assert r["value"] == pytest.approx(1500 * 250e-6)
    assert r["passed"] is True


def test_cost_with_unpriced_requests_is_not_judged() -> None:
    s = summary(row("chat", "a", unpriced=12))
    r = one("cost_usd < 100", s)
    assert r["passed"] is None
    assert r["reason"] == "cost leaves out 12 requests of models missing from the price table"


COMPLIANCE = {"compliance": {"checked": 200, "schema_valid": 197, "repeat_pairs": 40, "deterministic": 38}}


def test_share_from_scenario_results() -> None:
    s = summary(row("compliance", "a"), scenarios=COMPLIANCE)
    r = one("schema_valid >= 99%", s)
    assert (r["value"], r["samples"], r["passed"]) == (0.985, 200, False)
    assert r["reason"] == "schema_valid = 98.5% < 99% (200 checked outputs)"
    d = one("deterministic >= 0.9", s)
    assert (d["value"], d["samples"], d["passed"]) == (0.95, 40, True)


def test_share_without_the_compliance_scenario_is_no_data() -> None:
    r = one("schema_valid >= 99%", RUN)
    assert (r["passed"], r["value"], r["samples"]) == (None, None, 0)
    assert "no compliance results in this run" in r["reason"]


def test_share_with_too_few_repeats() -> None:
    s = summary(row("compliance", "a"), scenarios={"compliance": {**COMPLIANCE["compliance"], "repeat_pairs": 4}})
    r = one("deterministic >= 90%", s)
    assert r["passed"] is None
    assert r["reason"] == "only 4 repeat pairs for deterministic: at least 20 needed"


def test_results_keep_order_and_fields() -> None:
    results = evaluate([parse("e2e p99 < 2s"), parse("error_rate < 1%")], THREE)
    assert [r["metric"] for r in results] == ["e2e", "error_rate"]
    assert results[0]["limit"] == 2000.0 and results[0]["unit"] == "s"
    assert results[1]["aggregate"] is None and results[1]["unit"] == "%"


# percentiles the summary rows do not hold: read from the histograms the summary was built from


def _stats(values: dict[tuple[str, str], list[float]]) -> LLMStats:
    stats = LLMStats()
    for (scenario, endpoint), ttfts in values.items():
        for v in ttfts:
            stats.add(make_record(scenario=scenario, endpoint=endpoint, ttft_ms=v, e2e_ms=v * 2))
    return stats


def _judged(expr: str, stats: LLMStats, histograms: bool = True) -> dict[str, Any]:
    built = build_summary(stats, 10.0, None, {})
    (r,) = evaluate([parse(expr)], built, histograms=stats_histograms(stats) if histograms else None)
    json.dumps(r, allow_nan=False)
    return r


ONE_TO_10K = {("chat", "a"): [float(i) for i in range(1, 10_001)]}


@pytest.mark.parametrize(
    ("expr", "exact"),
    [("ttft p90 < 1s", 9000.0), ("ttft p99.9 < 1s", 9990.0), ("ttft p(75) < 1s", 7500.0), ("e2e p98.5 < 1s", 19700.0)],
)
def test_any_percentile_is_the_histograms_nearest_rank_within_its_precision(expr: str, exact: float) -> None:
    """1..10,000 ms: the nearest-rank pN is N % of 10,000; the histogram reports it within 1/1024, never between
    the summary's p95 and p99."""
    r = _judged(expr, _stats(ONE_TO_10K))
    assert abs(r["value"] - exact) <= exact * RELATIVE_ERROR, r
    assert r["passed"] is False and r["samples"] == 10_000 and "from the histogram" in r["reason"]


def test_a_percentile_the_rows_hold_is_read_from_the_row_as_before() -> None:
    stats = _stats(ONE_TO_10K)
    r = _judged("ttft p95 < 10s", stats)
    assert r["value"] == build_summary(stats, 10.0, None, {})["total"]["latency_ms"]["ttft"]["p95"]
    assert "histogram" not in r["reason"] and r["passed"] is True


def test_a_histogram_percentile_on_a_tagged_row_and_the_worst_of_several() -> None:
    stats = _stats({("chat", "a"): [10.0] * 500, ("chat", "b"): [float(i) for i in range(1, 501)], ("x", "a"): [1.0]})
    one_row = _judged("ttft{endpoint=b} p90 < 400ms", stats)
    assert (one_row["passed"], one_row["samples"]) == (False, 500) and abs(one_row["value"] - 450) < 0.5
    worst = _judged("ttft{scenario=chat} p90 < 400ms", stats)
    assert (
        worst["passed"] is False
        and worst["value"] == one_row["value"]
        and "at chat @ b, the worst of 2" in (worst["reason"])
    )


def test_the_sample_rule_holds_for_histogram_percentiles() -> None:
    r = _judged("ttft p99.9 < 1s", _stats({("chat", "a"): [1.0] * 4999}))
    assert r["passed"] is None and r["reason"].startswith("only 4,999 requests for ttft p99.9: at least 5,000 needed")


def test_without_histograms_a_percentile_the_rows_lack_cannot_be_judged() -> None:
    r = _judged("ttft p90 < 1s", _stats(ONE_TO_10K), histograms=False)
    assert r["passed"] is None and r["value"] is None
    assert r["reason"] == "the summary holds no p90 of ttft and this evaluation has no histograms to read it from"


def test_side_latencies_take_any_percentile_from_their_histogram() -> None:
    stats = LLMStats()
    for i in range(1, 1001):
        stats.add(make_record(ttfb_ms=float(i), first_event_ms=float(i), ttft_ms=float(i), e2e_ms=float(i)))
    r = _judged("ttfb p99 < 2s", stats)
    assert r["passed"] is True and abs(r["value"] - 990.0) <= 990.0 * RELATIVE_ERROR
