"""One user-visible request over the pool: pick an endpoint, send, retry or hedge, feed the breakers
(docs/failover.md, "A user-visible request").

The dispatcher is per node (every user of a worker shares its breakers, router and retry budget, as the clients of
one real service instance do). An attempt is performed by the caller's function, so the transport, the record and its
report stay where they are; the dispatcher decides which endpoint each attempt goes to, whether another attempt may
follow, how long to wait before it, and which attempt's answer the user got.
"""

from __future__ import annotations

import gevent
from gevent.event import Event

import math
import random
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

from loadlib.errors import ErrorClass
from loadlib.failover.breaker import CircuitBreaker, State, Transition
from loadlib.failover.client_faults import ClientFault
from loadlib.failover.pool import PoolConfig
from loadlib.failover.retry import RetryBudget, asked_wait_s, backoff_s
from loadlib.failover.routing import ADAPTIVE, Router, pick

FirstOutput = Callable[[], None]
LOSER_WAIT_S = 1.0  # a cancelled attempt ends at once (its socket is closed); this only bounds a stuck one
# outcomes that tell nothing about their endpoint: a hedge's loser, an attempt cut off by the end of the run
UNJUDGED = frozenset({ErrorClass.CANCELLED, ErrorClass.CUT_OFF})


@dataclass(slots=True)
class Attempt:
    """What the dispatcher needs of one attempt; `value` is the caller's (its record and parsed result)."""

    endpoint: str
    number: int
    status: ErrorClass
    t0: float  # perf_counter when it was sent
    ttft_ms: float | None = None  # from its own t0
    e2e_ms: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    hedge: bool = False
    value: Any = None


AttemptFn = Callable[[str, int, bool, "Handle | None"], Attempt]


def _learned(done: Attempt | None) -> tuple[float | None, bool, float | None]:
    """What the router learns of an ended attempt: (TTFT s, answered, how long a cancelled one waited for output)."""
    if done is None:
        return None, False, None
    ttft = None if done.ttft_ms is None else done.ttft_ms / 1000.0
    waited = None
    if done.status is ErrorClass.CANCELLED and ttft is None and done.e2e_ms is not None:
        waited = done.e2e_ms / 1000.0
    return ttft, done.status is ErrorClass.OK, waited


@dataclass(slots=True)
class Delivery:
    """The user-visible request: from the first attempt's start to the answer the user got (or the last failure)."""

    preferred: str
    start: float  # perf_counter
    attempts: list[Attempt]
    answered: Attempt | None  # None: no endpoint's breaker let a request through
    hedged: bool = False
    hedged_won: bool = False  # answered by a hedge that outran an attempt still running (cancelled): not a failover

    @property
    def status(self) -> ErrorClass:
        return self.answered.status if self.answered is not None else ErrorClass.CIRCUIT_OPEN

    @property
    def ok(self) -> bool:
        return self.status is ErrorClass.OK

    @property
    def endpoint(self) -> str | None:
        return self.answered.endpoint if self.answered is not None else None

    @property
    def ttft_ms(self) -> float | None:
        """TTFT as the user saw it: from the first attempt's start to the first token of the answer."""
        a = self.answered
        if a is None or a.ttft_ms is None:
            return None
        return (a.t0 - self.start) * 1000.0 + a.ttft_ms

    @property
    def e2e_ms(self) -> float:
        a = self.answered
        if a is None or a.e2e_ms is None:
            return 0.0
        return (a.t0 - self.start) * 1000.0 + a.e2e_ms


