"""Percentile thresholds judged by their confidence interval (--llm-threshold-ci): pass only with the whole interval
within the limit, fail only with it beyond, else not judged with the requests still needed; and the verdict it makes."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from loadlib.metrics.confidence import quantile_interval, requests_needed_from_interval
from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary
from loadlib.verdicts.evaluate import evaluate, stats_histograms
from loadlib.verdicts.thresholds import parse
from loadlib.verdicts.verdict import verdict
from tests.support.records import make_record


def run(n: int, seed: int = 1, endpoints: tuple[str, ...] = ("mock",)) -> LLMStats:
    """n requests per endpoint with TTFT uniform on 100..300 ms: the true p95 is 290 ms."""
    rng = random.Random(seed)
    stats = LLMStats()
    for endpoint in endpoints:
        for _ in range(n):
            v = rng.uniform(100.0, 300.0)
            stats.add(make_record(endpoint=endpoint, ttft_ms=v, e2e_ms=v * 2))
    return stats


def judge(stats: LLMStats, expr: str, histograms: bool = True) -> dict[str, Any]:
    summary = build_summary(stats, 10.0, None, {})
    source = stats_histograms(stats) if histograms else None
    (r,) = evaluate([parse(expr)], json.loads(json.dumps(summary)), histograms=source, confidence=0.95)
    return dict(r)


def test_a_limit_inside_the_interval_is_not_judged_with_the_requests_still_needed() -> None:
    stats = run(300)
    ci = quantile_interval(stats.total.ttft_ms, 95)
    assert ci is not None and ci.low is not None and ci.high is not None
    limit = (ci.low + ci.high) / 2
    r = judge(stats, f"ttft p95 < {limit}ms")
    assert r["passed"] is None
    assert r["interval"] == ci.as_list()
    assert r["reason"].startswith("ttft p95 = ") and "interval" in r["reason"]
    assert r["more_requests"] is not None and r["more_requests"] > 0
    assert r["reason"].endswith(f"about {r['more_requests']:,} more requests needed to judge it")
    outcome = verdict([r], {"total": {"count": 300}, "duration_s": 10.0})
    assert outcome is not None and (outcome["status"], outcome["exit_code"]) == ("invalid", 3)


def test_whole_interval_within_passes_and_beyond_fails_whatever_the_point_says() -> None:
    stats = run(300)
    ci = quantile_interval(stats.total.ttft_ms, 95)
    assert ci is not None and ci.low is not None and ci.high is not None
    assert judge(stats, f"ttft p95 < {ci.high + 1}ms")["passed"] is True
    assert judge(stats, f"ttft p95 < {ci.low - 1}ms")["passed"] is False
    assert judge(stats, f"ttft p95 > {ci.low - 1}ms")["passed"] is True
    assert judge(stats, f"ttft p95 > {ci.high + 1}ms")["passed"] is False
    point = judge(stats, f"ttft p95 < {ci.high + 1}ms")["value"]
    assert point is not None and ci.low <= point <= ci.high


def test_the_estimate_is_about_right_more_requests_decide_it() -> None:
    """The limit 5 % above the true p95's share: once the run has the estimated number of requests, it is decided
    (in most seeds: the estimate is "about")."""
    decided = 0
    for seed in range(10):
        stats = run(200, seed)
        r = judge(stats, "ttft p95 < 296ms")  # the true p95 is 290 ms; 296 ms is the 98th percentile
        if r["passed"] is not None:
            continue
        more = r["more_requests"]
        assert more is not None and 0 < more < 20_000
        decided += judge(run(200 + more, seed + 100), "ttft p95 < 296ms")["passed"] is not None
    assert decided >= 6


def test_from_the_summary_alone_the_interval_is_the_summarys() -> None:
    stats = run(300)
    summary = build_summary(stats, 10.0, None, {})
    ci: Any = summary["total"]["latency_ms"]["ttft"]["p95_ci"]
    limit = (ci[0] + ci[1]) / 2
    r = judge(stats, f"ttft p95 < {limit}ms", histograms=False)
    assert r["interval"] == ci and r["passed"] is None and r["more_requests"]


def test_several_rows_each_judged_by_its_own_interval() -> None:
    stats = run(300, endpoints=("a", "b"))
    stats.add(make_record(scenario="other", endpoint="a", ttft_ms=5000.0, e2e_ms=9000.0))
    r = judge(stats, "ttft{scenario=chat} p95 < 1000ms")
    assert r["passed"] is True and "worst of 2 matching rows" in r["reason"]
    r = judge(stats, "ttft{scenario=chat} p95 < 50ms")
    assert r["passed"] is False


def test_without_the_option_nothing_changes() -> None:
    stats = run(300)
    summary = build_summary(stats, 10.0, None, {})
    (r,) = evaluate([parse("ttft p95 < 289ms")], summary, histograms=stats_histograms(stats))
    assert "interval" not in r and r["passed"] is not None


@pytest.mark.parametrize(
    ("value", "interval", "limit", "want"),
    [
        (100.0, [90.0, 110.0], 105.0, 3),  # half the upper side: 4x the requests, 3 more
        (100.0, [90.0, 110.0], 95.0, 3),
        (100.0, [90.0, None], 105.0, None),
        (100.0, [90.0, 110.0], 100.0, None),
    ],
)
def test_requests_needed_from_the_interval(value: float, interval: list[float | None], limit: float, want: Any) -> None:
    assert requests_needed_from_interval(1, value, interval, limit) == want
