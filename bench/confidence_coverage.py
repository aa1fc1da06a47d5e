"""How often the percentiles' 95 % confidence intervals contain the true percentile (issue 28's acceptance: 93-97 %).

For each distribution (light-tailed: normal; heavy-tailed: Pareto with alpha 1.5, infinite variance; two-mode: 70 %
around 150 ms, 30 % around 600 ms), each run size (100, 1,000, 10,000 requests) and each of p50, p95, p99: TRIALS
simulated runs, each split between two "workers" whose histograms go through to_dict/from_dict and are merged as the
master merges them, and the interval is computed from the merged histogram (loadlib.metrics.confidence). Printed:
the share of runs whose interval contains the true percentile (with its binomial standard error), the exact coverage
the ranks promise for a continuous distribution, the mean width relative to the true value, and how many intervals
had an unbounded side. It also checks that every merged interval equals the one of the same samples in one histogram.

A cell whose intervals all have an unbounded side (p99 of 100 requests: no sample bounds it from above at 95 %) is
one-sided, and its coverage is what the smallest lower rank with at least 95 % gives (98.2 %): no rank does better.

Run: /work/venv/bin/python bench/confidence_coverage.py [TRIALS [SEED]]   (default 1,000 and 28; about a minute)
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from statistics import NormalDist

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loadlib.histogram import Histogram
from loadlib.metrics.confidence import QuantileInterval, quantile_interval, rank_interval

SIZES = (100, 1_000, 10_000)
PERCENTILES = (50, 95, 99)
LEVEL = 0.95
SEED = 28

Sampler = Callable[[np.random.Generator, int], np.ndarray]
LIGHT = NormalDist(200.0, 20.0)
MODES = ((0.7, NormalDist(150.0, 10.0)), (0.3, NormalDist(600.0, 40.0)))
PARETO_ALPHA, PARETO_SCALE = 1.5, 100.0


def light(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.abs(rng.normal(LIGHT.mean, LIGHT.stdev, n))  # |x|: a negative is 10 sd away, never drawn


def heavy(rng: np.random.Generator, n: int) -> np.ndarray:
    return PARETO_SCALE * (1.0 + rng.pareto(PARETO_ALPHA, n))


def two_modes(rng: np.random.Generator, n: int) -> np.ndarray:
    first = rng.random(n) < MODES[0][0]
    a = rng.normal(MODES[0][1].mean, MODES[0][1].stdev, n)
    b = rng.normal(MODES[1][1].mean, MODES[1][1].stdev, n)
    return np.abs(np.where(first, a, b))


def true_quantile(name: str, q: float) -> float:
    if name == "light":
        return LIGHT.inv_cdf(q)
    if name == "heavy":
        return PARETO_SCALE * (1.0 - q) ** (-1.0 / PARETO_ALPHA)
    lo, hi = 0.0, 2000.0
    for _ in range(100):  # bisect the mixture's CDF
        mid = (lo + hi) / 2
        if sum(w * d.cdf(mid) for w, d in MODES) < q:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


DISTRIBUTIONS: dict[str, Sampler] = {"light": light, "heavy": heavy, "two-mode": two_modes}


def merged(values: list[float]) -> tuple[Histogram, Histogram]:
    """(two workers' histograms merged through their wire form, one histogram of all the values)."""
    half = len(values) // 2
    master, pooled = Histogram(), Histogram()
    for part in (values[:half], values[half:]):
        worker = Histogram()
        worker.record_many(part)
        master.merge(Histogram.from_dict(worker.to_dict()))
    pooled.record_many(values)
    return master, pooled


def contains(ci: QuantileInterval, truth: float) -> bool:
    return (ci.low is None or ci.low <= truth) and (ci.high is None or truth <= ci.high)


def cell(name: str, n: int, trials: int, rng: np.random.Generator) -> dict[int, tuple[int, float, int]]:
    """{p: (runs covering the truth, summed relative width, runs with an unbounded side)}."""
    out = {p: (0, 0.0, 0) for p in PERCENTILES}
    truths = {p: true_quantile(name, p / 100) for p in PERCENTILES}
    for _ in range(trials):
        master, pooled = merged(DISTRIBUTIONS[name](rng, n).tolist())
        for p in PERCENTILES:
            ci = quantile_interval(master, p, LEVEL)
            assert ci is not None and ci == quantile_interval(pooled, p, LEVEL), "merge changed the interval"
            hit, width, open_ = out[p]
            bounded = ci.low is not None and ci.high is not None
            rel = (ci.high - ci.low) / truths[p] if ci.low is not None and ci.high is not None else 0.0
            out[p] = (hit + contains(ci, truths[p]), width + rel, open_ + (not bounded))
    return out


def main() -> None:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000
    rng = np.random.default_rng(int(sys.argv[2]) if len(sys.argv) > 2 else SEED)
    print(f"{LEVEL:.0%} intervals, {trials:,} runs per cell, 2 workers merged per run; target coverage 93-97 %")
    print(f"{'distribution':<13}{'n':>7}{'pct':>5}{'coverage':>10}{'± se':>7}{'exact':>8}{'width':>9}{'unbounded':>11}")
    inside = total = 0
    for name in DISTRIBUTIONS:
        for n in SIZES:
            for p, (hit, width, open_) in cell(name, n, trials, rng).items():
                share = hit / trials
                se = math.sqrt(share * (1 - share) / trials)
                exact = rank_interval(n, p / 100, LEVEL)[2]
                bounded = trials - open_
                mean_width = f"{width / bounded:.1%}" if bounded else "-"
                flag = "" if 0.93 <= share <= 0.97 else "  outside 93-97 %"
                if open_ == trials:
                    flag = "  one-sided (no upper bound at this n)"
                else:
                    inside += not flag
                    total += 1
                print(
                    f"{name:<13}{n:>7,}{'p' + str(p):>5}{share:>10.1%}{se:>7.1%}{exact:>8.1%}{mean_width:>9}"
                    f"{open_:>11,}{flag}"
                )
    print(f"{inside} of {total} two-sided cells within 93-97 %; every merged interval equal to the pooled one")


if __name__ == "__main__":
    main()
