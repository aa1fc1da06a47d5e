"""What one attempt measured (`StreamOutcome`), in ms from its t0: loadlib.transport.stream fills it, the caller turns
it into a RequestRecord."""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

from loadlib.errors import ErrorClass
from loadlib.histogram import Histogram
from loadlib.providers.base import StreamResult

MAX_ITL = 4096  # gaps a record lists; later ones only in `itl_rest` (docs/metrics.md, "Memory")


@dataclass(slots=True)
class StreamOutcome:
    """Raw measurements of one attempt, in ms from t0. Turned into a RequestRecord by the caller.

    `fatal` names a cause that cannot heal by itself (certificate, name resolution, credentials, unknown path or
    model): users back off, and a run whose first seconds fail only that way stops. `unreachable` names an address
    where nothing accepts the connection: a run whose first seconds see only that stops too, but users do not back
    off (it heals when the server comes back, and a pool fails over at once)."""

    status: ErrorClass = ErrorClass.OK
    message: str | None = None
    http_status: int | None = None
    t0: float = 0.0
    ttfb_ms: float | None = None
    first_event_ms: float | None = None
    ttft_ms: float | None = None
    ttfo_ms: float | None = None
    e2e_ms: float | None = None
    output_stamps_ms: array = field(default_factory=lambda: array("d"))  # the first MAX_ITL + 1, then the latest
    itl_rest: Histogram | None = None  # the gaps after the first MAX_ITL, whose stamps are not kept
    streamed: bool = False  # the body was an event stream (a stream tail exists)
    events: int = 0
    response_bytes: int = 0
    result: StreamResult | None = None
    server_request_id: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    headers_read_at: float = 0.0  # arrival of the bytes read with the headers (perf_counter), stamp of a body start
    fatal: str | None = None
    unreachable: str | None = None
    opening: bytearray = field(default_factory=bytearray)  # the body's first bytes while no event has come
    client_fault: str | None = None  # the load generator itself failed (out of open files): the run cannot stand
    note: str | None = None  # trouble that did not spoil the answer: fixed lines, joined by "; " (docs/records.md)
    stale_retry_ms: float | None = None  # from t0 to the send again on a new connection, the reused one being stale


def add_note(out: StreamOutcome, line: str) -> None:
    """Add one of the fixed lines of the record's `note`, once."""
    if out.note is None:
        out.note = line
    elif line not in out.note.split("; "):
        out.note = f"{out.note}; {line}"
