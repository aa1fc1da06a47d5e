"""Percentile confidence intervals: exact binomial ranks, histogram values, coverage by a small simulation."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from fractions import Fraction

import pytest

from loadlib.histogram import RELATIVE_ERROR, Histogram
from loadlib.metrics.confidence import (
    binomial_cdf,
    more_requests_needed,
    quantile_interval,
    rank_interval,
    requests_needed,
    side_of,
)


def exact_cdf(k: int, n: int, q: Fraction) -> Fraction:
    return sum((math.comb(n, j) * q**j * (1 - q) ** (n - j) for j in range(k + 1)), Fraction(0))


@pytest.mark.parametrize(("n", "q"), [(1, "0.5"), (7, "0.3"), (40, "0.95"), (100, "0.99"), (250, "0.5")])
def test_binomial_cdf_is_exact(n: int, q: str) -> None:
    for k in range(-1, n + 1):
        assert binomial_cdf(k, n, float(q)) == pytest.approx(float(exact_cdf(k, n, Fraction(q))), abs=1e-13)


@pytest.mark.parametrize("n", [1, 5, 20, 100, 999, 10_000, 1_000_000])
@pytest.mark.parametrize("q", [0.5, 0.95, 0.99])
def test_ranks_cover_at_least_the_level_and_not_much_more_once_there_is_room(n: int, q: float) -> None:
    low, high, coverage = rank_interval(n, q, 0.95)
    assert 0 <= low < high <= n + 1
    assert coverage == pytest.approx(binomial_cdf(high - 1, n, q) - binomial_cdf(low - 1, n, q))
    assert coverage >= 0.95 - 1e-12
    if n * q * (1 - q) >= 20:  # enough ranks that discreteness costs little
        assert coverage < 0.96
        assert low <= math.ceil(q * n) <= high


def test_a_p99_of_100_requests_has_no_upper_bound() -> None:
    low, high, _ = rank_interval(100, 0.99)
    assert (low, high) == (97, 101)
    h = Histogram()
    h.record_many([float(v) for v in range(1, 101)])
    interval = quantile_interval(h, 99)
    assert interval is not None and interval.high is None and interval.low is not None
    assert interval.as_list() == [round(interval.low, 3), None]


def test_the_ends_are_the_exact_order_statistics_within_the_histogram_precision() -> None:
    rng = random.Random(3)
    values = [rng.lognormvariate(5, 0.6) for _ in range(2000)]
    h = Histogram()
    h.record_many(values)
    s = sorted(values)
    for p in (50, 95, 99):
        interval = quantile_interval(h, p)
        assert interval is not None and interval.low is not None and interval.high is not None
        assert interval.low == pytest.approx(s[interval.low_rank - 1], rel=2 * RELATIVE_ERROR)
        assert interval.high == pytest.approx(s[interval.high_rank - 1], rel=2 * RELATIVE_ERROR)
        assert interval.low <= (h.percentile(p) or 0) <= interval.high


def test_merged_workers_give_the_interval_of_all_samples_pooled() -> None:
    rng = random.Random(5)
    parts = [[rng.expovariate(1 / 200) for _ in range(n)] for n in (700, 1300)]
    merged, pooled = Histogram(), Histogram()
    for part in parts:
        worker = Histogram()
        worker.record_many(part)
        merged.merge(Histogram.from_dict(worker.to_dict()))
        pooled.record_many(part)
    assert all(quantile_interval(merged, p) == quantile_interval(pooled, p) for p in (50, 95, 99))


def test_empty_histogram_has_no_interval() -> None:
    assert quantile_interval(Histogram(), 95) is None


@pytest.mark.parametrize(
    ("dist", "truth"),
    [
        (lambda r: r.expovariate(1.0), -math.log(0.05)),  # p95 of Exp(1)
        (lambda r: r.paretovariate(1.5), 0.05 ** (-1 / 1.5)),  # p95 of Pareto(1.5): heavy tail
        (lambda r: r.uniform(100, 110) if r.random() < 0.9 else r.uniform(500, 600), 550.0),  # two modes: p95 at 550
    ],
    ids=["light", "heavy", "two-mode"],
)
def test_coverage_by_simulation_is_near_the_level(dist: Callable[[random.Random], float], truth: float) -> None:
    """400 runs of 200 requests: the coverage is binomial around the stated one, so 3 sd is a test that can fail."""
    rng = random.Random(11)
    trials, hits = 400, 0
    for _ in range(trials):
        h = Histogram()
        h.record_many([dist(rng) for _ in range(200)])
        interval = quantile_interval(h, 95)
        assert interval is not None
        hits += side_of(interval, truth) == "undecided"
    _, _, coverage = rank_interval(200, 0.95)
    assert coverage >= 0.95
    sd = math.sqrt(coverage * (1 - coverage) / trials)
    assert abs(hits / trials - coverage) <= 3 * sd + 1 / trials, (hits / trials, coverage)


def test_side_of_a_limit() -> None:
    assert side_of([10.0, 20.0], 25.0) == "below"
    assert side_of([10.0, 20.0], 5.0) == "above"
    assert side_of([10.0, 20.0], 15.0) == "undecided"
    assert side_of([10.0, None], 25.0) == "undecided"
    assert side_of(None, 25.0) == "undecided"


def test_requests_needed_shrinks_as_the_share_moves_away_from_the_quantile() -> None:
    far, near = requests_needed(100, 99, 0.95), requests_needed(100, 96, 0.95)
    assert far is not None and near is not None and 100 <= far < near
    assert requests_needed(100, 95, 0.95) is None
    low, high, _ = rank_interval(near, 0.95)
    assert high <= 0.96 * near or low > 0.96 * near


def test_more_requests_needed_is_zero_once_decided_and_positive_before() -> None:
    h = Histogram()
    h.record_many([float(v) for v in range(1, 1001)])
    assert more_requests_needed(h, 95, 2000.0) == 0
    more = more_requests_needed(h, 95, 960.0)
    assert more is not None and more > 0
    assert more_requests_needed(Histogram(), 95, 960.0) is None
