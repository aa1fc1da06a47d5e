"""The answer key: the largest closed-loop user count and open-loop rate at which the step model keeps latency
bounds, found by simulating the model itself (`sim`), so a capacity search run against the mock can be checked.

A level passes when every bound holds: the q-quantile of TTFT, TPOT or E2E over the measured requests, as their
client measures them (`sim.seen_ms`: the workload's link both ways), is at most the bound. Closed loop: each user
sends `rounds` requests back to back, the users' first requests spread over one request's time alone; each user's
first request is left out. Open loop: `requests` Poisson arrivals (seeded), the
first tenth left out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from loadlib.mock.engine.params import EngineParams
from loadlib.mock.engine.seq import Seq
from loadlib.mock.engine.sim import METRICS, Workload, closed_loop, open_loop, poisson_arrivals, quantile, seen_ms

MAX_USERS = 2048
RATE_PRECISION = 0.005  # relative width at which the rate search stops
STEADY_ARRIVALS = 20_000  # the rate's run: long enough that its queue near saturation reaches its steady state
COARSE = 50  # the first, coarse rate search runs 1/COARSE of the arrivals, one seed
BRACKET = 1.15  # the fine search starts from the coarse answer / and x this
SEEDS = 4  # a level's arrivals come in this many seeded runs


@dataclass(frozen=True, slots=True)
class Bound:
    """`metric` (ttft, tpot, e2e) at quantile `q` must be at most `ms`."""

    metric: str
    q: float
    ms: float

    def holds(self, seqs: list[Seq], workload: Workload) -> bool:
        return quantile([seen_ms(self.metric, s, workload) for s in seqs], self.q) <= self.ms


def parse_bound(key: str, value: str) -> Bound | None:
    """`ttft_p95_ms=800` -> Bound("ttft", 0.95, 800.0); None for a key of another shape."""
    parts = key.split("_")
    if len(parts) != 3 or parts[0] not in METRICS or parts[2] != "ms" or not parts[1][1:].isdigit():
        return None
    if parts[1][0] != "p":
        return None
    return Bound(parts[0], int(parts[1][1:]) / 100.0, float(value))


def closed_level(params: EngineParams, workload: Workload, users: int, rounds: int) -> list[Seq]:
    """The measured requests of a closed-loop level: all but each user's first."""
    done = closed_loop(params, workload, users, rounds)
    return sorted(done, key=lambda s: s.arrival)[users:]


def open_level(params: EngineParams, workload: Workload, rate: float, requests: int, seed: int) -> list[Seq]:
    done = open_loop(params, workload, poisson_arrivals(requests, rate, seed))
    return sorted(done, key=lambda s: s.arrival)[requests // 10 :]


def _largest(passes: Callable[[int], bool], limit: int) -> int:
    """Largest n in 1..limit with passes(n), assuming passing levels form a prefix: doubling, then bisection."""
    if not passes(1):
        return 0
    good, bad = 1, None
    while bad is None and good < limit:
        probe = min(good * 2, limit)
        if passes(probe):
            good = probe
        else:
            bad = probe
    if bad is None:
        return good
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if passes(mid) else (good, mid)
    return good


def max_users(params: EngineParams, workload: Workload, bounds: list[Bound], rounds: int = 6) -> int:
    """The largest closed-loop user count whose measured requests keep every bound (0: not even one user)."""

    def passes(users: int) -> bool:
        level = closed_level(params, workload, users, rounds)
        return all(b.holds(level, workload) for b in bounds)

    return _largest(passes, MAX_USERS)


def _bracket(passes: Callable[[float], bool], guess: float, factor: float) -> tuple[float, float]:
    """A passing and a failing rate around `guess`, stepping out by `factor` until they are found."""
    low, high = guess / factor, guess * factor
    while not passes(low):
        low, high = low / factor, low
        if low < 1e-3:
            return 0.0, high
    while passes(high):
        low, high = high, high * factor
        if high > 1e6:
            return low, low
    return low, high


def _bisect(passes: Callable[[float], bool], low: float, high: float) -> float:
    while high - low > RATE_PRECISION * high and high > 1e-3:
        mid = (low + high) / 2
        low, high = (mid, high) if passes(mid) else (low, mid)
    return low


def _coarse_rate(passes: Callable[[float], bool]) -> float:
    """Doubling from 1/s, then bisection: the first guess."""
    low, high = 0.0, 1.0
    while passes(high):
        low, high = high, high * 2
        if high > 1e6:
            return low
    return _bisect(passes, low, high) or high / 2


def max_rate(
    params: EngineParams, workload: Workload, bounds: list[Bound], requests: int = STEADY_ARRIVALS, seed: int = 0
) -> float:
    """The largest Poisson rate (requests/s) that keeps every bound, to RATE_PRECISION; 0 when none does. A level is
    `requests` arrivals in SEEDS runs (seeds `seed`, `seed` + 1, ...), each run's first tenth left out, the bounds
    checked on the measured requests of all of them.

    Coarse then fine: doubling and bisection on one run of `requests // COARSE` arrivals (cheap, but a short run of a
    queue near saturation lands some percent either side of its steady state), then the full level only around that
    guess (a bracket widened until it holds one passing and one failing rate), bisected."""

    def passes_with(n: int, seeds: int) -> Callable[[float], bool]:
        def passes(rate: float) -> bool:
            level = [s for k in range(seeds) for s in open_level(params, workload, rate, n, seed + k)]
            return all(b.holds(level, workload) for b in bounds)

        return passes

    guess = _coarse_rate(passes_with(max(requests // COARSE, 100), 1))
    fine = passes_with(max(requests // SEEDS, 100), SEEDS)
    return _bisect(fine, *_bracket(fine, guess, BRACKET))
