"""The InfluxDB sink: points go into a bounded buffer in O(1) on the caller's greenlet, and one background greenlet
serialises and writes them in batches, retrying with exponential backoff and jitter while InfluxDB is down or slow.

Nothing here runs on the request path except `submit_*` (an append). When the buffer is full the oldest points are
dropped and counted, so at any moment
    submitted == written + dropped + buffered
where `dropped` = overflow (pushed out of the full buffer) + rejected (refused by the server for good) + unflushed
(still buffered when `close()` ran out of time, or submitted after it). `close(timeout_s)` flushes what it can within
the bound and then stops the greenlet, so a dead InfluxDB never holds up the end of a run.
"""

from __future__ import annotations

import gevent
import gevent.event

import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from loadlib.records.record import RequestRecord
from loadlib.records.user_request import UserRequest
from loadlib.sinks.buffer import DropOldestBuffer
from loadlib.sinks.lineproto import (
    amplification_line,
    breaker_line,
    drill_line,
    event_line,
    incident_line,
    request_line,
    user_request_line,
    worker_line,
)
from loadlib.sinks.transports import Transport, WriteError

log = logging.getLogger("loadlib.sinks")

# The first item of a queued tuple says which point it becomes (a RequestRecord or UserRequest is queued as itself).
_WORKER = 0
_EVENT = 1
_BREAKER = 2
_DRILL = 4
_AMPLIFICATION = 5
_INCIDENT = 6
ERROR_LOG_INTERVAL_S = 30.0


@dataclass(frozen=True, slots=True)
class SinkStats:
    """Exact counts of one sink; `submitted == written + dropped + buffered` always holds. `resent`: points queued
    again after a write whose outcome is unknown (sent, no answer): the database may hold up to that many points
    more than `written` (those later dropped), never fewer than `written` (a point written twice is stored once)."""

    submitted: int
    written: int
    dropped: int
    dropped_overflow: int
    dropped_rejected: int
    dropped_unflushed: int
    buffered: int
    batches: int
    write_errors: int
    last_error: str | None
    closed: bool
    resent: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def backoff_delay(failures: int, base_s: float, max_s: float, rand: Callable[[], float] = random.random) -> float:
    """Exponential backoff with jitter: base * 2^(failures-1), capped at max, then scaled into [50 %, 100 %] so
    workers that lost InfluxDB together do not all retry at the same instant."""
    ceiling = min(max_s, base_s * (2 ** max(failures - 1, 0)))
    return ceiling * (0.5 + 0.5 * rand())


