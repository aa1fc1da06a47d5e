"""CircuitBreaker: both triggers, the cool-down, probing, stale permits and the transitions it reports."""

from __future__ import annotations

import pytest

from loadlib.errors import ErrorClass
from loadlib.failover.breaker import BreakerConfig, CircuitBreaker, State, Transition, Window

E = ErrorClass


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def make(**kw: float) -> tuple[CircuitBreaker, Clock, list[Transition]]:
    clock = Clock()
    seen: list[Transition] = []
    return CircuitBreaker("primary", BreakerConfig(**kw), clock, seen.append), clock, seen  # type: ignore[arg-type]


def call(b: CircuitBreaker, status: ErrorClass) -> int:
    permit = b.admit()
    assert permit is not None
    b.record(permit, status)
    return permit


def open_it(b: CircuitBreaker) -> None:
    for _ in range(b.config.failures):
        call(b, E.HTTP_5XX)
    assert b.state is State.OPEN


def test_opens_on_consecutive_5xx() -> None:
    b, clock, seen = make(failures=5, failure_rate=0)
    for _ in range(4):
        call(b, E.HTTP_5XX)
    assert b.state is State.CLOSED
    call(b, E.HTTP_5XX)
    assert b.state is State.OPEN
    assert b.admit() is None
    assert seen == [Transition("primary", State.CLOSED, State.OPEN, clock.t, "5 consecutive failures (http_5xx)")]


@pytest.mark.parametrize("answer", [E.SCHEMA_INVALID, E.CONTEXT_LENGTH_EXCEEDED, E.OK, E.HTTP_4XX, E.CANCELLED])
def test_an_answer_is_a_success_and_resets_the_streak(answer: ErrorClass) -> None:
    b, _, seen = make(failures=3, failure_rate=0.5, min_calls=1)
    for _ in range(50):
        call(b, answer)
    assert b.state is State.CLOSED and not seen
    call(b, E.HTTP_5XX)
    call(b, E.TIMEOUT_TTFT)
    call(b, answer)
    call(b, E.HTTP_5XX)
    call(b, E.HTTP_5XX)
    assert b.state is State.CLOSED
    assert b.snapshot()["consecutive_failures"] == 2


def test_rate_trigger_waits_for_min_calls() -> None:
    b, _, seen = make(failures=0, failure_rate=0.5, window_s=10, min_calls=20)
    for i in range(19):  # 100% failures, but fewer than min_calls
        call(b, E.HTTP_5XX if i % 2 else E.CONNECT_ERROR)
    assert b.state is State.CLOSED
    call(b, E.HTTP_5XX)
    assert b.state is State.OPEN
    assert seen[-1].reason == "failure rate 100% over 10 s (20 calls)"


def test_rate_trigger_threshold_and_reason() -> None:
    b, _, seen = make(failures=0, failure_rate=0.6, window_s=10, min_calls=10)
    for status in [E.OK] * 5 + [E.HTTP_5XX] * 7:  # 5/10 < 60%, 6/11 = 55%, 7/12 = 58%
        call(b, status)
    assert b.state is State.CLOSED
    call(b, E.HTTP_5XX)  # 8/13 = 61.5%
    assert b.state is State.OPEN
    assert seen[-1].reason == "failure rate 62% over 10 s (13 calls)"


def test_rate_window_forgets_old_results() -> None:
    b, clock, _ = make(failures=0, failure_rate=0.5, window_s=10, min_calls=4)
    for _ in range(3):
        call(b, E.HTTP_5XX)
    clock.t += 10.0  # the three failures left the window
    for _ in range(3):
        call(b, E.OK)
    call(b, E.HTTP_5XX)  # 1 of 4 in the window
    assert b.state is State.CLOSED
    snap = b.snapshot()
    assert (snap["window_calls"], snap["window_failures"]) == (4, 1)


def test_window_precision_between_nine_and_ten_tenths() -> None:
    w = Window(10.0)
    w.add(100.0, True)  # the start of a bucket: counts for exactly 9.x..10 s
    w.advance(109.99)
    assert w.calls == 1
    w.advance(110.0)
    assert w.calls == 0
    w = Window(10.0)
    w.add(100.99, True)  # the end of a bucket: counts for just over 9 s
    w.advance(109.999)
    assert w.calls == 1
    w.advance(110.0)
    assert (w.calls, w.failures) == (0, 0)


def test_window_long_idle_clears_everything() -> None:
    w = Window(10.0)
    for t in range(10):
        w.add(100.0 + t, t % 2 == 0)
    assert (w.calls, w.failures) == (10, 5)
    w.advance(1e9)
    assert (w.calls, w.failures) == (0, 0)


def test_cooldown_then_half_open() -> None:
    b, clock, seen = make(cooldown_s=5)
    open_it(b)
    clock.t += 4.99
    assert b.admit() is None and b.state is State.OPEN
    clock.t += 0.01
    assert b.state is State.HALF_OPEN
    assert seen[-1] == Transition("primary", State.OPEN, State.HALF_OPEN, clock.t, "cool-down of 5 s over")


