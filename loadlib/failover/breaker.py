"""Circuit breaker of one endpoint on one node (docs/failover.md, "Circuit breaker").

It runs once per attempt at thousands of attempts per second, so every call is O(1): the failure-rate window is a
ring of time buckets with running totals, never a list of past results.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from loadlib.errors import ErrorClass

DEFAULT_COUNTED = frozenset(
    {
        ErrorClass.CONNECT_ERROR,
        ErrorClass.TIMEOUT_CONNECT,
        ErrorClass.TIMEOUT_TTFT,
        ErrorClass.TIMEOUT_IDLE,
        ErrorClass.TIMEOUT_TOTAL,
        ErrorClass.HTTP_5XX,
        ErrorClass.STREAM_BROKEN,
        ErrorClass.RATE_LIMITED,
    }
)

BUCKETS = 10  # the failure-rate window is split into this many time buckets
MODES = ("normal", "forced_open", "disabled")  # forced_open refuses every call, disabled admits every call


@dataclass(frozen=True, slots=True)
class BreakerConfig:
    """When a breaker opens, how long it stays open, how it probes. `failures` 0 or `failure_rate` 0 switch that
    trigger off; both off means the breaker never opens."""

    failures: int = 5
    failure_rate: float = 0.5
    window_s: float = 10.0
    min_calls: int = 20
    cooldown_s: float = 5.0
    probes: int = 1
    counted: frozenset[ErrorClass] = field(default=DEFAULT_COUNTED)
    slow_call_s: float = 0.0  # a call whose first token took longer is slow (0: off)
    slow_call_rate: float = 0.0  # the share of slow calls in the window that opens it, as failure_rate (0: off)
    max_cooldown_s: float = 0.0  # above cooldown_s: the k-th opening in a row cools down k x cooldown_s, up to this
    max_open_share: float = 1.0  # a breaker does not open when that would put more of the pool's endpoints open
    success_rate_stdev: float = 0.0  # eject an endpoint whose success rate is this many stdevs under the mean (0: off)
    success_rate_min_endpoints: int = 3  # ... only with at least this many endpoints with min_calls in their window


class State(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(frozen=True, slots=True)
class Transition:
    """One change of state, reported to `on_transition` as it happens; `at` is the breaker's clock time."""

    endpoint: str
    old: State
    new: State
    at: float
    reason: str  # one line: "5 consecutive failures (http_5xx)", "cool-down of 5 s over", ...