class Dispatcher:
    """The node's breakers, router and retry budget, and the loop of one user-visible request."""

    def __init__(
        self,
        pool: PoolConfig,
        on_transition: Callable[[Transition], None] | None = None,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.pool = pool
        self.rng = rng or random.Random()
        names = pool.names
        specs = pool.endpoints
        may_open = self._may_open if pool.breaker.max_open_share < 1 else None
        self.breakers = {
            e.name: CircuitBreaker(e.name, pool.breaker, clock, on_transition, e.breaker_mode, may_open) for e in specs
        }
        self._next_outlier_check = 0.0
        prices = [e.prices.input + e.prices.output if e.prices is not None else math.inf for e in specs]
        weights, priorities = [e.weight for e in specs], [e.priority for e in specs]
        self.router = Router(names, pool.policy, priorities, weights, self.rng, prices, pool.ttft_p95_max_s)
        self.adaptive = pool.policy in ADAPTIVE
        self.budget = RetryBudget(pool.retry.budget, pool.retry.budget_window_s, clock)
        self.hedge_after_s = pool.hedge_after_ms / 1000.0 if len(names) > 1 else 0.0
        self.hedges = self.hedges_won = 0
        self.faults: dict[str, ClientFault] = {}
        self.cooling: dict[str, float] = {}  # endpoint -> clock time its Retry-After ends (retry_after_cooldown)
        self.clock = clock
        self.only = names[0] if _single_path(pool) else None

    def fault(self, name: str) -> ClientFault | None:
        """The client-side drill fault an attempt to `name` meets now, if any (see loadlib.failover.client_faults)."""
        fault = self.faults.get(name) if self.faults else None
        if fault is None or not fault.active(self.clock()):
            return None
        return fault if fault.hits(self.rng) else None

    def admit(self, name: str) -> int | None:
        return self.breakers[name].admit()

    def send(self, attempt: AttemptFn, sleep: Callable[[float], Any] = gevent.sleep) -> Delivery:
        """Run one user-visible request to its end. Never raises for a failed attempt."""
        if self.only is not None:  # one endpoint, one attempt, no breaker: nothing to decide (measured: bench/)
            done = _alone(attempt, self.only)
            return Delivery(self.only, done.t0, [done], done)
        self.budget.request()
        if self.adaptive:
            attempt = self._tracked(attempt)
        order = self.router.order()
        delivery = Delivery(order[0], perf_counter(), [], None)
        tried: list[str] = []
        while True:
            picked = pick(order, self._cooled(tried) if self.cooling else self.admit, tried)
            if picked is None:
                return delivery
            name, permit = picked
            if name in tried:
                sleep(self._wait(delivery, name))
            answered = self._send_one(attempt, delivery, order, tried, name, permit)
            delivery.answered = answered
            if not self._may_retry(answered, len(delivery.attempts)):
                return delivery

    def _tracked(self, attempt: AttemptFn) -> AttemptFn:
        """The attempt function, telling the router when each attempt starts and ends (latency, least_busy, cost)."""
        router = self.router

        def tracked(name: str, number: int, hedge: bool, handle: Handle | None) -> Attempt:
            router.started(name)
            done = None
            try:
                done = attempt(name, number, hedge, handle)
                return done
            finally:
                router.ended(name, *_learned(done))

        return tracked

    def _cooled(self, tried: list[str]) -> Callable[[str], int | None]:
        """`admit`, but an endpoint cooling down for its Retry-After refuses requests that have not tried it yet (one
        that did waits for it: see _wait)."""
        now = self.clock()

        def admit(name: str) -> int | None:
            if name not in tried and self.cooling.get(name, 0.0) > now:
                return None
            return self.breakers[name].admit()

        return admit

    def _wait(self, delivery: Delivery, name: str) -> float:
        """Before sending again to `name`, which this request already tried: what `name` itself asked for in its
        last answer (Retry-After, capped), less the time since that answer, even when another endpoint failed in
        between; without one, the backoff after the request's last attempt."""
        last = delivery.answered
        if last is None:
            return 0.0
        own = next(a for a in reversed(delivery.attempts) if a.endpoint == name)
        asked = asked_wait_s(own.headers, self.pool.retry, time.time()) if own.headers else None
        if asked is None:
            return backoff_s(last.number, self.pool.retry, self.rng)
        ended = own.t0 + (own.e2e_ms or 0.0) / 1000.0
        return max(0.0, asked - (perf_counter() - ended))

    def _may_retry(self, last: Attempt, attempts: int) -> bool:
        """Another attempt only for a retryable failure that showed the user nothing, within the attempts and the
        budget (so a storm of 429s cannot multiply the load)."""
        retry = self.pool.retry
        if last.status is ErrorClass.OK or last.ttft_ms is not None or last.status not in retry.retry_on:
            return False
        return attempts < retry.max_attempts and self.budget.try_spend()

    def _send_one(
        self, attempt: AttemptFn, delivery: Delivery, order: list[str], tried: list[str], name: str, permit: int
    ) -> Attempt:
        """One attempt, or a hedged pair when hedging is on; returns the attempt whose answer the user got."""
        tried.append(name)
        number = len(delivery.attempts) + 1
        if not self.hedge_after_s:
            done = attempt(name, number, False, None)
            self._settle(delivery, done, permit)
            return done
        return self._hedged(attempt, delivery, order, tried, name, permit)

    def _settle(self, delivery: Delivery, done: Attempt, permit: int) -> None:
        """The attempt's outcome to its breaker (a hedge's loser or a cut-off attempt tells nothing of its endpoint)."""
        breaker = self.breakers[done.endpoint]
        if done.status in UNJUDGED:
            breaker.release(permit)
        else:
            breaker.record(permit, done.status, None if done.ttft_ms is None else done.ttft_ms / 1000.0)
            if self.pool.breaker.success_rate_stdev > 0:
                self._outliers()
        delivery.attempts.append(done)
        if self.pool.retry.retry_after_cooldown and done.headers:
            self._cool(done)

    def _may_open(self) -> bool:
        """Whether one more open breaker keeps the open share within max_open_share."""
        opened = sum(b.state is not State.CLOSED for b in self.breakers.values())
        return (opened + 1) / len(self.breakers) <= self.pool.breaker.max_open_share + 1e-9

    def _outliers(self) -> None:
        """At most once a second: eject (open) every closed endpoint whose success rate over its window lies more
        than `success_rate_stdev` standard deviations under the mean of the endpoints with `min_calls` calls, when at
        least `success_rate_min_endpoints` have them (Envoy's success-rate outlier detection)."""
        now = self.clock()
        if now < self._next_outlier_check:
            return
        self._next_outlier_check = now + 1.0
        cfg = self.pool.breaker
        rates = {}
        for name, b in self.breakers.items():
            calls, failures = b.window_counts()
            if b.state is State.CLOSED and calls >= max(1, cfg.min_calls):
                rates[name] = 1.0 - failures / calls
        if len(rates) < cfg.success_rate_min_endpoints:
            return
        mean = statistics.fmean(rates.values())
        floor = mean - cfg.success_rate_stdev * statistics.pstdev(rates.values())
        for name, rate in rates.items():
            if rate < floor:
                why = f"success rate {rate:.0%} < {floor:.0%} (mean {mean:.0%} - {cfg.success_rate_stdev:g} stdev)"
                self.breakers[name].eject(why)

    def _cool(self, done: Attempt) -> None:
        """The endpoint asked for a wait: no new request goes to it until the wait is over (retry_after_cooldown)."""
        asked = asked_wait_s(done.headers, self.pool.retry, time.time())
        if asked:
            until = self.clock() + asked
            if until > self.cooling.get(done.endpoint, 0.0):
                self.cooling[done.endpoint] = until

    def _hedged(
        self, attempt: AttemptFn, delivery: Delivery, order: list[str], tried: list[str], name: str, permit: int
    ) -> Attempt:
        """Send to `name`; without a first token within the hedge delay, send the same request to the next endpoint
        too. The first to produce output wins and the other is cancelled (it stays a record: its tokens and cost
        count). When one fails before any output, the other is simply awaited."""
        race = _Race()
        try:
            first = race.spawn(attempt, name, len(delivery.attempts) + 1, False, permit)
            if not race.wait_first(first, self.hedge_after_s):  # no output and not ended: hedge
                self._hedge(attempt, delivery, order, tried, race)
            winner = race.decide()
        except BaseException:  # GreenletExit: the user is stopped (the run ends, a ramp-down) mid-race
            self._abandon(race)
            raise
        return self._finish(delivery, race, winner)

    def _hedge(self, attempt: AttemptFn, delivery: Delivery, order: list[str], tried: list[str], race: _Race) -> None:
        """The hedge itself, when an endpoint admits it and the budget allows one more attempt."""
        picked = self._hedge_target(order, tried)
        if picked is None:
            return
        tried.append(picked[0])
        race.spawn(attempt, picked[0], len(delivery.attempts) + 2, True, picked[1])
        delivery.hedged = True
        self.hedges += 1

    def _hedge_target(self, order: list[str], tried: list[str]) -> tuple[str, int] | None:
        """The next endpoint not tried whose breaker admits, if the retry budget allows one more attempt."""
        others = [n for n in order if n not in tried]
        picked = pick(others, self.admit, ()) if others else None
        if picked is None:
            return None
        if not self.budget.try_spend():
            self.breakers[picked[0]].release(picked[1])  # the permit goes back unused
            return None
        return picked

    def _finish(self, delivery: Delivery, race: _Race, winner: _Runner) -> Attempt:
        """Settle every attempt of the decided race; the winner's answer is the user's."""
        for r in race.runners:
            self._settle(delivery, r.result(), r.permit)
        delivery.attempts.sort(key=lambda a: a.number)
        answered = winner.result()
        if answered.hedge and answered.status is ErrorClass.OK and race.outran(winner):
            delivery.hedged_won = True
            self.hedges_won += 1
        return answered

    def _abandon(self, race: _Race) -> None:
        """The race's user is gone: every attempt records itself, cancelled or cut off (race.abandon); every breaker
        permit is settled or given back, so a half-open breaker is not left waiting for a probe that will never
        report."""
        race.abandon()
        for r in race.runners:
            done = r.greenlet.value if r.greenlet.successful() else None
            if isinstance(done, Attempt) and done.status not in UNJUDGED:
                self.breakers[r.endpoint].record(r.permit, done.status)
            else:
                self.breakers[r.endpoint].release(r.permit)


def _alone(attempt: AttemptFn, name: str) -> Attempt:
    """The one attempt of a single-path request, in a greenlet of its own as a race's are (a spawn costs a few
    microseconds): Locust stops a user by killing its greenlet, which would tear a stream apart and lose what it
    received. Here the kill reaches the user waiting for its attempt instead, and the attempt is cut off: it ends at
    once with what arrived and records itself `cut_off` before the kill goes on (see _Race.abandon)."""
    race = _Race()
    greenlet = race.spawn(attempt, name, 1, False, 0)
    try:
        return greenlet.get()  # an exception of the attempt function (a bug of ours) reaches the user, as before
    except BaseException:  # GreenletExit: the user is stopped (the run ends, a ramp-down)
        race.abandon()
        raise


def _single_path(pool: PoolConfig) -> bool:
    """A pool of one endpoint with one attempt per request, no hedging and a breaker that never opens."""
    breaker = pool.breaker
    never_opens = breaker.failures <= 0 and breaker.failure_rate <= 0
    return len(pool.endpoints) == 1 and pool.retry.max_attempts <= 1 and never_opens


class Handle:
    """An attempt's part in a race: the attempt function registers its connection while it streams (so a loser can
    be cancelled) and calls `first_output` when its first output arrives."""

    __slots__ = ("cancelled", "conn", "cut", "first_output")

    def __init__(self, first_output: FirstOutput) -> None:
        self.first_output = first_output
        self.cancelled = Event()
        self.conn: Any = None
        self.cut = False  # cancelled because its user was stopped, not because another attempt won

    def cancel(self) -> None:
        if self.cancelled.is_set():
            return
        self.cancelled.set()
        if self.conn is not None:
            self.conn.cancel()

    def cut_off(self) -> None:
        """End the attempt because its user is stopped: it ends as a cancelled one does and records itself
        `cut_off` (the attempt function reads `cut`)."""
        self.cut = True
        self.cancel()


@dataclass(slots=True)
class _Runner:
    greenlet: gevent.Greenlet
    handle: Handle
    permit: int
    endpoint: str
    number: int

    def result(self) -> Attempt:
        """The attempt's outcome; an attempt function that raised (a bug of ours) is still one counted attempt."""
        value = self.greenlet.value
        if isinstance(value, Attempt):
            return value
        return Attempt(self.endpoint, self.number, ErrorClass.INTERNAL_ERROR, 0.0)


class _Race:
    """Attempts of one request running side by side; `first_output` is set by the first to produce output."""

    def __init__(self) -> None:
        self.first_output = Event()
        self.runners: list[_Runner] = []
        self.leader: _Runner | None = None

    def spawn(self, attempt: AttemptFn, name: str, number: int, hedge: bool, permit: int) -> gevent.Greenlet:
        runner: list[_Runner] = []

        def on_first() -> None:
            if self.leader is None:
                self.leader = runner[0]
                self.first_output.set()
                # the losers now, in the leader's greenlet: the user's greenlet may wake only after a loser ran
                # to its end, and a loser that ended ok would count as an answer nobody got
                self.cancel_all_but(self.leader)

        handle = Handle(on_first)
        g = gevent.spawn(attempt, name, number, hedge, handle)
        runner.append(_Runner(g, handle, permit, name, number))
        self.runners.append(runner[0])
        return g

    def wait_first(self, first: gevent.Greenlet, delay_s: float) -> bool:
        """Wait up to `delay_s` for output or for `first` to end; whether either happened. The deadline is kept on
        perf_counter: the loop's timers may fire early against it while its cached clock is stale."""
        deadline = perf_counter() + delay_s
        while not (self.first_output.is_set() or first.ready()):
            left = deadline - perf_counter()
            if left <= 0:
                return False
            gevent.wait([self.first_output, first], timeout=left, count=1)
        return True

    def winner(self) -> _Runner:
        """The first to produce output, or (when none did) the latest sent, once every attempt has ended."""
        while self.leader is None:
            pending = [r.greenlet for r in self.runners if not r.greenlet.ready()]
            if not pending:
                return self.runners[-1]
            gevent.wait([*pending, self.first_output], count=1)
        return self.leader

    def decide(self) -> _Runner:
        """Wait for the winner, cancel the others, wait until every attempt has ended; the winner."""
        winner = self.winner()
        self.cancel_all_but(winner)
        gevent.joinall([r.greenlet for r in self.runners])
        return winner

    def cancel_all_but(self, winner: _Runner) -> None:
        for r in self.runners:
            if r is not winner and not r.greenlet.ready():
                r.handle.cancel()

    def outran(self, winner: _Runner) -> bool:
        """Whether `winner` beat an attempt still running: one of the others ended cancelled (after the join)."""
        return any(r is not winner and r.result().status is ErrorClass.CANCELLED for r in self.runners)

    def abandon(self) -> None:
        """The user's greenlet was killed mid-race. Once a leader exists the others are losers: they are cancelled.
        Whatever still runs then (the leader's stream, or every attempt before any output) is cut off: it ends as a
        cancelled attempt does, with what arrived, and records itself `cut_off`. All are awaited (a cancelled attempt
        ends at once), so each is recorded before the run's end; one stuck past LOSER_WAIT_S is killed."""
        if self.leader is not None:
            self.cancel_all_but(self.leader)
        for r in self.runners:
            if not r.greenlet.ready() and not r.handle.cancelled.is_set():
                r.handle.cut_off()
        gevent.joinall([r.greenlet for r in self.runners], timeout=LOSER_WAIT_S)
        gevent.killall([r.greenlet for r in self.runners], block=True, timeout=LOSER_WAIT_S)
