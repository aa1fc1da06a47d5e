"""The web UI's chart series (loadlib/metrics/timeline.py): buckets, the live point, coarsening, resets. A master's
merge of the workers' slices by bucket time is in test_timeline_merge.py."""

from __future__ import annotations

from typing import Any

import pytest

from loadlib.errors import ErrorClass
from loadlib.metrics.stats import LLMStats
from loadlib.metrics.timeline import Point, Timeline, coarsen, merge_points
from tests.support.records import make_record


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def rec(**kw: Any):
    return make_record(**{"ttft_ms": 100.0, "tpot_ms": 10.0, "completion_tokens": 20, **kw})


def test_records_fall_into_two_second_buckets_and_the_open_one_is_live() -> None:
    clock = Clock(1000.5)
    tl = Timeline(lambda: 7, clock=clock)
    tl.add_record(rec(ttft_ms=100.0))
    tl.add_record(rec(ttft_ms=300.0, status=ErrorClass.RATE_LIMITED))
    clock.t = 1002.1
    tl.add_record(rec(ttft_ms=200.0))
    clock.t = 1003.1
    feed = tl.feed()
    total = feed["series"]["Aggregated"]
    assert feed["step_s"] == 2.0 and total["t"] == [1000.0, 1002.0]
    assert total["requests"] == [2, 1] and total["ok"] == [1, 1]
    assert total["errors"] == {"rate_limited": [1, 0]}
    assert total["ttft_p50"][1] == pytest.approx(200.0, rel=1e-3)
    # the run started at 1000.5: its first bucket's rate is over the 1.5 s it covered; the live one is over its age
    assert total["tokens_per_s"] == [pytest.approx(40 / 1.5, rel=1e-3), pytest.approx(20 / 1.1, rel=1e-3)]
    assert total["users"] == [7, 7]
    assert set(feed["series"]) == {"Aggregated", "chat @ mock"}


def test_a_just_opened_bucket_shows_no_rate_until_half_a_step_old() -> None:
    """Polled 0.1 s into a bucket, tokens/s over its age would read 0 (or one request's tokens as a spike) while
    tokens flow steadily: the live rate is null, so the chart ends at the last closed point and so does the legend;
    its counts still add up."""
    clock = Clock(1000.2)
    tl = Timeline(clock=clock)
    tl.add_record(rec())
    clock.t = 1001.6
    tl.add_record(rec())
    clock.t = 1002.1
    total = tl.feed()["series"]["Aggregated"]
    assert total["tokens_per_s"] == [pytest.approx(40 / 1.8, rel=1e-3), None] and total["requests"] == [2, 0]
    clock.t = 1002.9
    tl.add_record(rec())
    clock.t = 1003.0
    rates = tl.feed()["series"]["Aggregated"]["tokens_per_s"]
    assert rates == [pytest.approx(40 / 1.8, rel=1e-3), pytest.approx(20 / 1.0)]


def test_a_steady_rate_reads_the_same_in_the_run_s_first_bucket_and_after_coarsening() -> None:
    """A run that starts 1.5 s into a bucket and ends 20 tokens every 0.1 s (200 tokens/s): its first point read
    50 tokens/s when divided by the whole 2 s step; it reads 200, also once coarsening has merged its points."""
    clock = Clock(1000.5)
    tl = Timeline(clock=clock, max_points=4)
    first = None
    for i in range(200):
        clock.t = 1000.55 + i * 0.1
        tl.add_record(rec())
        if i == 20:
            first = tl.feed()["series"]["Aggregated"]["tokens_per_s"][0]
    clock.t = 1020.5 + 1e-9
    rates = tl.feed()["series"]["Aggregated"]["tokens_per_s"]
    assert first == pytest.approx(200.0, rel=1e-3)
    assert tl.step > 2.0 and all(r == pytest.approx(200.0, rel=0.02) for r in rates[:-1]), rates


def test_the_points_add_up_to_the_statistics() -> None:
    clock = Clock(0.0)
    tl, stats = Timeline(clock=clock), LLMStats()
    for i in range(50):
        clock.t = i * 0.7
        r = rec(status=ErrorClass.OK if i % 5 else ErrorClass.HTTP_5XX)
        tl.add_record(r)
        stats.add(r)
    total = tl.feed()["series"]["Aggregated"]
    assert sum(total["requests"]) == stats.total.requests == 50
    assert sum(total["errors"]["http_5xx"]) == stats.total.errors["http_5xx"]
    assert sum(total["completion_tokens"]) == stats.total.completion_tokens_total


def test_memory_is_bounded_by_coarsening() -> None:
    clock = Clock(0.0)
    tl = Timeline(clock=clock, max_points=10)
    for i in range(100):
        clock.t = i * 2.0
        tl.add_record(rec())
    feed = tl.feed()
    total = feed["series"]["Aggregated"]
    assert len(total["t"]) <= 11 and feed["step_s"] >= 16.0
    assert sum(total["requests"]) == 100, "coarsening keeps every count"


def test_merge_weights_percentiles_by_successes() -> None:
    a = Point(0.0, 2.0, 4, 3, 10, {"http_5xx": 1}, ttft_p50=100.0)
    b = Point(2.0, 2.0, 1, 1, 5, {}, ttft_p50=200.0, users=3)
    m = merge_points(a, b, 0.0, 4.0)
    assert (m.requests, m.ok, m.completion_tokens, m.errors, m.users) == (5, 4, 15, {"http_5xx": 1}, 3)
    assert m.ttft_p50 == pytest.approx(125.0)
    assert [p.t for p in coarsen([a, b, Point(4.0, 2.0, 1, 1, 1)], 2.0)] == [0.0, 4.0]


def test_reset_starts_again_from_nothing() -> None:
    clock = Clock(10.0)
    tl = Timeline(clock=clock)
    tl.add_record(rec())
    clock.t = 13.0
    tl.add_record(rec())
    tl.reset()
    series = tl.feed()["series"]
    assert list(series) == ["Aggregated"] and series["Aggregated"]["requests"] == [0], "only the live, empty point"
