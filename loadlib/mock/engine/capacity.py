"""The answer key: the largest closed-loop user count and open-loop rate at which the step model keeps latency
bounds, found by simulating the model itself (`sim`), so a capacity search run against the mock can be checked.

A level passes when every bound holds: the q-quantile of TTFT, TPOT or E2E over the measured requests, as their
client measures them (`sim.seen_ms`: the workload's link both ways), is at most the bound. Closed loop: each user
sends `rounds` requests back to back, the users' first requests spread over one request's time alone; each user's
first request is left out. Open loop: one run of seeded Poisson arrivals, its first tenth left out; the key's rate is
the steady state, a run of thousands of arrivals (`steady_arrivals`: a short run of a queue near saturation lands
above it, 400 arrivals 10-20 % above), found cheaply: a coarse search on short runs, then the long run only near its
answer, each run stopped as soon as its requests already break a bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from loadlib.gcpause import no_cyclic_gc
from loadlib.mock.engine.params import EngineParams
from loadlib.mock.engine.seq import Seq
from loadlib.mock.engine.sim import METRICS, Workload, closed_loop, open_loop, poisson_arrivals, quantile, seen_ms

MAX_USERS = 2048
RATE_PRECISION = 0.01  # relative width at which the rate search stops
# A level of the rate key: one seeded run of STEADY_TOKENS / output tokens arrivals (what a run costs is about its
# output tokens: a step per token of each request), within STEADY_ARRIVALS. One long run, not several short ones: a
# short run of a queue near saturation has not built its steady queue yet and holds a higher rate.
STEADY_TOKENS = 640_000
STEADY_ARRIVALS = (3000, 20_000)
COARSE_ARRIVALS = 400  # the first guess's level: one run
COARSE_PRECISION = 0.05
BRACKET = 1.06  # the steady level is tried at the guess / and x this, stepping out until it holds and fails


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
    with no_cyclic_gc():  # a simulation's thousands of live sequences: half its time scanned for no cycle
        return _largest(
            lambda n: all(b.holds(closed_level(params, workload, n, rounds), workload) for b in bounds), MAX_USERS
        )


class _Broken(Exception):
    """A run's requests already break a bound: the rest cannot mend it."""


def rate_holds(
    params: EngineParams, workload: Workload, bounds: list[Bound], rate: float, requests: int, seed: int = 0
) -> bool:
    """Whether `open_level` at `rate` keeps every bound. The same verdict as taking the quantiles at the end, but a
    bound's q-quantile is over it exactly when more than (measured - ceil(q x measured)) requests are, so the
    simulation stops at the request that makes them too many: a level past the capacity costs part of its run."""
    skip = requests // 10  # the arrivals' first tenth, rids 0 to skip - 1
    measured = requests - skip
    allowed = [measured - max(1, math.ceil(b.q * measured)) for b in bounds]
    over = [0] * len(bounds)

    def finished(seq: Seq) -> None:
        if seq.rid < skip:
            return
        for i, b in enumerate(bounds):
            if seen_ms(b.metric, seq, workload) > b.ms:
                over[i] += 1
                if over[i] > allowed[i]:
                    raise _Broken

    try:
        open_loop(params, workload, poisson_arrivals(requests, rate, seed), finished)
    except _Broken:
        return False
    return True


def _bisect(passes: Callable[[float], bool], low: float, high: float, precision: float) -> float:
    while high - low > precision * high and high > 1e-3:
        mid = (low + high) / 2
        low, high = (mid, high) if passes(mid) else (low, mid)
    return low


def _doubling(passes: Callable[[float], bool], precision: float) -> float:
    """Doubling from 1/s, then bisection to `precision`: the largest passing rate (0: not even ~1e-3/s)."""
    low, high = 0.0, 1.0
    while passes(high):
        low, high = high, high * 2
        if high > 1e6:
            return low
    return _bisect(passes, low, high, precision)


def _bracket(passes: Callable[[float], bool], guess: float) -> tuple[float, float]:
    """A passing and a failing rate around `guess`, stepping out by BRACKET until both are found."""
    low, high = guess / BRACKET, guess * BRACKET
    while not passes(low):
        low, high = low / BRACKET, low
        if low < 1e-3:
            return 0.0, high
    while passes(high):
        low, high = high, high * BRACKET
        if high > 1e6:
            return low, low
    return low, high


def steady_arrivals(workload: Workload) -> int:
    """The arrivals of a steady level for `workload`: as many as STEADY_TOKENS output tokens, within STEADY_ARRIVALS."""
    low, high = STEADY_ARRIVALS
    return min(high, max(low, STEADY_TOKENS // max(1, workload.output_tokens)))


def max_rate(
    params: EngineParams, workload: Workload, bounds: list[Bound], requests: int | None = None, seed: int = 0
) -> float:
    """The largest Poisson rate (requests/s) at which a run of `requests` arrivals (default `steady_arrivals`, seeded
    with `seed`) keeps every bound, to RATE_PRECISION; 0 when none does. A coarse guess first (one run of
    COARSE_ARRIVALS, doubled and bisected to COARSE_PRECISION), then the full run only around it: bracketed, bisected
    (most of the time is the passing runs: a failing one stops early)."""

    def passes(n: int) -> Callable[[float], bool]:
        seen: dict[float, bool] = {}  # the bracket's last rate is tried again by its next loop

        def holds(rate: float) -> bool:
            if rate not in seen:
                seen[rate] = rate_holds(params, workload, bounds, rate, n, seed)
            return seen[rate]

        return holds

    requests = steady_arrivals(workload) if requests is None else requests
    with no_cyclic_gc():
        if requests <= COARSE_ARRIVALS:  # a short level is its own guess
            return _doubling(passes(requests), RATE_PRECISION)
        guess = _doubling(passes(COARSE_ARRIVALS), COARSE_PRECISION)
        if guess == 0.0:  # not even a request at a time
            return 0.0
        fine = passes(requests)
        return _bisect(fine, *_bracket(fine, guess), RATE_PRECISION)