class Window:
    """Calls and counted failures of the last `window_s` seconds, in `BUCKETS` time buckets with running totals.

    Precision: the window is the current bucket plus the `BUCKETS - 1` before it, so a result drops out (with its
    whole bucket) at an age over 9/10 and at most 10/10 of `window_s`: never counted once older than `window_s`,
    always counted while younger than 9/10 of it. Cost: O(1) amortised per call (moving on clears one bucket per
    elapsed bucket, at most `BUCKETS` in all).
    """

    __slots__ = ("_calls", "_failures", "_slow", "calls", "failures", "head", "slow", "width")

    def __init__(self, window_s: float) -> None:
        self.width = window_s / BUCKETS
        self.head = 0  # number of the current bucket (clock time // width)
        self.calls = self.failures = self.slow = 0
        self._calls = [0] * BUCKETS
        self._failures = [0] * BUCKETS
        self._slow = [0] * BUCKETS

    def add(self, now: float, failed: bool, slow: bool = False) -> None:
        self.advance(now)
        i = self.head % BUCKETS
        self._calls[i] += 1
        self._failures[i] += failed
        self._slow[i] += slow
        self.calls += 1
        self.failures += failed
        self.slow += slow

    def advance(self, now: float) -> None:
        """Move the ring to `now`, dropping the buckets that left the window (a clock going back stays put)."""
        n = int(now // self.width)
        if n <= self.head:
            return
        for k in range(self.head + 1, min(n, self.head + BUCKETS) + 1):
            i = k % BUCKETS
            self.calls -= self._calls[i]
            self.failures -= self._failures[i]
            self.slow -= self._slow[i]
            self._calls[i] = self._failures[i] = self._slow[i] = 0
        self.head = n

    def clear(self) -> None:
        self.calls = self.failures = self.slow = 0
        for i in range(BUCKETS):
            self._calls[i] = self._failures[i] = self._slow[i] = 0


class CircuitBreaker:
    """closed -> open -> half_open -> closed (or back to open), as docs/failover.md describes.

    A permit is the breaker's generation number when the call was admitted; every transition starts a new generation,
    and a result carrying an older permit is ignored, so calls in flight when the state changed (e.g. admitted while
    closed, returning during half-open) cannot decide the new state. Any status outside `config.counted` is a
    success for the breaker: the endpoint answered, even if the request or the output was the problem.
    """

    def __init__(
        self,
        endpoint: str,
        config: BreakerConfig,
        clock: Callable[[], float] = time.monotonic,
        on_transition: Callable[[Transition], None] | None = None,
        mode: str = "normal",
        may_open: Callable[[], bool] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.config = config
        self.clock = clock
        self.on_transition = on_transition
        self.mode = mode
        self.may_open = may_open  # the pool's say: False keeps the breaker closed (max_open_share)
        self.held_closed = 0  # openings the pool refused
        self._cooldown = config.cooldown_s
        self._streak = 0  # openings in a row (max_cooldown_s)
        self._closed_at = -float("inf")
        self._state = State.CLOSED
        self._since = clock()
        self._generation = 0
        self._opened = 0
        self._consecutive = 0
        rates = (config.failure_rate, config.slow_call_rate, config.success_rate_stdev)
        self._rate_on = any(r > 0 for r in rates) and config.window_s > 0
        self._window = Window(config.window_s if self._rate_on else 1.0)
        self._probes = max(1, config.probes)
        self._probes_out = self._probes_ok = 0

    @property
    def state(self) -> State:
        """The current state; reading it turns OPEN into HALF_OPEN once the cool-down is over (so a dashboard's
        reading and the next admit agree)."""
        if self._state is State.OPEN:
            now = self.clock()
            if now - self._since >= self._cooldown:
                self._move(State.HALF_OPEN, now, f"cool-down of {self._cooldown:g} s over")
        return self._state

    def admit(self) -> int | None:
        """A permit for one call, or None when the breaker refuses it. Closed is the hot path: no clock read."""
        if self._state is State.CLOSED:
            return None if self.mode == "forced_open" else self._generation
        if self.state is State.HALF_OPEN and self._probes_out < self._probes:
            self._probes_out += 1
            return self._generation
        return None

    def record(self, permit: int, status: ErrorClass, ttft_s: float | None = None) -> None:
        """The result of a call admitted with `permit` (`ttft_s`: its time to first token, for slow calls); a permit
        from an older generation is ignored, and so is every result of a disabled breaker."""
        if permit != self._generation or self.mode == "disabled":
            return
        failed = status in self.config.counted
        slow = not failed and ttft_s is not None and 0 < self.config.slow_call_s < ttft_s
        if self._state is State.CLOSED:
            self._record_closed(status, failed, slow)
        elif self._state is State.HALF_OPEN:
            self._record_probe(status, failed, slow)

    def eject(self, reason: str) -> None:
        """Open now from outside (the pool's success-rate outlier detection), unless already open or not closed."""
        if self._state is State.CLOSED and self.mode == "normal":
            self._open(self.clock(), reason)

    def release(self, permit: int) -> None:
        """A permit handed back unused (the call was never sent): a half-open probe slot becomes free again. Unlike
        `record(permit, CANCELLED)`, which is an answer, this counts as nothing."""
        if permit == self._generation and self._state is State.HALF_OPEN and self._probes_out > self._probes_ok:
            self._probes_out -= 1

    def window_counts(self) -> tuple[int, int]:
        """(calls, counted failures) in the window now (for the pool's success-rate outlier detection)."""
        self._window.advance(self.clock())
        return self._window.calls, self._window.failures

    def snapshot(self) -> dict[str, Any]:
        """The breaker as a dashboard or summary shows it (JSON-able)."""
        state = self.state
        self._window.advance(self.clock())
        return {
            "state": state.value,
            "since": self._since,
            "consecutive_failures": self._consecutive,
            "window_calls": self._window.calls,
            "window_failures": self._window.failures,
            "opened": self._opened,
        }

    # -- closed --------------------------------------------------------------------------------------------------------

    def _record_closed(self, status: ErrorClass, failed: bool, slow: bool) -> None:
        """Only a failure or a slow call can trip the breaker (a success never raises the failure share); a success
        costs a window entry and no more."""
        if not failed and not slow:
            self._consecutive = 0
            if self._rate_on:
                self._window.add(self.clock(), False)
            return
        now = self.clock()
        if failed:
            self._consecutive += 1
        else:
            self._consecutive = 0
        if self._rate_on:
            self._window.add(now, failed, slow)
        reason = self._trip_reason(status) if failed else self._slow_reason()
        if reason is not None:
            self._open(now, reason)

    def _slow_reason(self) -> str | None:
        cfg, w = self.config, self._window
        if cfg.slow_call_rate <= 0 or w.calls < max(1, cfg.min_calls) or w.slow / w.calls < cfg.slow_call_rate:
            return None
        return f"slow calls {w.slow / w.calls:.0%} over {cfg.window_s:g} s (TTFT > {cfg.slow_call_s:g} s)"

    def _trip_reason(self, status: ErrorClass) -> str | None:
        """Why the breaker must open now, or None: the consecutive trigger first, then the failure rate."""
        cfg = self.config
        if 0 < cfg.failures <= self._consecutive:
            return f"{self._consecutive} consecutive failures ({status.value})"
        w = self._window
        if not self._rate_on or cfg.failure_rate <= 0 or w.calls < max(1, cfg.min_calls):
            return None
        share = w.failures / w.calls
        if share < cfg.failure_rate:
            return None
        return f"failure rate {share:.0%} over {cfg.window_s:g} s ({w.calls} calls)"

    # -- half-open -----------------------------------------------------------------------------------------------------

    def _record_probe(self, status: ErrorClass, failed: bool, slow: bool) -> None:
        if failed or slow:
            self._open(self.clock(), f"probe failed ({status.value})" if failed else "probe slow")
            return
        self._probes_ok += 1
        if self._probes_ok >= self._probes:
            n = self._probes_ok
            self._move(State.CLOSED, self.clock(), f"{n} probe{'s' if n != 1 else ''} succeeded")

    # -- transitions ---------------------------------------------------------------------------------------------------

    def _open(self, now: float, reason: str) -> None:
        """Open, unless the pool says too many of its endpoints are open already (then stay as is, counted). The
        k-th opening in a row cools down k x cooldown_s up to max_cooldown_s; a breaker that stayed closed for
        max_cooldown_s starts again from one."""
        if self._state is State.CLOSED and self.may_open is not None and not self.may_open():
            self.held_closed += 1
            return
        cfg = self.config
        if cfg.max_cooldown_s > cfg.cooldown_s:
            quiet = self._state is State.CLOSED and now - self._closed_at >= cfg.max_cooldown_s
            self._streak = 1 if quiet else self._streak + 1
            self._cooldown = min(cfg.cooldown_s * self._streak, cfg.max_cooldown_s)
        self._opened += 1
        self._move(State.OPEN, now, reason)

    def _move(self, new: State, now: float, reason: str) -> None:
        """Enter `new` with fresh counters and a new generation, then report it (after the change, so a callback
        that reads the breaker sees the new state)."""
        old = self._state
        if new is State.CLOSED:
            self._closed_at = now
        self._state, self._since = new, now
        self._generation += 1
        self._consecutive = self._probes_out = self._probes_ok = 0
        self._window.clear()
        if self.on_transition is not None:
            self.on_transition(Transition(self.endpoint, old, new, now, reason))