def test_half_open_admits_exactly_probes() -> None:
    b, clock, seen = make(cooldown_s=5, probes=2)
    open_it(b)
    clock.t += 5
    first, second = b.admit(), b.admit()
    assert first is not None and second is not None
    assert b.admit() is None  # the third waits for the probes' results
    b.record(first, E.OK)
    assert b.admit() is None and b.state is State.HALF_OPEN
    b.record(second, E.SCHEMA_INVALID)
    assert b.state is State.CLOSED
    assert seen[-1].reason == "2 probes succeeded"
    assert b.snapshot()["consecutive_failures"] == 0 and b.snapshot()["window_calls"] == 0


def test_one_probe_reason_is_singular() -> None:
    b, clock, seen = make(cooldown_s=1, probes=1)
    open_it(b)
    clock.t += 1
    call(b, E.OK)
    assert seen[-1].reason == "1 probe succeeded" and b.state is State.CLOSED


def test_failed_probe_reopens_with_a_fresh_cooldown() -> None:
    b, clock, seen = make(cooldown_s=5, probes=2)
    open_it(b)
    clock.t += 5
    probe, other = b.admit(), b.admit()
    assert probe is not None and other is not None
    clock.t += 3
    b.record(probe, E.CONNECT_ERROR)
    reopened_at = clock.t
    assert b.state is State.OPEN
    assert seen[-1] == Transition("primary", State.HALF_OPEN, State.OPEN, reopened_at, "probe failed (connect_error)")
    b.record(other, E.OK)  # the other probe was admitted in the half-open generation: ignored now
    clock.t = reopened_at + 4.9  # 7.9 s after the first opening, only 4.9 s after the second
    assert b.admit() is None
    clock.t = reopened_at + 5
    assert b.admit() is not None and b.state is State.HALF_OPEN
    assert b.snapshot()["opened"] == 2


def test_stale_permits_are_ignored() -> None:
    b, clock, _ = make(failures=3, cooldown_s=5, probes=1)
    in_flight = [b.admit() for _ in range(10)]
    open_it(b)
    for p in in_flight:  # calls admitted while closed return while open: nothing changes
        assert p is not None
        b.record(p, E.HTTP_5XX)
    assert b.snapshot()["opened"] == 1
    clock.t += 5
    probe = b.admit()
    assert probe is not None
    for p in in_flight:  # ... nor while half-open: their failures must not re-open it
        b.record(p, E.HTTP_5XX)  # type: ignore[arg-type]
    assert b.state is State.HALF_OPEN
    b.record(probe, E.OK)
    assert b.state is State.CLOSED
    for p in in_flight:  # ... nor once closed again
        b.record(p, E.HTTP_5XX)  # type: ignore[arg-type]
    assert b.snapshot()["consecutive_failures"] == 0


def test_every_transition_bumps_the_generation() -> None:
    b, clock, seen = make(failures=1, cooldown_s=1)
    permits = [call(b, E.HTTP_5XX)]
    clock.t += 1
    permits.append(call(b, E.OK))
    permits.append(call(b, E.OK))
    assert permits == [0, 2, 3]  # opened: 1, half-open: 2 (the probe), closed: 3
    assert [(t.old, t.new) for t in seen] == [
        (State.CLOSED, State.OPEN),
        (State.OPEN, State.HALF_OPEN),
        (State.HALF_OPEN, State.CLOSED),
    ]


def test_callback_sees_the_new_state() -> None:
    clock = Clock()
    states: list[State] = []
    b = CircuitBreaker("x", BreakerConfig(failures=1), clock, lambda t: states.append(b.state))
    call(b, E.TIMEOUT_IDLE)
    assert states == [State.OPEN]


def test_both_triggers_off_never_opens() -> None:
    b, _, seen = make(failures=0, failure_rate=0)
    for _ in range(1000):
        call(b, E.HTTP_5XX)
    assert b.state is State.CLOSED and not seen


def test_custom_counted_set() -> None:
    clock = Clock()
    b = CircuitBreaker("x", BreakerConfig(failures=2, counted=frozenset({E.SCHEMA_INVALID})), clock)
    call(b, E.HTTP_5XX)
    call(b, E.HTTP_5XX)
    assert b.state is State.CLOSED
    call(b, E.SCHEMA_INVALID)
    call(b, E.SCHEMA_INVALID)
    assert b.state is State.OPEN


def test_release_frees_a_probe_slot_without_counting() -> None:
    b, clock, _ = make(cooldown_s=1, probes=1)
    open_it(b)
    clock.t += 1
    probe = b.admit()
    assert probe is not None and b.admit() is None
    b.release(probe)
    assert b.state is State.HALF_OPEN
    again = b.admit()
    assert again is not None
    b.record(again, E.OK)
    assert b.state is State.CLOSED


def test_snapshot() -> None:
    b, clock, _ = make(failures=5, failure_rate=0.5, min_calls=100)
    since = clock.t
    call(b, E.OK)
    call(b, E.HTTP_5XX)
    call(b, E.RATE_LIMITED)
    assert b.snapshot() == {
        "state": "closed",
        "since": since,
        "consecutive_failures": 2,
        "window_calls": 3,
        "window_failures": 2,
        "opened": 0,
    }
