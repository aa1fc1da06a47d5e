"""Response writers driven by the engine instead of a plan's deadlines: a token is written when the step that
sampled it ends. The head of a stream waits for the first token (vLLM's first chunk comes with it), by which time
the prefix cache has said how much of the prompt it held, so both APIs' usage can report it.

The truth's `planned_*` fields hold the model's times and `event_times_ms` the writes, as in fixed mode.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

import orjson

from loadlib.mock.connection import Connection
from loadlib.mock.engine.seq import FINISHED, Seq
from loadlib.mock.httpwire import chunk
from loadlib.mock.jobs import BodyJob, JobHost, StreamJob
from loadlib.mock.llm_response import Answer, whole_body
from loadlib.mock.render import AnthropicStream, OpenAIStream, Stream
from loadlib.mock.truth import TruthRecord

INF = float("inf")


class Aborter(Protocol):
    def abort(self, rid: Any) -> None: ...


def _clear_plan(record: TruthRecord) -> None:
    """The fixed plan's times mean nothing here: the model's times replace them as the steps happen."""
    record.planned_ttft_ms = None
    record.planned_end_ms = None
    del record.planned_itl_ms[:]


def _engine_truth(record: TruthRecord, seq: Seq) -> None:
    """The engine's account so far, written before the record is frozen (at the end, or when the answer stops
    early: a fault, a client gone while it waited or streamed)."""
    if record.outcome == "pending":
        record.engine = orjson.dumps(seq.truth())


class EngineStreamJob(StreamJob):
    """An SSE response whose event deadlines arrive one by one from the engine."""

    __slots__ = ("driver", "last_ms", "rid", "seq", "tail_s")

    def attach(self, driver: Aborter, seq: Seq) -> EngineStreamJob:
        """Hand the stream to the engine: no event's time is known until a step samples its token, and the tail
        follows the last token by the plan's terminal delay."""
        plan = self.plan
        self.tail_s = (plan.end_ms - plan.ttft_ms - (plan.mean_itl_ms or 0.0) * (plan.events - 1)) / 1000.0
        self.deadlines = [INF] * len(self.deadlines)
        self.end_deadline = INF
        self.last_ms: float | None = None
        self.driver, self.rid, self.seq = driver, seq.rid, seq
        _clear_plan(self.record)
        return self

    def start(self) -> None:
        self.conn.job = self
        self.host.stats.streams_active += 1

    def cancel(self) -> None:
        _engine_truth(self.record, self.seq)
        super().cancel()

    def _finish(self, now: float, outcome: str) -> None:
        _engine_truth(self.record, self.seq)
        super()._finish(now, outcome)

    def _abandoned(self) -> None:
        super()._abandoned()
        self.driver.abort(self.rid)

    def _schedule(self, now: float) -> None:
        i = self.i
        if (self.deadlines[i] if i < len(self.deadlines) else self.end_deadline) < INF:
            super()._schedule(now)

    def token(self, seq: Seq, when: float) -> None:
        """Token number `seq.generated` was sampled at `when`; an event is due once its last token is."""
        k = self.plan.tokens_per_event
        n = seq.generated
        if n % k and n < self.plan.output_tokens:
            return
        event = (n - 1) // k
        self.deadlines[event] = when
        self._note(when)
        if seq.state == FINISHED:  # its last token: the end goes out with it, as in the fixed mode
            self._end_at(when)
        self._kick(seq, event == 0)

    def finish(self, seq: Seq, when: float) -> None:
        """The request is done; an answer of no tokens has its tail (after the terminal delay) still to send."""
        if self.end_deadline == INF:
            self._end_at(when)
            self._kick(seq, self.record.headers_sent_ms is None)

    def _end_at(self, when: float) -> None:
        self.end_deadline = when + self.tail_s
        self.record.planned_end_ms = (self.end_deadline - self.t0) * 1000.0

    def _note(self, when: float) -> None:
        ms = (when - self.t0) * 1000.0
        rec = self.record
        if self.last_ms is None:
            rec.planned_ttft_ms = ms
        elif len(rec.planned_itl_ms) < rec.event_cap:
            rec.planned_itl_ms.append(ms - self.last_ms)
        self.last_ms = ms

    def _kick(self, seq: Seq, first: bool) -> None:
        if self.conn.closed:
            self.driver.abort(self.rid)
            return
        if first:
            _set_cached(self.renderer, seq.cached_tokens)
            now = self.loop.time()
            self.conn.hold(self.head + chunk(self.renderer.head()))
            self.record.headers_sent_ms = self._ms(now)
            self.host.stats.count_response(200)
        self._tick()  # the head and the first token in one write


def _set_cached(renderer: Stream, cached: int) -> None:
    if isinstance(renderer, AnthropicStream):
        renderer.set_cached(cached)
    elif isinstance(renderer, OpenAIStream):
        renderer.cached_tokens = cached


class EngineBodyJob(BodyJob):
    """A whole JSON body, rendered and written when the engine finishes the request."""

    __slots__ = ("answer", "driver", "rid", "seq")

    def __init__(
        self,
        host: JobHost,
        conn: Connection,
        record: TruthRecord,
        answer: Answer,
        headers: list[tuple[str, str]],
        t0: float,
    ) -> None:
        super().__init__(host, conn, record, answer.plan, 200, headers, b"", t0)
        self.answer = answer

    def attach(self, driver: Aborter, seq: Seq) -> EngineBodyJob:
        """Hand the answer to the engine: the body is written when the engine finishes it."""
        self.driver, self.rid, self.seq = driver, seq.rid, seq
        _clear_plan(self.record)
        return self

    def start(self) -> None:
        self.conn.job = self

    def cancel(self) -> None:
        _engine_truth(self.record, self.seq)
        super().cancel()

    def _abandoned(self) -> None:
        self.driver.abort(self.rid)

    def token(self, seq: Seq, when: float) -> None:
        if self.record.planned_ttft_ms is None:
            self.record.planned_ttft_ms = (when - self.t0) * 1000.0
        if seq.state == FINISHED:  # its last token: the body goes out in the step's first writes
            self.finish(seq, when)

    def finish(self, seq: Seq, when: float) -> None:
        if self.record.planned_end_ms is not None:
            return
        self.record.planned_end_ms = (when - self.t0) * 1000.0
        _engine_truth(self.record, seq)
        self.status, self.body = whole_body(dataclasses.replace(self.answer, cached_tokens=seq.cached_tokens))
        self.record.status = self.status
        self._send()
