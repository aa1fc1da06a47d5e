"""Outlier detection beyond failures (docs/failover.md, "Outlier detection"): slow calls, cool-downs that grow with
each opening in a row, the share of the pool open at once, success-rate ejection relative to the other endpoints,
and the forced-open and disabled modes for maintenance."""

from __future__ import annotations

import random

from loadlib.errors import ErrorClass
from loadlib.failover.breaker import BreakerConfig, CircuitBreaker, State, Transition
from loadlib.failover.dispatch import Attempt, Dispatcher, Handle
from loadlib.failover.pool import EndpointSpec, PoolConfig
from loadlib.failover.retry import RetryConfig
from tests.unit.failover.test_breaker import Clock

E = ErrorClass


def breaker(mode: str = "normal", **kw: float) -> tuple[CircuitBreaker, Clock, list[Transition]]:
    clock, seen = Clock(), []
    cfg = BreakerConfig(**kw)  # type: ignore[arg-type]
    return CircuitBreaker("primary", cfg, clock, seen.append, mode), clock, seen


def call(b: CircuitBreaker, status: ErrorClass = E.OK, ttft_s: float | None = 0.1) -> None:
    permit = b.admit()
    assert permit is not None
    b.record(permit, status, ttft_s)


def test_a_slow_call_rate_opens_the_breaker_of_an_endpoint_that_never_fails() -> None:
    b, _, seen = breaker(failures=0, failure_rate=0, slow_call_s=1.0, slow_call_rate=0.5, min_calls=4)
    for ttft in (0.2, 1.5, 0.3):
        call(b, ttft_s=ttft)
    assert b.state is State.CLOSED
    call(b, ttft_s=2.0)  # 2 slow of 4
    assert b.state is State.OPEN and seen[-1].reason == "slow calls 50% over 10 s (TTFT > 1 s)"


def test_a_slow_probe_opens_it_again() -> None:
    b, clock, seen = breaker(failures=1, slow_call_s=1.0, slow_call_rate=0.5, cooldown_s=5)
    call(b, E.HTTP_5XX)
    clock.t += 5
    call(b, ttft_s=3.0)
    assert b.state is State.OPEN and seen[-1].reason == "probe slow"


def test_each_opening_in_a_row_cools_down_longer_up_to_the_maximum() -> None:
    b, clock, _ = breaker(failures=1, cooldown_s=2, max_cooldown_s=5)
    waits = []
    call(b, E.HTTP_5XX)
    for _ in range(4):  # the probe fails each time
        opened = clock.t
        while b.state is State.OPEN:
            clock.t += 0.5
        waits.append(clock.t - opened)
        call(b, E.HTTP_5XX)
    assert waits == [2.0, 4.0, 5.0, 5.0]
    clock.t += 5
    call(b)  # the probe answers: closed
    clock.t += 5  # closed for max_cooldown_s: the next opening starts from one cool-down again
    call(b, E.HTTP_5XX)
    opened = clock.t
    while b.state is State.OPEN:
        clock.t += 0.5
    assert clock.t - opened == 2.0


def test_forced_open_sends_nothing_and_disabled_never_opens() -> None:
    forced, _, _ = breaker("forced_open")
    assert forced.admit() is None
    disabled, _, seen = breaker("disabled", failures=1)
    for _ in range(10):
        call(disabled, E.HTTP_5XX)
    assert disabled.state is State.CLOSED and not seen


def pool(names: tuple[str, ...], modes: dict[str, str] | None = None, **breaker_kw: float) -> PoolConfig:
    specs = tuple(
        EndpointSpec(name=n, base_url=f"http://127.0.0.1:9/{n}", breaker_mode=(modes or {}).get(n, "normal"))
        for n in names
    )
    cfg = BreakerConfig(**breaker_kw)  # type: ignore[arg-type]
    return PoolConfig(endpoints=specs, policy="weighted", breaker=cfg, retry=RetryConfig(max_attempts=1))


def failing(bad: dict[str, float], rng: random.Random):  # type: ignore[no-untyped-def]
    """Each endpoint fails with its share in `bad` (0 when absent)."""

    def attempt(name: str, number: int, hedge: bool, handle: Handle | None) -> Attempt:
        status = E.HTTP_5XX if rng.random() < bad.get(name, 0.0) else E.OK
        return Attempt(name, number, status, 0.0, 10.0 if status is E.OK else None, 20.0)

    return attempt


def test_an_endpoint_far_below_the_others_success_rate_is_ejected() -> None:
    """Four endpoints, one failing 40 %: it never trips a 50 % failure rate, but its success rate lies far under
    the others'; the healthy ones, with a few failures each, stay."""
    clock, rng = Clock(), random.Random(3)
    cfg = {"failures": 0, "failure_rate": 0.5, "min_calls": 20, "success_rate_stdev": 1.5}
    d = Dispatcher(pool(("a", "b", "c", "d"), **cfg), rng=rng, clock=clock)
    attempt = failing({"d": 0.4, "a": 0.02, "b": 0.02, "c": 0.02}, rng)
    for _ in range(400):
        clock.t += 0.005
        d.send(attempt, lambda _: None)
    states = {n: b.state for n, b in d.breakers.items()}
    assert states == {"a": State.CLOSED, "b": State.CLOSED, "c": State.CLOSED, "d": State.OPEN}, states


def test_no_more_than_the_max_open_share_of_the_pool_opens() -> None:
    clock, rng = Clock(), random.Random(1)
    d = Dispatcher(pool(("a", "b", "c", "d"), failures=2, max_open_share=0.5), rng=rng, clock=clock)
    for _ in range(200):
        d.send(failing({"a": 1.0, "b": 1.0, "c": 1.0}, rng), lambda _: None)
    opened = [n for n, b in d.breakers.items() if b.state is State.OPEN]
    assert len(opened) == 2 and "d" not in opened
    assert sum(b.held_closed for b in d.breakers.values()) > 0


def test_a_forced_open_endpoint_gets_no_request() -> None:
    rng = random.Random(2)
    d = Dispatcher(pool(("a", "b"), modes={"a": "forced_open"}), rng=rng)
    sent = [d.send(failing({}, rng), lambda _: None).endpoint for _ in range(50)]
    assert set(sent) == {"b"}
