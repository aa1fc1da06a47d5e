"""The dispatcher's loop of one user-visible request, with attempt functions that stand in for the transport: which
endpoint each attempt goes to, when a retry may follow and how long it waits, the budget under a 429 storm, the
breakers it feeds, and hedging's winner and loser."""

from __future__ import annotations

import gevent
import gevent.event

import random
import time
from collections.abc import Callable
from typing import Any

import pytest

from loadlib.errors import ErrorClass
from loadlib.failover.breaker import BreakerConfig, State
from loadlib.failover.dispatch import Attempt, Dispatcher, Handle
from loadlib.failover.pool import EndpointSpec, PoolConfig
from loadlib.failover.retry import RetryConfig

OK, E503, E429 = ErrorClass.OK, ErrorClass.HTTP_5XX, ErrorClass.RATE_LIMITED


def pool(*names: str, **kw: Any) -> PoolConfig:
    specs = tuple(EndpointSpec(name=n, base_url=f"http://127.0.0.1:9/{n}", priority=i + 1) for i, n in enumerate(names))
    return PoolConfig(endpoints=specs, **kw)


def scripted(outcomes: dict[str, list[ErrorClass]], ttft: float | None = None) -> tuple[Callable, list[Attempt]]:
    """An attempt function answering each endpoint's attempts from its script (the last entry repeats)."""
    sent: list[Attempt] = []

    def attempt(name: str, number: int, hedge: bool, handle: Handle | None) -> Attempt:
        script = outcomes[name]
        status = script.pop(0) if len(script) > 1 else script[0]
        done = Attempt(name, number, status, time.perf_counter(), ttft if status is OK else None, 5.0, hedge=hedge)
        sent.append(done)
        return done

    return attempt, sent


def no_sleep(waits: list[float]) -> Callable[[float], None]:
    return waits.append


def test_a_pool_of_one_without_retries_is_one_attempt() -> None:
    d = Dispatcher(pool("only"), rng=random.Random(1))
    attempt, sent = scripted({"only": [E503]})
    delivery = d.send(attempt, no_sleep([]))
    assert len(sent) == 1 and delivery.status is E503 and delivery.preferred == "only"


def test_a_failed_attempt_is_retried_on_the_next_endpoint_at_once() -> None:
    d = Dispatcher(pool("primary", "secondary", retry=RetryConfig(max_attempts=3, budget=1.0)), rng=random.Random(1))
    attempt, sent = scripted({"primary": [E503], "secondary": [OK]}, ttft=10.0)
    waits: list[float] = []
    delivery = d.send(attempt, no_sleep(waits))
    assert [a.endpoint for a in sent] == ["primary", "secondary"] and waits == []
    assert delivery.ok and not delivery.hedged_won and delivery.endpoint == "secondary"


def test_no_retry_once_output_reached_the_user() -> None:
    d = Dispatcher(pool("primary", "secondary", retry=RetryConfig(max_attempts=3, budget=1.0)))

    def broken_after_tokens(name: str, number: int, hedge: bool, handle: Handle | None) -> Attempt:
        return Attempt(name, number, ErrorClass.STREAM_BROKEN, time.perf_counter(), ttft_ms=12.0, e2e_ms=40.0)

    delivery = d.send(broken_after_tokens, no_sleep([]))
    assert len(delivery.attempts) == 1 and delivery.status is ErrorClass.STREAM_BROKEN


def test_a_not_retryable_class_is_not_retried() -> None:
    d = Dispatcher(pool("primary", "secondary", retry=RetryConfig(max_attempts=3, budget=1.0)))
    attempt, sent = scripted({"primary": [ErrorClass.SCHEMA_INVALID], "secondary": [OK]})
    assert d.send(attempt, no_sleep([])).status is ErrorClass.SCHEMA_INVALID and len(sent) == 1


def test_retry_after_is_honoured_on_the_same_endpoint() -> None:
    """The wait before retrying the endpoint whose 429 asked for 0.3 s (retry-after-ms over retry-after), given to
    the injected sleep: what a real run waits is the failover integration tests' (test_failover_retry_after)."""
    d = Dispatcher(pool("only", retry=RetryConfig(max_attempts=2, budget=1.0, retry_after_max_s=5)))

    def attempt(name: str, number: int, hedge: bool, handle: Handle | None) -> Attempt:
        status = E429 if number == 1 else OK
        done = Attempt(name, number, status, time.perf_counter(), 5.0 if status is OK else None, 6.0)
        done.headers = {"retry-after": "1", "retry-after-ms": "300"}
        return done

    waits: list[float] = []
    assert d.send(attempt, no_sleep(waits)).ok
    assert len(waits) == 1 and 0.29 <= waits[0] <= 0.306, waits  # 0.3 s from the answer's end (6 ms after t0)


