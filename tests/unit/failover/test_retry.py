"""Retry waits (backoff with full jitter, Retry-After) and the retry budget's bound under a storm."""

from __future__ import annotations

import heapq
import math
import random
from email.utils import formatdate

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadlib.failover.retry import RetryBudget, RetryConfig, backoff_s, retry_after_s, wait_before_retry

NOW = 1_700_000_000.0
CFG = RetryConfig(max_attempts=4, backoff_base_s=0.1, backoff_max_s=2.0, retry_after_max_s=10.0)


class Clock:
    def __init__(self, t: float = 500.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


# -- backoff -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("attempt", "cap"), [(1, 0.1), (2, 0.2), (3, 0.4), (5, 1.6), (6, 2.0), (10_000, 2.0)])
def test_backoff_bounds(attempt: int, cap: float) -> None:
    rng = random.Random(7)
    draws = [backoff_s(attempt, CFG, rng) for _ in range(2000)]
    assert all(0.0 <= d < cap for d in draws)
    assert max(draws) > 0.99 * cap  # the cap is reached, not a lower one


def test_backoff_attempt_below_one_is_the_first() -> None:
    assert all(0.0 <= backoff_s(0, CFG, random.Random(s)) < 0.1 for s in range(100))


def test_backoff_is_full_jitter() -> None:
    """Uniform over [0, cap): every tenth of the range gets its share (5 sigma of a binomial), mean cap / 2."""
    n, cap = 20_000, 0.4
    rng = random.Random(12345)
    draws = [backoff_s(3, CFG, rng) for _ in range(n)]
    sigma_mean = cap / math.sqrt(12 * n)
    assert abs(sum(draws) / n - cap / 2) < 5 * sigma_mean
    counts = [0] * 10
    for d in draws:
        counts[int(d / cap * 10)] += 1
    sigma = math.sqrt(n * 0.1 * 0.9)
    assert all(abs(c - n / 10) < 5 * sigma for c in counts)


def test_backoff_same_seed_same_draws() -> None:
    a, b = random.Random(3), random.Random(3)
    assert [backoff_s(2, CFG, a) for _ in range(5)] == [backoff_s(2, CFG, b) for _ in range(5)]


# -- Retry-After ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "2.5"}, 2.5),
        ({"retry-after": "0"}, 0.0),
        ({"retry-after": "-4"}, 0.0),
        ({"retry-after": formatdate(NOW + 30, usegmt=True)}, 30.0),
        ({"retry-after": formatdate(NOW + 30)}, 30.0),  # "-0000": a date without a zone, taken as UTC
        ({"retry-after": formatdate(NOW - 60, usegmt=True)}, 0.0),  # in the past
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "250.5", "retry-after": "9"}, 0.2505),  # the ms header wins
        ({"retry-after-ms": "-20"}, 0.0),
        ({"retry-after-ms": "soon", "retry-after": "4"}, 4.0),  # an unparseable ms header does not hide the other
        ({"retry-after": "soon"}, None),
        ({"retry-after": ""}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "Mon, 99 Foo 2024 99:99:99 GMT"}, None),
        ({"x-ratelimit-reset": "5"}, None),
        ({}, None),
    ],
)
def test_retry_after(headers: dict[str, str], expected: float | None) -> None:
    got = retry_after_s(headers, NOW)
    assert got == (pytest.approx(expected) if expected is not None else None)


def test_wait_honours_retry_after() -> None:
    assert wait_before_retry(1, {"retry-after": "3"}, CFG, random.Random(1), NOW) == 3.0
    assert wait_before_retry(1, {"retry-after-ms": "0"}, CFG, random.Random(1), NOW) == 0.0


def test_wait_caps_retry_after() -> None:
    assert wait_before_retry(1, {"retry-after": "120"}, CFG, random.Random(1), NOW) == CFG.retry_after_max_s
    date = formatdate(NOW + 3600, usegmt=True)
    assert wait_before_retry(1, {"retry-after": date}, CFG, random.Random(1), NOW) == CFG.retry_after_max_s


@pytest.mark.parametrize("headers", [{}, {"retry-after": "garbage"}, {"content-type": "application/json"}])
def test_wait_without_retry_after_is_the_backoff(headers: dict[str, str]) -> None:
    assert wait_before_retry(3, headers, CFG, random.Random(9), NOW) == backoff_s(3, CFG, random.Random(9))


# -- budget --------------------------------------------------------------------------------------------------------


def test_budget_refuses_without_requests_and_counts() -> None:
    clock = Clock()
    budget = RetryBudget(0.2, 10.0, clock)
    assert not budget.try_spend()
    for _ in range(10):
        budget.request()
    assert budget.try_spend() and budget.try_spend()
    assert not budget.try_spend()
    assert budget.snapshot() == {"requests": 10, "spent": 2, "refused": 2}


def test_budget_window_slides() -> None:
    clock = Clock(0.0)
    budget = RetryBudget(0.5, 10.0, clock)
    for _ in range(4):
        budget.request()
    assert budget.try_spend() and budget.try_spend() and not budget.try_spend()
    clock.t = 9.99  # still in the ring (the current bucket and the nine before it)
    assert not budget.try_spend()
    clock.t = 10.0  # both the requests and the spends left together: nothing to spend on
    assert not budget.try_spend()
    budget.request()
    budget.request()
    assert budget.try_spend() and not budget.try_spend()