class InfluxSink:
    """Buffers points of one node and writes them to InfluxDB from its own greenlet.

    Not thread-safe: call `submit_*` from greenlets of the hub the sink was started on (Locust's users, listeners).
    """

    def __init__(
        self,
        transport: Transport,
        *,
        run_id: str = "",
        worker: str = "",
        max_points: int = 100_000,
        batch_size: int = 5000,
        flush_interval_s: float = 1.0,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 10.0,
        encode_chunk: int = 100,
        backoff_wait: Callable[[float], Any] | None = None,
    ) -> None:
        if batch_size < 1 or flush_interval_s <= 0 or encode_chunk < 1:
            raise ValueError("batch_size and encode_chunk must be >= 1 and flush_interval_s > 0")
        self.transport = transport
        self.run_id = run_id
        self.worker = worker
        self.batch_size = batch_size
        self.flush_interval_s = flush_interval_s
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.encode_chunk = encode_chunk
        self._buffer: DropOldestBuffer[Any] = DropOldestBuffer(max_points)
        self._inflight: list[Any] | None = None
        self._submitted = 0
        self._written = 0
        self._resent = 0  # points queued again after a write whose outcome is unknown (the server may hold them)
        self._rejected = 0
        self._unflushed = 0
        self._batches = 0
        self._write_errors = 0
        self._failing_since: float | None = None
        self._last_error: str | None = None
        self._last_error_log = 0.0
        self._wake = gevent.event.Event()
        self._closing_evt = gevent.event.Event()
        # how a backoff is waited out: until the delay ends or close() cuts it short (a test records the delays)
        self._backoff_wait = backoff_wait or self._closing_evt.wait
        self._closing = False
        self._closed = False
        self._greenlet: gevent.Greenlet | None = None

    # ---- producer side: O(1), never blocks -------------------------------------------------------------------

    def submit_record(self, record: RequestRecord) -> None:
        """Queue the `llm_request` point of one attempt."""
        self._push(record)

    def submit_worker_health(
        self, users: int | None, cpu_percent: float | None, loop_lag_ms: float | None, ts_ns: int | None = None
    ) -> None:
        """Queue an `llm_worker` point; the sink's own buffered/dropped counts at this instant are added to it."""
        self._push(
            (_WORKER, ts_ns or time.time_ns(), users, cpu_percent, loop_lag_ms, self._buffered(), self._dropped())
        )

    def submit_event(
        self, kind: str, endpoint: str = "", message: str = "", ts_ns: int | None = None, worker: str = ""
    ) -> None:
        """Queue an `llm_event` point (test_start/stop, circuit changes, failover, hedge, drill_start/stop...).

        `worker` is the node that saw the event (a worker id, "master" or "local"); empty writes no `worker` tag.
        """
        self._push((_EVENT, kind, endpoint, message, ts_ns or time.time_ns(), worker))

    def submit_breaker(self, endpoint: str, state: int, ts_ns: int | None = None) -> None:
        """Queue an `llm_breaker` point: this node's circuit state for `endpoint` (0 closed, 1 half open, 2 open)."""
        self._push((_BREAKER, endpoint, state, ts_ns or time.time_ns()))

    def submit_user_request(self, user: UserRequest) -> None:
        """Queue an `llm_user_request` point: one user-visible request, stamped with its first attempt's start."""
        self._push(user)

    def submit_drill(
        self, index: int, endpoint: str, fault: str, figures: Mapping[str, Any], ts_ns: int | None = None
    ) -> None:
        """Queue the `llm_drill` point of one drill once its figures are final (the master's job). `figures` has
        `detect_s`, `failover_s`, `failback_s` (each {"p50", "max"} or None), `user_requests`, `user_errors`,
        `user_error_rate` and `passed`; it is copied here, as the point is encoded later."""
        snapshot = {k: dict(v) if isinstance(v, Mapping) else v for k, v in figures.items()}
        self._push((_DRILL, index, endpoint, fault, snapshot, ts_ns or time.time_ns()))

    def submit_incident(self, figures: Mapping[str, Any], ts_ns: int | None = None) -> None:
        """Queue the `llm_incident` point of one incident (the master's job, at test stop); copied, as for a drill."""
        snapshot = {k: dict(v) if isinstance(v, Mapping) else v for k, v in figures.items()}
        self._push((_INCIDENT, snapshot, ts_ns or time.time_ns()))

    def submit_amplification(self, depth: int, structured: RequestRecord, plain: RequestRecord) -> None:
        """Queue the `llm_amplification` point of one JSON/prose pair of the compliance scenario."""
        self._push((_AMPLIFICATION, depth, structured, plain))

    def submit_line(self, line: str) -> None:
        """Queue a point already in line protocol (the master's rare ones: a capacity step, a server scrape)."""
        self._push(line)

    def _push(self, item: Any) -> None:
        self._submitted += 1
        if self._closed:
            self._unflushed += 1
            return
        buf = self._buffer
        buf.append(item)
        if len(buf) >= self.batch_size and not self._wake.is_set():
            self._wake.set()

    # ---- lifecycle ---------------------------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._greenlet is not None

    @property
    def closed(self) -> bool:
        return self._closed

    def start(self) -> InfluxSink:
        """Spawn the flushing greenlet (idempotent)."""
        if self._greenlet is None and not self._closed:
            self._greenlet = gevent.spawn(self._run)
        return self

    def close(self, timeout_s: float = 5.0) -> SinkStats:
        """Flush what can be flushed within `timeout_s`, then stop; what is left is counted as dropped.

        Returns within about `timeout_s` even when InfluxDB hangs mid-request (the greenlet is killed at the
        deadline). Idempotent.
        """
        if self._closed:
            return self.stats()
        if self._greenlet is None and self._buffer:
            self.start()
        self._closing = True
        self._closing_evt.set()
        self._wake.set()
        g = self._greenlet
        if g is not None and not g.dead:
            grace = min(0.5, max(timeout_s, 0.0) * 0.25)
            g.join(timeout=max(timeout_s - grace, 0.0))
            if not g.dead:
                g.kill(block=True, timeout=grace)
        left = self._buffer.clear() + (len(self._inflight) if self._inflight else 0)
        self._inflight = None
        self._unflushed += left
        self._closed = True
        self.transport.close()
        stats = self.stats()
        if stats.dropped:
            log.warning(
                "InfluxDB sink closed: %d points written, %d dropped (%d buffer overflow, %d rejected, %d unflushed)",
                stats.written,
                stats.dropped,
                stats.dropped_overflow,
                stats.dropped_rejected,
                stats.dropped_unflushed,
            )
        return stats

    def stats(self) -> SinkStats:
        overflow = self._buffer.dropped
        return SinkStats(
            submitted=self._submitted,
            written=self._written,
            dropped=overflow + self._rejected + self._unflushed,
            dropped_overflow=overflow,
            dropped_rejected=self._rejected,
            dropped_unflushed=self._unflushed,
            buffered=self._buffered(),
            batches=self._batches,
            write_errors=self._write_errors,
            last_error=self._last_error,
            closed=self._closed,
            resent=self._resent,
        )

    def _buffered(self) -> int:
        return len(self._buffer) + (len(self._inflight) if self._inflight else 0)

    def _dropped(self) -> int:
        return self._buffer.dropped + self._rejected + self._unflushed

    # ---- the flushing greenlet ---------------------------------------------------------------------------------

    def _run(self) -> None:
        failures = 0
        while True:
            if self._closing:
                if not self._buffer:
                    return
            elif len(self._buffer) < self.batch_size:
                self._wake.wait(self.flush_interval_s)
            self._wake.clear()
            try:
                ok, retry_after = self._flush()
            except Exception:  # a bug here must not silently stop the sink, nor lose the batch it held
                log.exception("InfluxDB sink: unexpected error while flushing")
                if self._inflight:
                    self._buffer.requeue(self._inflight)
                    self._inflight = None
                ok, retry_after = False, None
            if ok:
                failures = 0
                continue
            failures += 1
            delay = backoff_delay(failures, self.backoff_base_s, self.backoff_max_s)
            if retry_after is not None:
                delay = max(delay, min(retry_after, 60.0))
            if self._closing:
                gevent.sleep(min(delay, 0.25))  # keep trying until close()'s deadline, without spinning
            else:
                self._backoff_wait(delay)  # close() cuts the backoff short for a last attempt

    def _flush(self) -> tuple[bool, float | None]:
        """Write everything buffered, batch by batch. (False, retry_after) when InfluxDB should be retried later."""
        while self._buffer:
            batch = self._buffer.take(self.batch_size)
            self._inflight = batch
            lines, bad = self._encode(batch)
            self._rejected += bad
            self._inflight = lines
            if not lines:
                self._inflight = None
                continue
            try:
                self.transport.write("\n".join(lines).encode("utf-8"))
            except WriteError as exc:
                self._inflight = None
                if exc.retryable:
                    self._resent += len(lines) if exc.unknown_outcome else 0
                    self._buffer.requeue(lines)
                    self._note_error(exc)
                    return False, exc.retry_after_s
                self._note_error(exc)
                rejected = len(lines) if exc.rejected_points is None else min(exc.rejected_points, len(lines))
                self._written += len(lines) - rejected
                self._rejected += rejected
                continue
            except Exception as exc:  # an unexpected transport failure: keep the data and back off
                self._inflight = None
                self._buffer.requeue(lines)
                self._note_error(exc)
                return False, None
            self._inflight = None
            self._written += len(lines)
            self._batches += 1
            if self._failing_since is not None:
                log.info("InfluxDB writes to %s recovered", self.transport.describe())
                self._failing_since = None
        return True, None

    def _encode(self, batch: list[Any]) -> tuple[list[str], int]:
        """Line protocol for a batch. Every `encode_chunk` points (about 1 ms of work) it waits for the event loop to
        run the users' due timers and I/O (`gevent.idle`; `sleep(0)` would not let timers fire), so a large backlog
        never stalls them; points that cannot be encoded are counted as rejected."""
        lines: list[str] = []
        bad = 0
        chunk = self.encode_chunk
        for i, item in enumerate(batch):
            if i and i % chunk == 0:
                gevent.idle()
            try:
                lines.append(self._line(item))
            except Exception:
                if not bad:
                    log.exception("InfluxDB sink: could not encode a point; it is dropped")
                bad += 1
        return lines, bad

    def _line(self, item: Any) -> str:
        kind = type(item)
        if kind is str:  # already encoded (a batch put back after a failed write)
            return item
        if kind is tuple:
            tag = item[0]
            if tag == _WORKER:
                return worker_line(self.run_id, self.worker, *item[1:])
            if tag == _EVENT:
                return event_line(self.run_id, *item[1:])
            if tag == _BREAKER:
                return breaker_line(self.run_id, self.worker, *item[1:])
            if tag == _DRILL:
                return drill_line(self.run_id, *item[1:])
            if tag == _INCIDENT:
                return incident_line(self.run_id, *item[1:])
            if tag == _AMPLIFICATION:
                return amplification_line(self.run_id, self.worker, *item[1:])
            raise ValueError(f"unknown point kind {tag!r}")
        if kind is UserRequest:
            return user_request_line(item, self.run_id, self.worker)
        return request_line(item, self.run_id, self.worker)

    def _note_error(self, exc: BaseException) -> None:
        self._write_errors += 1
        self._last_error = str(exc)[:300]
        now = time.monotonic()
        retry = getattr(exc, "retryable", True)
        if self._failing_since is None or now - self._last_error_log >= ERROR_LOG_INTERVAL_S or not retry:
            self._last_error_log = now
            log.warning(
                "InfluxDB write to %s failed (%s; %d buffered, %d dropped so far): %s",
                self.transport.describe(),
                "will retry" if retry else "batch refused",
                self._buffered(),
                self._dropped(),
                self._last_error,
            )
        if retry and self._failing_since is None:
            self._failing_since = now