def limited(status: ErrorClass, asked_ms: str | None) -> Callable:
    """Attempts that fail with `status`, the primary's asking for `asked_ms` (Retry-After), the secondary's not."""

    def attempt(name: str, number: int, hedge: bool, handle: Handle | None) -> Attempt:
        done = Attempt(name, number, status, time.perf_counter(), None, 1.0)
        if name == "primary" and asked_ms is not None:
            done.headers = {"retry-after-ms": asked_ms}
        return done

    return attempt


def test_each_endpoint_s_own_retry_after_decides_the_wait_before_it_is_tried_again() -> None:
    """The primary asks for 300 ms, the secondary fails in between without asking: the retry to the primary still
    waits for what the primary asked (less the time since its answer), not for a backoff after the secondary's."""
    cfg = RetryConfig(max_attempts=3, budget=2.0, backoff_base_s=0.01, backoff_max_s=0.02)
    d = Dispatcher(pool("primary", "secondary", retry=cfg), rng=random.Random(1))
    waits: list[float] = []
    delivery = d.send(limited(E429, "300"), no_sleep(waits))
    assert [a.endpoint for a in delivery.attempts] == ["primary", "secondary", "primary"]
    assert len(waits) == 1 and 0.29 <= waits[0] <= 0.301, waits


def test_retry_after_cooldown_keeps_new_requests_off_the_endpoint_until_its_wait_is_over() -> None:
    now = [100.0]
    cfg = RetryConfig(max_attempts=1, budget=1.0, retry_after_cooldown=True)
    never_open = BreakerConfig(failures=0, failure_rate=0)
    d = Dispatcher(pool("primary", "secondary", retry=cfg, breaker=never_open), clock=lambda: now[0])
    first = d.send(limited(E429, "2000"), no_sleep([]))
    assert first.endpoint == "primary" and d.cooling == {"primary": 102.0}
    now[0] = 101.9
    assert d.send(limited(OK, None), no_sleep([])).endpoint == "secondary"
    now[0] = 102.0
    assert d.send(limited(OK, None), no_sleep([])).endpoint == "primary"


def test_under_a_429_storm_attempts_per_request_stay_within_one_plus_the_budget() -> None:
    budget = 0.2
    never_open = BreakerConfig(failures=0, failure_rate=0)  # the breakers would end the storm by themselves
    retry = RetryConfig(max_attempts=5, budget=budget)
    d = Dispatcher(pool("a", "b", retry=retry, breaker=never_open), rng=random.Random(3))
    attempt, sent = scripted({"a": [E429], "b": [E429]})
    requests = 2000
    for _ in range(requests):
        d.send(attempt, no_sleep([]))
    assert len(sent) <= requests * (1 + budget)
    assert len(sent) > requests * (1 + budget * 0.9)  # the budget is used, not just respected


def test_the_breaker_opens_on_5xx_and_routes_around_but_not_on_schema_invalid() -> None:
    cfg = BreakerConfig(failures=3, failure_rate=0, cooldown_s=60)
    d = Dispatcher(pool("primary", "secondary", breaker=cfg))
    attempt, sent = scripted({"primary": [ErrorClass.SCHEMA_INVALID], "secondary": [OK]})
    for _ in range(5):
        d.send(attempt, no_sleep([]))
    assert d.breakers["primary"].state is State.CLOSED
    attempt, sent = scripted({"primary": [E503], "secondary": [OK]})
    for _ in range(5):
        d.send(attempt, no_sleep([]))
    assert d.breakers["primary"].state is State.OPEN
    assert [a.endpoint for a in sent] == ["primary"] * 3 + ["secondary"] * 2


def test_every_breaker_open_fails_the_request_unsent() -> None:
    cfg = BreakerConfig(failures=1, failure_rate=0, cooldown_s=60)
    d = Dispatcher(pool("only", breaker=cfg))
    attempt, sent = scripted({"only": [E503]})
    d.send(attempt, no_sleep([]))
    delivery = d.send(attempt, no_sleep([]))
    assert delivery.status is ErrorClass.CIRCUIT_OPEN and delivery.attempts == [] and len(sent) == 1


def test_half_open_lets_exactly_the_configured_probes_through() -> None:
    now = [0.0]
    cfg = BreakerConfig(failures=1, failure_rate=0, cooldown_s=5, probes=2)
    d = Dispatcher(pool("only", breaker=cfg), clock=lambda: now[0])
    attempt, _ = scripted({"only": [E503]})
    d.send(attempt, no_sleep([]))
    now[0] = 6.0
    permits = [d.admit("only") for _ in range(4)]
    assert [p is not None for p in permits] == [True, True, False, False]