def test_budget_ratio_zero_never_spends() -> None:
    budget = RetryBudget(0.0, 10.0, Clock())
    for _ in range(1000):
        budget.request()
    assert not budget.try_spend()


def _storm(ratio: float, seed: int, rate_per_s: float, duration_s: float, window_s: float = 10.0) -> list[tuple]:
    """A 429 storm: every attempt fails and every request retries (backoff waits) until max_attempts or a refusal.
    Returns the event log (time, "request" | "spend" | "refused", request id), in time order."""
    rng = random.Random(seed)
    clock = Clock(0.0)
    budget = RetryBudget(ratio, window_s, clock)
    cfg = RetryConfig(max_attempts=5, backoff_base_s=0.2, backoff_max_s=3.0)
    queue: list[tuple[float, int, int]] = []  # (time, request id, attempt that just failed)
    t, rid = 0.0, 0
    while t < duration_s:
        t += rng.expovariate(rate_per_s)
        heapq.heappush(queue, (t, rid, 0))
        rid += 1
    log: list[tuple] = []
    while queue:
        clock.t, r, failed = heapq.heappop(queue)
        if failed == 0:
            budget.request()
            log.append((clock.t, "request", r))
        elif budget.try_spend():
            log.append((clock.t, "spend", r))
        else:
            log.append((clock.t, "refused", r))
            continue
        if failed + 1 < cfg.max_attempts:
            heapq.heappush(queue, (clock.t + backoff_s(failed + 1, cfg, rng), r, failed + 1))
    assert budget.snapshot()["requests"] == rid
    return log


@pytest.mark.parametrize(("ratio", "seed", "rate"), [(0.2, 1, 200.0), (0.1, 2, 50.0), (0.5, 3, 500.0), (1.0, 4, 30.0)])
def test_budget_bound_under_a_429_storm(ratio: float, seed: int, rate: float) -> None:
    """Documented bound: at every instant, spent <= ratio x requests (attempts per user-visible request <= 1 + ratio),
    over a storm of 12 windows, with no slack for the buckets (only float rounding)."""
    log = _storm(ratio, seed, rate, duration_s=120.0)
    requests = spent = 0
    for _, kind, _ in log:
        requests += kind == "request"
        spent += kind == "spend"
        assert spent <= ratio * requests + 1e-9
    attempts = requests + spent
    assert attempts / requests <= 1 + ratio + 1e-9
    assert attempts / requests > 1 + 0.9 * ratio  # the budget is used, not merely respected


def test_budget_bound_over_any_stretch() -> None:
    """Documented bound: spent in [a, b] <= ratio x requests in [a - window_s, b]; a burst leans on at most one
    window of earlier requests (here after a quiet spell, the retries of the last requests before it)."""
    ratio, window = 0.2, 10.0
    log = _storm(ratio, 5, 100.0, duration_s=40.0, window_s=window)
    times_req = [t for t, kind, _ in log if kind == "request"]
    times_spend = [t for t, kind, _ in log if kind == "spend"]
    rng = random.Random(6)
    for _ in range(300):
        a = rng.uniform(0, 45)
        b = a + rng.uniform(0, 15)
        spent = sum(a <= t <= b for t in times_spend)
        earned = sum(a - window <= t <= b for t in times_req)
        assert spent <= ratio * earned + 1e-9


def test_budget_bound_burst_then_silence() -> None:
    """All requests in one instant, retries long after: the spends still stop at ratio x requests."""
    clock = Clock(0.0)
    budget = RetryBudget(0.25, 10.0, clock)
    for _ in range(100):
        budget.request()
    spent = 0
    for step in range(400):
        clock.t = step * 0.05
        spent += budget.try_spend()
    assert spent == 25


@settings(max_examples=300, deadline=None)
@given(
    ratio=st.sampled_from([0.05, 0.2, 0.25, 0.5, 1.0, 2.0]),
    events=st.lists(st.tuples(st.floats(0.0, 4.0), st.booleans(), st.integers(1, 20)), max_size=200),
)
def test_budget_bound_for_any_schedule(ratio: float, events: list[tuple[float, bool, int]]) -> None:
    """Whatever the timing (bucket edges included), spent <= ratio x requests at every instant, and over any
    stretch of the log spent([a, b]) <= ratio x requests([a - window_s, b])."""
    clock = Clock(0.0)
    budget = RetryBudget(ratio, 10.0, clock)
    log: list[tuple[float, bool]] = []  # (time, is a request) for requests and granted spends
    for dt, is_request, n in events:
        clock.t += dt
        for _ in range(n):
            if is_request:
                budget.request()
                log.append((clock.t, True))
            elif budget.try_spend():
                log.append((clock.t, False))
        snap = budget.snapshot()
        assert snap["spent"] <= ratio * snap["requests"] + 1e-9
    for i, (a, _) in enumerate(log):
        spent = sum(not is_req for _, is_req in log[i:])
        earned = sum(is_req for t, is_req in log if t >= a - 10.0)
        assert spent <= ratio * earned + 1e-9
