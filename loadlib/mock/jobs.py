"""Timed response writers. Every write is scheduled on an absolute deadline measured from the request's arrival
(through the server's shared `Scheduler`); a tick that runs late writes every event already due in one chunk, so
lateness never accumulates and throughput comes from batching rather than from more timers. A job knows the
server only as a `JobHost`, so the dependency points one way: server -> jobs.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_right
from typing import Any, Protocol

from loadlib.mock.connection import Connection, Job
from loadlib.mock.httpwire import LAST_CHUNK, chunk, response_head
from loadlib.mock.plan import Plan
from loadlib.mock.render import Stream
from loadlib.mock.schedule import Scheduler
from loadlib.mock.truth import Stats, TruthLog, TruthRecord

MAX_BATCH = 256  # output events per write when many are due at once (zero ITL, a late timer)


class JobHost(Protocol):
    """What a response writer needs from the server: its loop and deadline heap, its counters and ground truth."""

    loop: asyncio.AbstractEventLoop
    scheduler: Scheduler
    stats: Stats
    truth: TruthLog


class _TimedJob(Job):
    """A response written on a timer (subclasses hold `host`, `record` and `timer`)."""

    __slots__ = ()
    host: JobHost
    record: TruthRecord
    timer: Any

    def cancel(self) -> None:
        """The client went away: the pending write is dropped (scheduled ticks stay queued and return at once, seeing
        the connection closed) and an unfinished response is recorded as `client_closed`."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.record.outcome == "pending":
            self.host.truth.complete(self.record, "client_closed")
            self._abandoned()

    def _abandoned(self) -> None:
        """Hook: what else an unfinished response releases."""


class StreamJob(_TimedJob):
    """An SSE response: head and preamble events, output events on their deadlines, fault, tail."""

    __slots__ = (
        "cap",
        "conn",
        "deadlines",
        "end_deadline",
        "fault_pending",
        "head",
        "host",
        "i",
        "loop",
        "plan",
        "record",
        "renderer",
        "t0",
        "timer",
    )

    def __init__(
        self,
        host: JobHost,
        conn: Connection,
        record: TruthRecord,
        renderer: Stream,
        plan: Plan,
        head: bytes,
        t0: float,
    ) -> None:
        self.host = host
        self.loop = host.loop
        self.conn = conn
        self.record = record
        self.renderer = renderer
        self.plan = plan
        self.head = head
        self.t0 = t0
        self.deadlines = [t0 + o / 1000.0 for o in plan.offsets_ms]
        self.end_deadline = t0 + plan.end_ms / 1000.0
        self.i = 0
        self.fault_pending = plan.fault_event >= 0 and plan.fault != "stall"
        # where ticks stop batching: the fault boundary while that fault is pending, else the last event
        self.cap = plan.fault_event if self.fault_pending else len(self.deadlines)
        self.timer: Any = None

    def start(self) -> None:
        self.conn.job = self
        self.host.stats.streams_active += 1
        if self.plan.start_ms > 0:
            self.timer = self.loop.call_at(self.t0 + self.plan.start_ms / 1000.0, self._send_head)
        else:
            self._send_head()

    def _abandoned(self) -> None:
        self._done()

    def _done(self) -> None:
        self.host.stats.streams_active -= 1

    def _ms(self, now: float) -> float:
        return (now - self.t0) * 1000.0

    def _send_head(self) -> None:
        self.timer = None
        now = self.loop.time()
        self.conn.write(self.head + chunk(self.renderer.head()))
        self.record.headers_sent_ms = self._ms(now)
        self.host.stats.count_response(200)
        self._schedule(now)

    def _schedule(self, now: float) -> None:
        nxt = self.deadlines[self.i] if self.i < len(self.deadlines) else self.end_deadline
        if nxt <= now:
            self.loop.call_soon(self._tick)  # more is due already (zero ITL): let other streams and I/O in first
        else:
            self.host.scheduler.at(nxt, self._tick)

    def _tick(self) -> None:
        """Write every output event due by now (up to MAX_BATCH) as one chunk; handle the fault and tail edges."""
        conn = self.conn
        if conn.closed:
            return
        if conn.paused:
            conn.waiter = self._tick
            return
        now = self.loop.time()
        i = self.i
        cap = self.cap
        limit = i + MAX_BATCH
        if limit > cap:
            limit = cap
        j = bisect_right(self.deadlines, now, i, limit)
        data = b""
        if j > i:
            data = self.renderer.events(i, j)
            plan = self.plan
            tokens = j - i if plan.tokens_per_event == 1 else plan.tokens_before(j) - plan.tokens_before(i)
            self.record.add_events((now - self.t0) * 1000.0, j - i, tokens)
            stats = self.host.stats
            stats.tokens_sent += tokens
            stats.events_sent += j - i
            self.i = j
        if j == cap:
            edge = self._edge(now, j, data)
            if edge is None:
                return
            data = edge
        if data:
            conn.write(chunk(data))
        self._schedule(now)

    def _edge(self, now: float, j: int, data: bytes) -> bytes | None:
        """At the fault boundary or after the last event. Returns what still has to be written, or None when the
        response is over."""
        plan = self.plan
        conn = self.conn
        renderer = self.renderer
        if self.fault_pending:
            self.fault_pending = False
            self.cap = len(self.deadlines)
            if plan.fault == "drop":
                conn.write(chunk(data))
                self._finish(now, "dropped")
                conn.drop()
                return None
            if plan.fault == "error_event":
                conn.write(chunk(data + renderer.error_event()) + LAST_CHUNK)
                self._finish(now, "complete")
                conn.finish()
                return None
            data += renderer.malformed()
            if j < self.cap:
                return data
        if now < self.end_deadline:
            return data
        reported = round(self.record.output_tokens_sent * plan.usage_scale)
        data += renderer.tail(plan.finish_reason, reported, plan.fault != "no_terminal")
        conn.write(chunk(data) + LAST_CHUNK)
        self.record.finish_reason = plan.finish_reason
        self._finish(now, "complete")
        conn.finish()
        return None

    def _finish(self, now: float, outcome: str) -> None:
        self.record.end_ms = self._ms(now)
        self.host.truth.complete(self.record, outcome)
        self._done()


