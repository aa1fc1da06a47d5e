"""Ground truth: what the mock planned and actually did for each request, from its own monotonic clock.

All times are milliseconds after the request's last byte was read. Tests and benchmarks compare client-side
measurements with these records (fetched from `GET /mock/truth`). A full ring of 100k records must neither eat
memory nor stall the loop in the garbage collector (a full collection over 100k live objects takes ~50 ms), so
stamps sit in float32 arrays and a finished record is frozen into a tuple of atoms, which the collector untracks.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from typing import Any

import orjson

from loadlib.mock.render import bad_request

ID_PREFIXES = ("chatcmpl-", "msg_", "req_", "toolu_")


def bare_id(request_id: str) -> str:
    """Accept any id the mock hands out (response id, request-id header) and return the bare one."""
    for prefix in ID_PREFIXES:
        if request_id.startswith(prefix):
            return request_id[len(prefix) :]
    return request_id


_ARRAYS = frozenset({"planned_itl_ms", "event_times_ms"})


class TruthRecord:
    """One request. Mutable while the response is being written; `status` is the HTTP status sent."""

    __slots__ = (
        "api",
        "billed_prompt_tokens",
        "canary",
        "client_request_id",
        "connection_id",
        "end_ms",
        "engine",
        "event_cap",
        "event_times_ms",
        "fault",
        "finish_reason",
        "first_token_sent_ms",
        "headers_sent_ms",
        "model",
        "outcome",
        "output_events_sent",
        "output_tokens_sent",
        "planned_end_ms",
        "planned_itl_ms",
        "planned_output_tokens",
        "planned_ttft_ms",
        "prompt_tokens",
        "received_unix",
        "reported_prompt_tokens",
        "request_id",
        "response_cache",
        "status",
        "stream",
        "structured",
        "text_offset",
        "tokens_per_event",
    )

    def __init__(self, request_id: str, connection_id: int, api: str, event_cap: int) -> None:
        self.request_id = request_id
        self.connection_id = connection_id
        self.api = api
        self.event_cap = event_cap
        self.client_request_id: str | None = None
        self.model = ""
        self.stream = False
        self.response_cache: str | None = None  # hit | miss; None without a response cache
        self.structured = False  # answered with JSON (a schema, JSON mode or a forced tool)
        self.status = 0
        self.fault = "none"
        self.outcome = "pending"  # pending | complete | dropped | client_closed | error
        self.finish_reason: str | None = None
        self.prompt_tokens: int | None = None  # as sent (counted from the request)
        self.billed_prompt_tokens: int | None = None  # what the mock processed (truncate_to) and billed
        self.reported_prompt_tokens: int | None = None  # what its usage says (usage_prompt)
        self.canary: str | None = None  # quoted | cut | ignored; None without a canary in the prompt
        self.text_offset: int | None = None
        self.tokens_per_event = 1
        self.planned_ttft_ms: float | None = None
        self.planned_itl_ms: array = array("f")
        self.planned_end_ms: float | None = None
        self.planned_output_tokens = 0
        self.received_unix: float | None = None  # wall clock at the request head (the *_ms count from it)
        self.headers_sent_ms: float | None = None
        self.first_token_sent_ms: float | None = None
        self.end_ms: float | None = None
        self.event_times_ms: array = array("f")
        self.output_tokens_sent = 0
        self.output_events_sent = 0
        self.engine: bytes | None = None  # the batching engine's account (JSON): waits, steps, preemptions, cache

    def add_events(self, when_ms: float, events: int, tokens: int) -> None:
        """`events` output events carrying `tokens` tokens went out in one write at `when_ms`."""
        if events <= 0:
            return
        if self.first_token_sent_ms is None:
            self.first_token_sent_ms = when_ms
        times = self.event_times_ms
        room = self.event_cap - len(times)
        if room > 0:
            if events == 1:
                times.append(when_ms)
            else:
                times.extend([when_ms] * min(room, events))
        self.output_events_sent += events
        self.output_tokens_sent += tokens

    def freeze(self) -> tuple[Any, ...]:
        """A tuple of atoms (arrays become bytes: arrays are GC-tracked, bytes are not)."""
        return tuple(v.tobytes() if isinstance(v, array) else v for v in map(self.__getattribute__, self.__slots__))

    @classmethod
    def thaw(cls, values: tuple[Any, ...]) -> TruthRecord:
        rec = cls.__new__(cls)
        for name, value in zip(cls.__slots__, values, strict=True):
            setattr(rec, name, array("f", value) if name in _ARRAYS else value)
        return rec

    def to_dict(self) -> dict[str, Any]:
        times = [round(t, 4) for t in self.event_times_ms]
        mean_itl = None
        if len(times) > 1:
            mean_itl = (times[-1] - times[0]) / (len(times) - 1)
        planned = self.planned_itl_ms
        return {
            "request_id": self.request_id,
            "client_request_id": self.client_request_id,
            "connection_id": self.connection_id,
            "api": self.api,
            "model": self.model,
            "stream": self.stream,
            "structured": self.structured,
            "response_cache": self.response_cache,
            "status": self.status,
            "fault": self.fault,
            "outcome": self.outcome,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "billed_prompt_tokens": self.billed_prompt_tokens,
            "reported_prompt_tokens": self.reported_prompt_tokens,
            "canary": self.canary,
            "text_offset": self.text_offset,
            "tokens_per_event": self.tokens_per_event,
            "planned_ttft_ms": self.planned_ttft_ms,
            "planned_itl_ms": [round(p, 4) for p in planned],
            "planned_mean_itl_ms": sum(planned) / len(planned) if planned else None,
            "planned_end_ms": self.planned_end_ms,
            "planned_output_tokens": self.planned_output_tokens,
            "headers_sent_ms": self.headers_sent_ms,
            "first_token_sent_ms": self.first_token_sent_ms,
            "end_ms": self.end_ms,
            "received_unix": self.received_unix,
            "end_unix": None
            if self.received_unix is None or self.end_ms is None
            else self.received_unix + self.end_ms / 1e3,
            "event_times_ms": times,
            "mean_itl_ms": mean_itl,
            "output_tokens_sent": self.output_tokens_sent,
            "output_events_sent": self.output_events_sent,
            "engine": None if self.engine is None else orjson.loads(self.engine),
        }


class TruthLog:
    """Bounded ring of records, newest last, indexed by bare request id. In-flight records are live objects;
    `complete()` swaps in the frozen tuple. Bounded by record count and by the bytes of stored stamps."""

    def __init__(self, size: int = 100_000, max_stamp_bytes: int = 128 * 1024 * 1024) -> None:
        self.size = max(1, size)
        self.max_stamp_bytes = max_stamp_bytes
        self.stamp_bytes = 0
        self.prompts = 0  # completed requests with billed prompt tokens since the last clear, and their tokens
        self.prompt_tokens = 0
        self._records: OrderedDict[str, TruthRecord | tuple[Any, ...]] = OrderedDict()

    def add(self, record: TruthRecord) -> None:
        self._records[record.request_id] = record
        self._trim()

    def complete(self, record: TruthRecord, outcome: str) -> None:
        """The response is over (or abandoned): set its outcome and freeze it."""
        record.outcome = outcome
        if self._records.get(record.request_id) is record:
            frozen = record.freeze()
            self._records[record.request_id] = frozen
            if record.billed_prompt_tokens:
                self.prompts += 1
                self.prompt_tokens += record.billed_prompt_tokens
            self.stamp_bytes += _stamp_bytes(frozen)
            self._trim()

    def _trim(self) -> None:
        records = self._records
        while len(records) > self.size or (self.stamp_bytes > self.max_stamp_bytes and records):
            _, entry = records.popitem(last=False)
            if isinstance(entry, tuple):
                self.stamp_bytes -= _stamp_bytes(entry)

    @staticmethod
    def _live(entry: TruthRecord | tuple[Any, ...]) -> TruthRecord:
        return TruthRecord.thaw(entry) if isinstance(entry, tuple) else entry

    def get(self, request_id: str) -> TruthRecord | None:
        entry = self._records.get(bare_id(request_id))
        return None if entry is None else self._live(entry)

    def last(self, n: int) -> list[TruthRecord]:
        if n <= 0:
            return []
        out: list[TruthRecord] = []
        for entry in reversed(self._records.values()):
            out.append(self._live(entry))
            if len(out) >= n:
                break
        out.reverse()
        return out

    def clear(self) -> None:
        self._records.clear()
        self.stamp_bytes = 0
        self.prompts = self.prompt_tokens = 0

    def mean_prompt_tokens(self) -> float | None:
        """Mean billed prompt of the requests completed since the last clear (kept as a sum: the ring may be long)."""
        return self.prompt_tokens / self.prompts if self.prompts else None

    def __len__(self) -> int:
        return len(self._records)


class Stats:
    """Server counters for `GET /mock/stats`."""

    __slots__ = (
        "bytes_sent",
        "connections_accepted",
        "connections_open",
        "events_sent",
        "faults",
        "requests",
        "responses",
        "streams_active",
        "tokens_sent",
    )

    def __init__(self) -> None:
        self.reset(keep_open=0)

    def reset(self, keep_open: int) -> None:
        """`connections_open` and `streams_active` describe the present, so a reset keeps them."""
        self.connections_accepted = 0
        self.connections_open = keep_open
        self.requests = 0
        self.responses: dict[str, int] = {}
        self.faults: dict[str, int] = {}
        self.tokens_sent = 0
        self.events_sent = 0
        self.bytes_sent = 0
        self.streams_active = getattr(self, "streams_active", 0)

    def count_response(self, status: int) -> None:
        key = str(status)
        self.responses[key] = self.responses.get(key, 0) + 1

    def count_fault(self, fault: str) -> None:
        self.faults[fault] = self.faults.get(fault, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


_ARRAY_INDEX = tuple(i for i, name in enumerate(TruthRecord.__slots__) if name in _ARRAYS)


def _stamp_bytes(frozen: tuple[Any, ...]) -> int:
    return sum(len(frozen[i]) for i in _ARRAY_INDEX)


def truth_query(log: TruthLog, query: dict[str, list[str]], default_limit: int) -> tuple[int, bytes]:
    """`GET /mock/truth`: one record by `request_id` (404 when unknown) or the last `limit`; status and JSON body."""
    ids = query.get("request_id")
    if ids:
        rec = log.get(ids[-1])
        if rec is None:
            return 404, bad_request("openai", f"no ground truth for request {ids[-1]!r}")
        return 200, orjson.dumps(rec.to_dict())
    try:
        limit = int(query.get("limit", [str(default_limit)])[-1])
    except ValueError:
        return 400, bad_request("openai", "limit must be an integer")
    records = [r.to_dict() for r in log.last(limit)]
    return 200, orjson.dumps({"count": len(records), "records": records})
