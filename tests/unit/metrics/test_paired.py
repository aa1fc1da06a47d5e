"""Intervals of paired sums (loadlib.metrics.paired) against brute force: Student's t quantiles against published
values, and the coverage of the intervals over 1,000 simulated runs of 50 pairs whose true ratio and difference are
known; the amplification block's intervals merged from two workers' halves equal those of all pairs counted at once."""

from __future__ import annotations

import random

import msgpack
import pytest

from loadlib.metrics import amplification
from loadlib.metrics.paired import mean_interval, ratio_interval, t_quantile
from loadlib.metrics.scenarios import ScenarioResults
from tests.unit.metrics.test_amplification import rec

RUNS, PAIRS, LEVEL = 1000, 50, 0.95
TRUE_RATIO, TRUE_DIFF = 2.11, 40.0


@pytest.mark.parametrize(
    ("df", "p", "want"),
    [
        (1, 0.975, 12.7062),
        (2, 0.975, 4.3027),
        (3, 0.975, 3.1824),
        (5, 0.995, 4.0321),
        (10, 0.975, 2.2281),
        (49, 0.975, 2.0096),
        (99, 0.975, 1.9842),
        (100, 0.975, 1.9840),
        (1000, 0.975, 1.9623),
        (30, 0.95, 1.6973),
    ],
)
def test_t_quantiles_match_the_tables(df: int, p: float, want: float) -> None:
    assert t_quantile(p, df) == pytest.approx(want, abs=1e-4)


def simulated_pairs(rng: random.Random) -> list[tuple[int, int]]:
    """(JSON, prose) output tokens: prose ~ N(100, 25), JSON = 2.11 x prose + N(0, 30): the mean ratio is 2.11."""
    out = []
    for _ in range(PAIRS):
        plain = max(1, round(rng.gauss(100, 25)))
        out.append((round(TRUE_RATIO * plain + rng.gauss(0, 30)), plain))
    return out


def test_the_ratio_interval_covers_the_true_ratio_at_its_level() -> None:
    rng, covered = random.Random(26), 0
    for _ in range(RUNS):
        xy = simulated_pairs(rng)
        sums = (sum(x for x, _ in xy), sum(y for _, y in xy), sum(x * x for x, _ in xy), sum(y * y for _, y in xy))
        ci = ratio_interval(PAIRS, *sums, sum(x * y for x, y in xy), level=LEVEL)
        assert ci is not None and ci[0] <= sums[0] / sums[1] <= ci[1]
        covered += ci[0] <= TRUE_RATIO <= ci[1]
    assert 0.93 <= covered / RUNS <= 0.97, covered  # 95 % ± 3 binomial standard errors (0.7 % each)


def test_the_difference_interval_covers_the_true_difference_at_its_level() -> None:
    rng, covered = random.Random(27), 0
    for _ in range(RUNS):
        d = [round(rng.expovariate(1 / TRUE_DIFF) * 1000) for _ in range(PAIRS)]  # skewed, microseconds
        ci = mean_interval(PAIRS, sum(d), sum(v * v for v in d), LEVEL)
        assert ci is not None
        covered += ci[0] <= TRUE_DIFF * 1000 <= ci[1]
    assert 0.92 <= covered / RUNS <= 0.97, covered  # the t interval is a little short on a skewed law at n = 50


def test_undefined_and_unbounded_intervals_are_none() -> None:
    assert ratio_interval(1, 2, 1, 4, 1, 2, LEVEL) is None and mean_interval(1, 5, 25, LEVEL) is None
    # denominators 1 and -1 + 2 ... mean 0.5, far from significantly above 0 with 3 pairs: Fieller is unbounded
    assert ratio_interval(3, 3, 1, 5, 11, 1, LEVEL) is None
    assert ratio_interval(2, 422, 200, 2 * 211**2, 2 * 100**2, 2 * 21100, LEVEL) == pytest.approx((2.11, 2.11))


def test_merged_halves_give_the_interval_of_all_pairs_counted_at_once() -> None:
    rng = random.Random(28)
    pairs = [
        (rec(x, x * 2e-6 + 1e-4, rng.uniform(50, 90), rng.uniform(900, 2000)), rec(y, y * 2e-6 + 1e-4, 50.0, 800.0))
        for x, y in simulated_pairs(rng)
    ]
    one, halves, master = ScenarioResults(), (ScenarioResults(), ScenarioResults()), ScenarioResults()
    for i, (structured, plain) in enumerate(pairs):
        amplification.pair(one, 3, structured, plain)
        amplification.pair(halves[i % 2], 3, structured, plain)
    for node in halves:
        master.merge_serialized(msgpack.unpackb(msgpack.packb(node.serialize())))  # as a worker ships it
    got = amplification.summarize(master, 0.9)
    assert got == amplification.summarize(one, 0.9)
    assert got is not None and all(got[k] is not None for k in ("output_tokens_ratio_ci", "cost_ratio_ci"))
    assert got["e2e_diff_ms_ci"][0] < got["e2e_diff_ms"] < got["e2e_diff_ms_ci"][1]


def test_a_sum_beyond_64_bits_ships_exactly() -> None:
    r, master = ScenarioResults(), ScenarioResults()
    amplification.pair(r, 1, rec(100, 9.0, 6e7, 6e7), rec(100, 1.0, 1.0, 1.0))  # $9 squared in nano-dollars > 2^64
    master.merge_serialized(msgpack.unpackb(msgpack.packb(r.serialize())))
    assert master.counts == r.counts
