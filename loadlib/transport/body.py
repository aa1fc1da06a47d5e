"""The body of a response, read as it arrives: the next bytes of any body, and the bodies that are not an event stream
(an error body, a whole JSON body), classified.

Every read is stamped and bounded (loadlib.transport.connection, loadlib.transport.deadline); the response's parser
strips the framing. A whole body is one event when it parses; one that is not the API's JSON carries no token.
"""

from __future__ import annotations

from time import perf_counter

from geventhttpclient.response import HTTPConnectionClosed

from loadlib.errors import ErrorClass, MalformedEventError, NotJSONError, OversizedError, UnsupportedAPIError
from loadlib.providers import registry
from loadlib.providers.base import Adapter
from loadlib.providers.errors_body import short
from loadlib.providers.kept import capped
from loadlib.transport.connection import Connection, Response
from loadlib.transport.deadline import Deadline
from loadlib.transport.outcome import StreamOutcome, add_note

MAX_ERROR_BODY = 65536


def next_bytes(
    out: StreamOutcome,
    conn: Connection,
    resp: Response,
    deadline: Deadline,
    first: bool = False,
    end_by: float | None = None,
) -> tuple[bytes, float, float]:
    """Next body bytes as they arrive (never waiting for a fixed size), with the arrival of their first and of their
    last byte (see `Connection.recv`; `first=True` while the stream's first token is awaited; no wait past `end_by`);
    b"" at the end of the HTTP message. The response's parser strips chunked framing; end of file ends a
    close-delimited body."""
    while True:
        if resp.buffered:
            data = resp.take_body()
            stamp, out.headers_read_at = out.headers_read_at, 0.0  # what is buffered first came with the headers
            if stamp > out.t0:
                return data, stamp, stamp
            now = perf_counter()
            return data, now, now
        if resp.message_complete:
            if resp.stray:
                add_note(out, conn.note_stray())
            now = perf_counter()
            return b"", now, now
        if resp.framing_error is not None:
            raise resp.framing_error
        awaiting = out.ttft_ms is None
        try:
            data, start, stamp = conn.recv(deadline.until(perf_counter(), awaiting, end_by), first)
        except TimeoutError:
            raise deadline.exceeded(perf_counter(), awaiting) from None
        out.response_bytes += len(data)
        if out.response_bytes > conn.limits.response:
            raise OversizedError("response", conn.limits.response)
        resp.feed(data)  # b"" (end of file) completes a close-delimited body; cut short, it raises HTTPParseError
        if not data and not resp.message_complete:
            raise HTTPConnectionClosed("connection closed before the end of the body")
        if resp.buffered:
            data = resp.take_body()
            return data, start, stamp


def read_error(out: StreamOutcome, conn: Connection, resp: Response, adapter: Adapter, dl: Deadline) -> None:
    body = bytearray()
    while len(body) < MAX_ERROR_BODY:
        data, _, _ = next_bytes(out, conn, resp, dl)
        if not data:
            break
        body += data
    if out.status is ErrorClass.OK:  # not decided by the head (a redirect, an invalid status, an unread encoding)
        err = adapter.classify_error(out.http_status or 0, bytes(body[:MAX_ERROR_BODY]))
        out.status, out.message = err.error_class, err.message


def read_other(
    out: StreamOutcome, conn: Connection, resp: Response, adapter: Adapter, dl: Deadline, content_type: str
) -> None:
    """A 2xx body that is not an event stream: NDJSON is refused in one line, anything else read as one JSON body."""
    try:
        registry.check_content_type(content_type)
    except UnsupportedAPIError as exc:
        out.status, out.message = ErrorClass.UNSUPPORTED_API, str(exc)
        return
    _read_whole_body(out, conn, resp, adapter, dl, content_type)


def _read_whole_body(
    out: StreamOutcome, conn: Connection, resp: Response, adapter: Adapter, dl: Deadline, content_type: str
) -> None:
    """A non-streaming JSON response: one event when it parses, whose output (if any) came when the whole body had
    arrived: TTFT then, no ITL, no TPOT. A body that is not the API's JSON carries no token: E2E only."""
    body = bytearray()
    now = perf_counter()
    while True:
        data, _, now = next_bytes(out, conn, resp, dl)
        if not data:
            break
        body += data
    out.e2e_ms = (now - out.t0) * 1000.0
    if not body and ended_empty(resp):
        out.status, out.message = ErrorClass.EMPTY_RESPONSE, empty_message(out)
        return
    try:
        result = out.result = capped(adapter.parse_response(bytes(body)), conn.limits.text)
    except UnsupportedAPIError as exc:
        out.status, out.message = ErrorClass.UNSUPPORTED_API, str(exc)
        return
    except MalformedEventError as exc:
        named = isinstance(exc, NotJSONError) and _not_the_api(content_type, len(body))
        out.status, out.message = ErrorClass.MALFORMED_EVENT, named or short(str(exc))
        return
    out.events = 1
    out.first_event_ms = out.e2e_ms
    if result.error is not None:
        out.status, out.message = ErrorClass.PROVIDER_ERROR, result.error.message
    elif not (any(result.text_by_choice.values()) or result.tool_calls or result.refusal):
        out.status, out.message = ErrorClass.EMPTY_RESPONSE, "the response carried no output"
    else:
        out.ttft_ms = out.ttfo_ms = out.e2e_ms
        out.output_stamps_ms.append(out.e2e_ms)


def ended_empty(resp: Response) -> bool:
    """The body ended where its framing said, with no byte: Content-Length 0 or a chunked body of no chunk (a
    close-delimited one that ended at once may be a server that died: not said to be empty)."""
    return resp.message_complete and not resp.close_delimited


def empty_message(out: StreamOutcome) -> str:
    return f"HTTP {out.http_status} with an empty body"


def _not_the_api(content_type: str, size: int) -> str | None:
    """Why a 2xx body that is not JSON is no answer, when its Content-Type tells: an HTML page (a proxy, a login or
    an error page), plain text. None when it claims JSON (or nothing): the adapter's message says what is wrong."""
    media = content_type.split(";", 1)[0].strip().lower()
    if not media or media.endswith("json"):
        return None
    hint = ": a proxy, login or error page?" if media in ("text/html", "application/xhtml+xml") else ""
    return f"the response is {short(media)}, not JSON or an event stream ({size} bytes){hint}"