@pytest.mark.parametrize("primary_ttft_s", [0.3])
def test_hedging_the_first_token_wins_and_the_loser_is_cancelled_but_counted(primary_ttft_s: float) -> None:
    """Real greenlets: the primary's first token would come after 300 ms, the hedge is sent after 50 ms and answers
    in 20 ms; the user's TTFT is the hedge's, the primary is cancelled and still an attempt."""
    d = Dispatcher(pool("primary", "secondary", hedge_after_ms=50.0, retry=RetryConfig(budget=1.0)))

    def attempt(name: str, number: int, hedge: bool, handle: Handle | None) -> Attempt:
        assert handle is not None
        t0 = time.perf_counter()
        delay = primary_ttft_s if name == "primary" else 0.02
        if handle.cancelled.wait(delay):
            return Attempt(name, number, ErrorClass.CANCELLED, t0, None, (time.perf_counter() - t0) * 1000, hedge=hedge)
        ttft = (time.perf_counter() - t0) * 1000
        handle.first_output()
        gevent.sleep(0.01)
        return Attempt(name, number, OK, t0, ttft, (time.perf_counter() - t0) * 1000, hedge=hedge)

    delivery = d.send(attempt)
    statuses = {a.endpoint: a.status for a in delivery.attempts}
    assert statuses == {"primary": ErrorClass.CANCELLED, "secondary": OK}
    assert delivery.endpoint == "secondary" and delivery.hedged and delivery.hedged_won
    assert d.hedges == 1 and d.hedges_won == 1
    assert 65 <= delivery.ttft_ms < 150, delivery.ttft_ms  # 50 ms hedge delay + 20 ms first token (+ scheduling)
    assert d.breakers["primary"].state is State.CLOSED


def test_with_hedging_the_latency_policy_leaves_an_endpoint_whose_attempts_always_lose() -> None:
    """The preferred endpoint got slow (first token after 1 s) and every hedge outruns it: its cancelled attempts
    never answer, yet their waits show the policy it is slower than the other, which it then prefers."""
    d = Dispatcher(pool("primary", "secondary", policy="latency", hedge_after_ms=100.0, retry=RetryConfig(budget=1.0)))
    d.router.ewma.update(primary=0.01, secondary=0.015)  # both measured fast before the slowdown

    def attempt(name: str, number: int, hedge: bool, handle: Handle | None) -> Attempt:
        assert handle is not None
        t0 = time.perf_counter()
        if handle.cancelled.wait(1.0 if name == "primary" else 0.02):
            return Attempt(name, number, ErrorClass.CANCELLED, t0, None, (time.perf_counter() - t0) * 1000, hedge=hedge)
        ttft = (time.perf_counter() - t0) * 1000
        handle.first_output()
        return Attempt(name, number, OK, t0, ttft, ttft + 1.0, hedge=hedge)

    d.router.rng = random.Random(3)  # no exploring draw in the first requests
    delivery = d.send(attempt)
    assert delivery.hedged_won and delivery.endpoint == "secondary"
    assert d.router.ewma["primary"] > d.router.ewma["secondary"]
    assert d.router.order()[0] == "secondary"


def test_with_hedging_a_fast_failure_is_retried_without_waiting_for_the_hedge_delay() -> None:
    d = Dispatcher(pool("primary", "secondary", hedge_after_ms=500.0, retry=RetryConfig(max_attempts=2, budget=1.0)))

    def attempt(name: str, number: int, hedge: bool, handle: Handle | None) -> Attempt:
        t0 = time.perf_counter()
        if name == "primary":
            return Attempt(name, number, E503, t0, None, 5.0)
        assert handle is not None
        handle.first_output()
        return Attempt(name, number, OK, t0, 5.0, 6.0)

    start = time.perf_counter()
    delivery = d.send(attempt)
    assert delivery.ok and delivery.endpoint == "secondary" and not delivery.hedged
    assert time.perf_counter() - start < 0.25  # far below the 500 ms hedge delay


def test_a_hedge_answering_after_the_primary_failed_did_not_win_a_race() -> None:
    """The primary fails (no output) after the hedge was sent: the hedge is simply awaited. Its answer is a failover
    (the preferred endpoint could not answer), not a hedge win."""
    d = Dispatcher(pool("primary", "secondary", hedge_after_ms=20.0, retry=RetryConfig(budget=1.0)))
    hedge_sent, primary_failed = gevent.event.Event(), gevent.event.Event()

    def attempt(name: str, number: int, hedge: bool, handle: Handle | None) -> Attempt:
        assert handle is not None
        t0 = time.perf_counter()
        if name == "primary":
            assert hedge_sent.wait(3.0)
            primary_failed.set()
            return Attempt(name, number, E503, t0, None, 40.0)
        hedge_sent.set()
        assert primary_failed.wait(3.0)
        handle.first_output()
        return Attempt(name, number, OK, t0, 60.0, 61.0, hedge=hedge)

    delivery = d.send(attempt)
    assert delivery.ok and delivery.hedged and not delivery.hedged_won and d.hedges_won == 0
    assert [a.status for a in delivery.attempts] == [E503, OK]


