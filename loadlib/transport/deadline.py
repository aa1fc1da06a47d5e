"""The time limits of one request: computed here (`Deadline`, pure) and enforced here (`Watchdog`, one timer).

A request has four limits (docs/records.md and docs/metrics.md, "Error classes"): connect, TTFT (no output yet), idle
(silence mid-stream) and total. Before every wait the reader asks `Deadline.until` how long it may wait; a limit already
crossed (a server that never stops sending, or sends only keep-alives) raises at once, so limits hold whether the socket
is silent or flooded. The watchdog wakes a reader parked in a wait past its limit. After the terminal event the answer
is whole: the end of the body is awaited only until a point fixed at that event (`end_by`), never one that each read
pushes back.
"""

from __future__ import annotations

from gevent import get_hub, getcurrent

from time import perf_counter
from typing import Any

from loadlib.config import Timeouts
from loadlib.errors import ErrorClass

# After the terminal event, how long the end of the HTTP message may take for the connection to be reused: a server
# sends it at once (in the same write, or the next: a delayed ACK can hold that one up to 200 ms). Past it, the
# connection is closed; for LATE_END_MEMORY_S after that, the end must already be there (see Connection.end_grace).
BODY_END_GRACE_S = 0.25
LATE_END_MEMORY_S = 30.0
SLACK_S = 1e-3


class DeadlineExceeded(Exception):
    """A limit was crossed; `status` says which (timeout_ttft, timeout_idle or timeout_total)."""

    def __init__(self, status: ErrorClass, message: str) -> None:
        super().__init__(message)
        self.status = status


class Deadline:
    """Absolute limits of one request on the perf_counter clock, from its t0."""

    __slots__ = ("idle", "t0", "timeouts", "total_at", "ttft_at")

    def __init__(self, t0: float, timeouts: Timeouts) -> None:
        self.t0 = t0
        self.timeouts = timeouts
        self.idle = timeouts.idle
        self.total_at = t0 + timeouts.total
        self.ttft_at = t0 + timeouts.ttft

    @property
    def head_at(self) -> float:
        """When the response head must have arrived: the TTFT or the total limit, whichever comes first."""
        return min(self.ttft_at, self.total_at)

    def until(self, now: float, awaiting_output: bool, end_by: float | None = None) -> float:
        """How long the next wait may last (an absolute time), at most until `end_by` when given (the end of the
        body after the terminal event); raises DeadlineExceeded when a limit is crossed."""
        limit = min(now + self.idle, self.total_at)
        if awaiting_output:
            limit = min(limit, self.ttft_at)
        if end_by is not None:
            limit = min(limit, end_by)
        if limit <= now:
            raise self.exceeded(now, awaiting_output)
        return limit

    def exceeded(self, now: float, awaiting_output: bool) -> DeadlineExceeded:
        """Which limit a wait that ended at `now` crossed first: total, TTFT (no output yet) or idle."""
        t = self.timeouts
        if now >= self.total_at - SLACK_S:
            return DeadlineExceeded(ErrorClass.TIMEOUT_TOTAL, f"no end of stream after {t.total:g} s")
        if awaiting_output and now >= self.ttft_at - SLACK_S:
            return DeadlineExceeded(ErrorClass.TIMEOUT_TTFT, f"no output token after {t.ttft:g} s")
        return DeadlineExceeded(ErrorClass.TIMEOUT_IDLE, f"no data for {t.idle:g} s mid-stream")

    def head_exceeded(self) -> DeadlineExceeded:
        """The response head did not come in time."""
        t = self.timeouts
        if t.total <= t.ttft:
            return DeadlineExceeded(ErrorClass.TIMEOUT_TOTAL, f"no response after {t.total:g} s")
        return DeadlineExceeded(ErrorClass.TIMEOUT_TTFT, f"no response headers after {t.ttft:g} s")


class Watchdog:
    """Wait limits of every reader in this process, checked by one repeating timer.

    A socket timeout makes gevent build and arm a Timeout object for every wait, i.e. for every token of a paced
    stream (~10 % of a worker's CPU at 128 streams). One timer every TICK_S throws TimeoutError into the greenlets
    whose limit has passed; they are, by construction, parked in a send or recv (armed just before it, disarmed
    just after, with no other switch in between). Limits are therefore honoured to within TICK_S."""

    TICK_S = 0.01

    def __init__(self) -> None:
        self.waits: dict[Any, float] = {}
        self.timer: Any = None

    def arm(self, until: float) -> Any:
        """Watch the current greenlet until `disarm`; returns it."""
        me = getcurrent()
        self.waits[me] = until
        if self.timer is None:
            self.timer = get_hub().loop.timer(self.TICK_S, self.TICK_S)
            self.timer.start(self._tick)
        return me

    def disarm(self, greenlet: Any) -> None:
        self.waits.pop(greenlet, None)

    def _tick(self) -> None:
        if not self.waits:
            self.timer.stop()
            self.timer.close()
            self.timer = None
            return
        now = perf_counter()
        expired = [g for g, until in self.waits.items() if until <= now]
        for g in expired:
            if self.waits.pop(g, None) is not None:
                g.throw(TimeoutError("timed out"))


WATCHDOG = Watchdog()
