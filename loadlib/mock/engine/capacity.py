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
RATE_PRECISION = 0.01  # relative width at which the rate search stops


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
    return _largest(
        lambda n: all(b.holds(closed_level(params, workload, n, rounds), workload) for b in bounds), MAX_USERS
    )


def max_rate(
    params: EngineParams, workload: Workload, bounds: list[Bound], requests: int = 400, seed: int = 0
) -> float:
    """The largest Poisson rate (requests/s) that keeps every bound, to RATE_PRECISION; 0 when none does."""

    def passes(rate: float) -> bool:
        return all(b.holds(open_level(params, workload, rate, requests, seed), workload) for b in bounds)

    low, high = 0.0, 1.0
    while passes(high):
        low, high = high, high * 2
        if high > 1e6:
            return low
    while high - low > RATE_PRECISION * high and high > 1e-3:
        mid = (low + high) / 2
        low, high = (mid, high) if passes(mid) else (low, mid)
    return low