def race_until_killed(kill_at_first_output: bool) -> tuple[list[tuple[str, ErrorClass]], list[gevent.Greenlet]]:
    """A user whose greenlet is killed mid-race (Locust stopping it at the end of a run): the primary never answers,
    the hedge streams for 5 s. With `kill_at_first_output` the kill comes with the hedge's first token, before the
    user could cancel the loser; else while neither attempt has output. Like a real stream, an attempt ends as soon as
    it is cancelled, `cut_off` when its user was stopped. Returns the attempts that ran to their record and every
    attempt greenlet."""
    d = Dispatcher(pool("primary", "secondary", hedge_after_ms=20.0, retry=RetryConfig(budget=1.0)))
    recorded: list[tuple[str, ErrorClass]] = []
    spawned: list[gevent.Greenlet] = []
    user: list[gevent.Greenlet] = []
    both_running = gevent.event.Event()

    def attempt(name: str, number: int, hedge: bool, handle: Handle | None) -> Attempt:
        assert handle is not None
        spawned.append(gevent.getcurrent())
        t0 = time.perf_counter()
        if name == "secondary":
            both_running.set()
            if kill_at_first_output:
                handle.first_output()
                user[0].kill(block=False)
        status = ended(handle, 5.0)
        gevent.sleep(0)  # building the record yields, as the real one may
        recorded.append((name, status))
        return Attempt(name, number, status, t0, None, 1.0, hedge=hedge)

    user.append(gevent.spawn(d.send, attempt))
    if not kill_at_first_output:
        assert both_running.wait(3.0)
        user[0].kill(block=False)
    user[0].join(timeout=3.0)
    assert user[0].dead and d.breakers["primary"].state is State.CLOSED
    return recorded, spawned


def ended(handle: Handle, stream_s: float) -> ErrorClass:
    """A fake stream of `stream_s` that ends at once when cancelled, as a real one does (its socket is closed)."""
    if not handle.cancelled.wait(stream_s):
        return OK
    return ErrorClass.CUT_OFF if handle.cut else ErrorClass.CANCELLED


def test_a_loser_cancelled_as_the_user_stops_is_still_recorded_and_the_leader_cut_off() -> None:
    started = time.perf_counter()
    recorded, spawned = race_until_killed(kill_at_first_output=True)
    assert sorted(recorded) == [("primary", ErrorClass.CANCELLED), ("secondary", ErrorClass.CUT_OFF)]
    assert all(g.dead for g in spawned) and time.perf_counter() - started < 0.5


def test_a_race_undecided_as_the_user_stops_cuts_off_every_attempt() -> None:
    recorded, spawned = race_until_killed(kill_at_first_output=False)
    assert sorted(recorded) == [("primary", ErrorClass.CUT_OFF), ("secondary", ErrorClass.CUT_OFF)]
    assert len(spawned) == 2 and all(g.dead for g in spawned)


def test_a_lone_attempt_in_flight_as_the_user_stops_is_cut_off_and_recorded() -> None:
    """The single path (one endpoint, no retry, no breaker): the attempt runs in its own greenlet, so Locust's kill of
    the user cuts it off instead of tearing its stream apart, and it still records itself."""
    d = Dispatcher(pool("only", retry=RetryConfig(max_attempts=1), breaker=BreakerConfig(failures=0, failure_rate=0)))
    assert d.only == "only"
    recorded: list[ErrorClass] = []
    in_flight = gevent.event.Event()

    def attempt(name: str, number: int, hedge: bool, handle: Handle | None) -> Attempt:
        assert handle is not None
        in_flight.set()
        recorded.append(ended(handle, 5.0))
        return Attempt(name, number, recorded[-1], time.perf_counter())

    user = gevent.spawn(d.send, attempt)
    assert in_flight.wait(3.0)
    started = time.perf_counter()
    user.kill(block=True, timeout=3.0)
    assert user.dead and recorded == [ErrorClass.CUT_OFF] and time.perf_counter() - started < 0.5
    assert d.send(lambda *a: Attempt("only", 1, OK, 0.0)).answered.status is OK  # an attempt that ends: its answer
