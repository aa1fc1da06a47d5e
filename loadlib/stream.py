"""The streamed call: send one request, read the SSE body as bytes arrive, stamp, time out, classify.

Timing follows DESIGN.md section 2: t0 just before the request is handed to the HTTP client; every read is stamped
the moment `recv` returns, before any parsing, and an event carries the stamp of the read that brought its first byte.
Parsing happens after stamping, so its cost never leaks into a latency. The body is always drained to the end of the
HTTP message so the connection goes back to the pool (closing at `[DONE]` forces a reconnect per request).
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass, field
from time import perf_counter

from geventhttpclient.response import HTTPConnectionClosed, HTTPParseError

from loadlib.connection import Connection
from loadlib.errors import ErrorClass, MalformedEventError, UnsupportedAPIError
from loadlib.providers import registry
from loadlib.providers.base import ERROR, OUTPUT, TERMINAL, VISIBLE, Adapter, HttpRequest, StreamResult
from loadlib.sse import SSEDecoder

MAX_ERROR_BODY = 65536
DRAIN_AFTER_TERMINAL_S = 5.0
RATE_LIMIT_HEADERS = (
    "retry-after",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    "anthropic-ratelimit-requests-remaining",
    "anthropic-ratelimit-tokens-remaining",
)
REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-mock-request-id")


@dataclass(slots=True)
class StreamOutcome:
    """Raw measurements of one attempt, in ms from t0. Turned into a RequestRecord by the caller."""

    status: ErrorClass = ErrorClass.OK
    message: str | None = None
    http_status: int | None = None
    t0: float = 0.0
    ttfb_ms: float | None = None
    first_event_ms: float | None = None
    ttft_ms: float | None = None
    ttfo_ms: float | None = None
    e2e_ms: float | None = None
    output_stamps_ms: list[float] = field(default_factory=list)
    events: int = 0
    response_bytes: int = 0
    result: StreamResult | None = None
    server_request_id: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    headers_read_at: float = 0.0  # arrival of the bytes read with the headers (perf_counter), stamp of a body start


class _Deadline(Exception):
    def __init__(self, status: ErrorClass, message: str) -> None:
        super().__init__(message)
        self.status = status


def _timeout_class(out: StreamOutcome, now: float, conn: Connection) -> _Deadline:
    """Which limit a silent socket crossed first: total, TTFT (no output yet) or idle."""
    t = conn.timeouts
    elapsed = now - out.t0
    if elapsed >= t.total - 1e-3:
        return _Deadline(ErrorClass.TIMEOUT_TOTAL, f"no end of stream after {t.total:g} s")
    if out.ttft_ms is None and elapsed >= t.ttft - 1e-3:
        return _Deadline(ErrorClass.TIMEOUT_TTFT, f"no output token after {t.ttft:g} s")
    return _Deadline(ErrorClass.TIMEOUT_IDLE, f"no data for {t.idle:g} s mid-stream")


def _recv_timeout(out: StreamOutcome, now: float, conn: Connection) -> float:
    t = conn.timeouts
    limit = min(t.idle, out.t0 + t.total - now)
    if out.ttft_ms is None:
        limit = min(limit, out.t0 + t.ttft - now)
    elif out.e2e_ms is not None:  # terminal event seen: only the end of the HTTP message is still awaited
        limit = min(limit, DRAIN_AFTER_TERMINAL_S)
    return max(limit, 1e-3)


def stream_call(conn: Connection, adapter: Adapter, req: HttpRequest) -> StreamOutcome:
    """Perform one attempt. Never raises for network or protocol trouble: it is classified in the outcome."""
    out = StreamOutcome()
    out.t0 = t0 = perf_counter()
    try:
        resp, arrived, out.headers_read_at = conn.request(req.method, req.path, req.body, req.headers)
    except Exception as exc:
        _classify_send_failure(out, exc, conn)
        out.e2e_ms = (perf_counter() - t0) * 1000.0
        return out
    out.ttfb_ms = (arrived - t0) * 1000.0
    out.http_status = status = resp.status_code
    headers = {k.lower(): v for k, v in resp.items()}
    out.headers = {k: headers[k] for k in RATE_LIMIT_HEADERS if k in headers}
    for key in REQUEST_ID_HEADERS:
        if key in headers:
            out.server_request_id = headers[key]
            break
    sock = resp._sock
    try:
        if status >= 300:
            _read_error(out, resp, adapter, conn)
        else:
            _read_stream(out, resp, adapter, conn, headers.get("content-type", ""))
    except _Deadline as d:
        out.status, out.message = d.status, str(d)
        _discard(resp)
    except (HTTPConnectionClosed, HTTPParseError, ConnectionError, OSError) as exc:
        out.status = ErrorClass.STREAM_BROKEN
        out.message = f"connection lost mid-stream ({type(exc).__name__})"
        _discard(resp)
    finally:
        if sock is not None:
            sock.settimeout(conn.header_timeout)
    if out.e2e_ms is None:
        out.e2e_ms = (perf_counter() - t0) * 1000.0
    return out


def _discard(resp: object) -> None:
    """Close a connection whose body was not read to the end: it cannot be reused."""
    sock = resp._sock  # type: ignore[attr-defined]
    pool = getattr(resp, "_pool", None)
    resp._sock = None  # type: ignore[attr-defined]
    if sock is not None:
        if pool is not None:
            pool.release_socket(sock)
        else:
            sock.close()


def _classify_send_failure(out: StreamOutcome, exc: Exception, conn: Connection) -> None:
    name = type(exc).__name__
    if conn.connecting:
        if isinstance(exc, TimeoutError | socket.timeout):
            out.status, out.message = ErrorClass.TIMEOUT_CONNECT, f"connect timed out after {conn.timeouts.connect:g} s"
        else:
            out.status, out.message = ErrorClass.CONNECT_ERROR, f"cannot connect to {conn.endpoint.base_url} ({name})"
        return
    if isinstance(exc, TimeoutError | socket.timeout):
        elapsed = perf_counter() - out.t0
        if elapsed >= conn.timeouts.total - 1e-3 and conn.timeouts.total <= conn.timeouts.ttft:
            out.status, out.message = ErrorClass.TIMEOUT_TOTAL, f"no response after {conn.timeouts.total:g} s"
        else:
            out.status, out.message = ErrorClass.TIMEOUT_TTFT, f"no response headers after {conn.header_timeout:g} s"
        return
    if isinstance(exc, OSError) and exc.errno in (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH):
        out.status, out.message = ErrorClass.CONNECT_ERROR, f"cannot connect to {conn.endpoint.base_url} ({name})"
        return
    out.status, out.message = ErrorClass.CONNECT_ERROR, f"connection closed before the response ({name})"


def _recv(out: StreamOutcome, resp: object, conn: Connection, first: bool = False) -> tuple[bytes, float, float]:
    """Next bytes of the body as they arrive (never waits for a fixed size), with the arrival of their first and
    of their last byte (see `Connection.recv`; `first=True` while the stream's first token is awaited).

    Reads the socket of geventhttpclient's response directly and lets its C parser strip chunked framing;
    b"" means the HTTP message is complete."""
    buf = resp._body_buffer  # type: ignore[attr-defined]
    start = stamp = out.headers_read_at  # what is already buffered came with the headers
    while True:
        if buf:
            data = bytes(buf)
            del buf[:]
            if stamp > out.t0:
                return data, start, stamp
            now = perf_counter()
            return data, now, now
        if resp.message_complete:  # type: ignore[attr-defined]
            now = perf_counter()
            return b"", now, now
        sock = resp._sock  # type: ignore[attr-defined]
        if sock is None:
            raise HTTPConnectionClosed("connection closed")
        if sock.timeout is not None:
            sock.settimeout(None)  # deadlines come from the connection's watchdog, not a Timeout per wait
        now = perf_counter()
        try:
            data, start, stamp = conn.recv(sock, 65536, now + _recv_timeout(out, now, conn), first)
        except TimeoutError:
            raise _timeout_class(out, perf_counter(), conn) from None
        if not data:
            raise HTTPConnectionClosed("connection closed before the end of the body")
        out.response_bytes += len(data)
        resp.feed(data)  # type: ignore[attr-defined]


def _read_error(out: StreamOutcome, resp: object, adapter: Adapter, conn: Connection) -> None:
    body = bytearray()
    while len(body) < MAX_ERROR_BODY:
        data, _, _ = _recv(out, resp, conn)
        if not data:
            break
        body += data
    else:
        _discard(resp)
    err = adapter.classify_error(out.http_status or 0, bytes(body))
    out.status, out.message = err.error_class, err.message


def _read_stream(out: StreamOutcome, resp: object, adapter: Adapter, conn: Connection, content_type: str) -> None:
    t0 = out.t0
    ms = 1000.0
    parser = adapter.new_parser()
    if "text/event-stream" not in content_type:
        try:
            registry.check_content_type(content_type)
        except UnsupportedAPIError as exc:
            out.status, out.message = ErrorClass.UNSUPPORTED_API, str(exc)
            _discard(resp)
            return
        _read_whole_body(out, resp, adapter, conn)
        return
    decoder = SSEDecoder()
    feed = parser.feed
    stamps = out.output_stamps_ms
    terminal_at: float | None = None
    status = ErrorClass.OK
    message: str | None = None
    while True:
        if terminal_at is not None:
            try:
                data, start, now = _recv(out, resp, conn)
            except (_Deadline, HTTPConnectionClosed, HTTPParseError, OSError):
                _discard(resp)  # terminal event seen; only the connection's reuse is lost
                break
        else:
            data, start, now = _recv(out, resp, conn, out.ttft_ms is None)
        if not data:
            break
        if start < now:  # the first byte arrived before the rest: an event starting with it carries its stamp
            events = [*decoder.feed(data[:1], start), *decoder.feed(data[1:], now)]
        else:
            events = decoder.feed(data, now)
        for stamp, event, payload in events:
            out.events += 1
            if out.first_event_ms is None:
                out.first_event_ms = (stamp - t0) * ms
            try:
                flags = feed(event, payload)
            except MalformedEventError as exc:
                if status is ErrorClass.OK:
                    status, message = ErrorClass.MALFORMED_EVENT, str(exc)
                continue
            except UnsupportedAPIError as exc:
                out.status, out.message = ErrorClass.UNSUPPORTED_API, str(exc)
                _discard(resp)
                out.result = parser.result()
                return
            if not flags:
                continue
            if flags & OUTPUT:
                t = (stamp - t0) * ms
                if out.ttft_ms is None:
                    out.ttft_ms = t
                stamps.append(t)
                if flags & VISIBLE and out.ttfo_ms is None:
                    out.ttfo_ms = t
            if flags & ERROR and status is not ErrorClass.PROVIDER_ERROR:
                status = ErrorClass.PROVIDER_ERROR
            if flags & TERMINAL and terminal_at is None:
                terminal_at = stamp
                out.e2e_ms = (stamp - t0) * ms
    result = out.result = parser.result()
    if out.e2e_ms is None:
        out.e2e_ms = (perf_counter() - t0) * ms
    if status is ErrorClass.PROVIDER_ERROR:
        message = result.error.message if result.error else "error event in the stream"
    elif terminal_at is None and status is ErrorClass.OK:
        status = ErrorClass.STREAM_BROKEN
        message = "stream ended without its terminal event" + (" (mid-event)" if decoder.pending else "")
    elif status is ErrorClass.OK and not stamps:
        status, message = ErrorClass.EMPTY_RESPONSE, "the stream carried no output"
    out.status, out.message = status, message


def _read_whole_body(out: StreamOutcome, resp: object, adapter: Adapter, conn: Connection) -> None:
    """A non-streaming JSON response: TTFT is when the whole body has arrived."""
    body = bytearray()
    while True:
        data, _, now = _recv(out, resp, conn)
        if not data:
            break
        body += data
    out.e2e_ms = out.ttft_ms = out.ttfo_ms = out.first_event_ms = (now - out.t0) * 1000.0
    try:
        result = out.result = adapter.parse_response(bytes(body))
    except UnsupportedAPIError as exc:
        out.status, out.message = ErrorClass.UNSUPPORTED_API, str(exc)
        return
    except (MalformedEventError, ValueError) as exc:
        out.status, out.message = ErrorClass.MALFORMED_EVENT, str(exc)[:200]
        return
    out.events = 1
    out.output_stamps_ms.append(out.e2e_ms)
    if result.error is not None:
        out.status, out.message = ErrorClass.PROVIDER_ERROR, result.error.message
    elif not (any(result.text_by_choice.values()) or result.tool_calls or result.refusal):
        out.status, out.message = ErrorClass.EMPTY_RESPONSE, "the response carried no output"