class BodyJob(_TimedJob):
    """A non-streamed JSON response written whole at the planned end time (drop: half of it, then close)."""

    __slots__ = ("body", "conn", "headers", "host", "plan", "record", "status", "t0", "timer")

    def __init__(
        self,
        host: JobHost,
        conn: Connection,
        record: TruthRecord,
        plan: Plan,
        status: int,
        headers: list[tuple[str, str]],
        body: bytes,
        t0: float,
    ) -> None:
        self.host = host
        self.conn = conn
        self.record = record
        self.plan = plan
        self.status = status
        self.headers = headers
        self.body = body
        self.t0 = t0
        self.timer: Any = None

    def start(self) -> None:
        self.conn.job = self
        self.timer = self.host.loop.call_at(self.t0 + self.plan.end_ms / 1000.0, self._send)

    def _send(self) -> None:
        self.timer = None
        conn = self.conn
        if conn.closed:
            return
        now = self.host.loop.time()
        ms = (now - self.t0) * 1000.0
        rec = self.record
        rec.headers_sent_ms = rec.end_ms = ms
        if self.status == 200:
            tokens = self.plan.output_tokens
            rec.add_events(ms, 1 if tokens else 0, tokens)
            rec.finish_reason = self.plan.finish_reason
            self.host.stats.tokens_sent += tokens
        if self.plan.fault == "drop":
            conn.write(response_head(self.status, self.headers, len(self.body)) + self.body[: len(self.body) // 2])
            self.host.stats.count_response(self.status)
            self.host.truth.complete(rec, "dropped")
            conn.drop()
            return
        self.host.truth.complete(rec, "complete")
        conn.respond(self.status, self.headers, self.body)
