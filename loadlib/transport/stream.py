"""The streamed call: send one request, read the SSE body as bytes arrive, stamp, time out, classify.

Timing follows docs/metrics.md, "Timing": t0 just before the request is handed to the connection; every read is stamped
when its bytes arrived, before any parsing, and an event carries the stamp of the read that brought its first byte.
Parsing happens after stamping, so its cost never leaks into a latency. After the terminal event the answer is whole
and the attempt ends there; the end of the HTTP message is still read, within a short grace, so the connection goes
back to the pool (closing at `[DONE]` forces a reconnect per request); a body that goes on past it is not waited for:
its connection is closed and the record says so.

`stream_call` never raises for anything a server or network does: every outcome is classified, and an exception of
our own making becomes `internal_error` (its type in the message) instead of a lost attempt.
"""

from __future__ import annotations

import errno
import logging
import socket
import ssl
from collections.abc import Callable
from time import perf_counter

from geventhttpclient.response import HTTPConnectionClosed, HTTPParseError

from loadlib.errors import ErrorClass, MalformedEventError, OversizedError, UnsupportedAPIError
from loadlib.histogram import Histogram
from loadlib.logs import RateLimitedLog
from loadlib.providers import registry
from loadlib.providers.base import ERROR, OUTPUT, TERMINAL, VISIBLE, Adapter, HttpRequest, StreamParser
from loadlib.providers.errors_body import short
from loadlib.providers.jsonread import MENDED_NOTE
from loadlib.transport.body import MAX_ERROR_BODY, empty_message, ended_empty, next_bytes, read_error, read_other
from loadlib.transport.connection import Connection, Response, request_bytes
from loadlib.transport.deadline import Deadline, DeadlineExceeded
from loadlib.transport.open_files import out_of_files
from loadlib.transport.outcome import MAX_ITL, StreamOutcome, add_note
from loadlib.transport.sse import SSEDecoder
from loadlib.transport.status import head_verdict, header

__all__ = ["MAX_ERROR_BODY", "MAX_ITL", "StreamOutcome", "add_note", "keep_beyond", "stream_call"]

OPENING_BYTES = 512
RATE_LIMIT_HEADERS = (
    "retry-after",
    "retry-after-ms",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-remaining-tokens",
    "x-ratelimit-reset-requests",
    "x-ratelimit-reset-tokens",
    "anthropic-ratelimit-requests-remaining",
    "anthropic-ratelimit-tokens-remaining",
)
CACHE_HEADERS = ("x-cache", "x-litellm-cache-key", "cf-cache-status")  # a gateway's response cache said hit or miss
KEPT_HEADERS = (*RATE_LIMIT_HEADERS, *CACHE_HEADERS)  # what a record keeps of a head
REQUEST_ID_HEADERS = ("x-request-id", "request-id", "x-mock-request-id")
MAX_HEADER_VALUE = 200
READY_S = 1.0  # bounds a read of bytes already waiting (it does not wait): the body's end without grace
_CONNECT_ERRNOS = (errno.ECONNREFUSED, errno.EHOSTUNREACH, errno.ENETUNREACH)
RETRIED = "sent again on a new connection after the kept-alive one was found closed"
_UNFORESEEN = RateLimitedLog(logging.getLogger("loadlib.transport.stream"), interval_s=30.0)


FirstOutput = Callable[[], None]


def stream_call(
    conn: Connection, adapter: Adapter, req: HttpRequest, on_first_output: FirstOutput | None = None
) -> StreamOutcome:
    """Perform one attempt. Never raises for network or protocol trouble: it is classified in the outcome.

    `on_first_output` is called once, when the first output arrives (hedging waits on it). An attempt whose
    connection was cancelled (`Connection.cancel`: a hedge that lost) ends as `cancelled`, keeping what it received."""
    out = StreamOutcome()
    out.t0 = perf_counter()
    deadline = Deadline(out.t0, conn.timeouts)
    resp = None
    try:
        resp = _send(out, conn, req, deadline)
        if resp is not None:
            _read_response(out, conn, resp, adapter, deadline, on_first_output)
    except Exception as exc:  # a bug of ours: counted as an attempt, never lost
        out.status, out.message = ErrorClass.INTERNAL_ERROR, f"{type(exc).__name__}: {short(str(exc))}"
        if not conn.cancelled:  # else the socket closed under the reader explains it (gevent may say so oddly)
            _UNFORESEEN.error("loadlib failed on a response (%s); please report it", out.message, exc_info=exc)
    finally:
        conn.finish(None if conn.cancelled else resp)  # a cancelled body was cut short: never reuse its socket
    if conn.cancelled:
        conn.cancelled = False
        out.status, out.message = ErrorClass.CANCELLED, "cancelled: another attempt of the same request answered first"
    if out.e2e_ms is None:
        out.e2e_ms = (perf_counter() - out.t0) * 1000.0
    return out


def _send(out: StreamOutcome, conn: Connection, req: HttpRequest, deadline: Deadline) -> Response | None:
    """Send the request and read the response head; None (the failure classified in `out`) when that fails."""
    data = request_bytes(req.method, req.path, conn.host, req.headers, req.body)
    try:
        resp, first, out.headers_read_at = _exchange(out, conn, data, req.method, deadline)
    except (OSError, HTTPParseError, DeadlineExceeded) as exc:
        _classify_send_failure(out, exc, conn, deadline)
        if out.stale_retry_ms is not None:
            out.message = f"{out.message}; {RETRIED}"
        return None
    except OversizedError as exc:  # the head never ended within --llm-max-head-kb
        out.status, out.message = ErrorClass.OVERSIZED, str(exc)
        return None
    out.ttfb_ms = (first - out.t0) * 1000.0
    out.http_status = resp.status_code
    _keep_headers(out, resp)
    _classify_head(out, conn, req, resp)
    return resp


def _exchange(
    out: StreamOutcome, conn: Connection, data: bytes, method: str, deadline: Deadline
) -> tuple[Response, float, float]:
    """Send the request and read its head (see _read_head). A kept-alive connection that proves stale (closed or
    reset before any byte of a response: the server or a middlebox forgot it while it was idle) is the client's
    pooling, not the endpoint's answer: the request goes once more, on a new connection, under the same limits; t0
    stays the first send, so the time lost is in every timing and `stale_retry_ms` says how much of it
    (docs/metrics.md, "Stale keep-alive connections")."""
    try:
        conn.send(data, deadline.head_at)
        return _read_head(out, conn, method, deadline)
    except (OSError, HTTPConnectionClosed) as exc:
        if not stale(out, conn, exc):
            raise
    out.stale_retry_ms = (perf_counter() - out.t0) * 1000.0
    conn.finish(None)  # closed: the pool opens a new connection for the send again
    conn.send(data, deadline.head_at)
    return _read_head(out, conn, method, deadline)


def stale(out: StreamOutcome, conn: Connection, exc: Exception) -> bool:
    """Whether a failed send met a stale kept-alive connection: the socket was a reused one, it was closed or reset
    (not a time limit, not bad HTTP), no byte of a response had come, and no hedge cancelled the attempt."""
    closed = isinstance(exc, HTTPConnectionClosed | ConnectionResetError | BrokenPipeError | ConnectionAbortedError)
    return closed and conn.reused and not out.response_bytes and not conn.cancelled


def _single(value: str | list[str] | None) -> str | None:
    """A header's value; a header sent twice counts by its first value."""
    return value[0] if isinstance(value, list) else value


def _read_head(out: StreamOutcome, conn: Connection, method: str, deadline: Deadline) -> tuple[Response, float, float]:
    """Read until the final (non-1xx) response head is parsed; returns it with the arrival of its first byte and of
    the last head read (body bytes read with the head carry that stamp). A head longer than --llm-max-head-kb raises
    HeadTooLarge (`oversized`) before more than the cap is parsed."""
    resp = Response(method)
    first: float | None = None
    last = 0.0
    while not resp.final_head:
        try:
            data, start, last = conn.recv(deadline.head_at)
        except TimeoutError:
            raise deadline.head_exceeded() from None
        if not data:
            raise HTTPConnectionClosed("connection closed before the response")
        out.response_bytes += len(data)
        if first is None:
            first = start
        resp.feed_head(data, conn.limits.head)
    return resp, first if first is not None else last, last


def _keep_headers(out: StreamOutcome, resp: Response) -> None:
    headers = {k.lower(): v for k, v in resp.items()}
    out.headers = {k: headers[k][:MAX_HEADER_VALUE] for k in KEPT_HEADERS if k in headers}
    for key in REQUEST_ID_HEADERS:
        if key in headers:
            out.server_request_id = headers[key][:MAX_HEADER_VALUE]
            break


def _classify_head(out: StreamOutcome, conn: Connection, req: HttpRequest, resp: Response) -> None:
    """What the head decides before the body is read (loadlib.transport.status), and which statuses cannot heal: a
    redirect (the --host is wrong) and 401/403/404. The body is still drained, so the connection can be reused."""
    status = resp.status_code
    if status in (401, 403, 404):
        out.fatal = _http_fatal(status, conn)
    encoding = _single(resp.get("content-encoding"))
    if 400 <= status < 600 or (200 <= status < 300 and not encoding):
        return  # the body decides (nearly every response: nothing more is built per request)
    url = f"{conn.endpoint.scheme}://{conn.host}{req.path}"
    accept = header(req.headers, "accept-encoding")
    verdict = head_verdict(status, _single(resp.get("location")), encoding, accept, url)
    if verdict is not None:
        out.status, out.message = verdict
        if out.status is ErrorClass.HTTP_REDIRECT:
            out.fatal = out.message


def _http_fatal(status: int, conn: Connection) -> str:
    url = conn.endpoint.base_url
    if status == 404:
        return f"HTTP 404 from {url}: no such path or model (check --host and --llm-model)"
    key = f"${conn.endpoint.api_key_env}" if conn.endpoint.api_key_env else "no key (--llm-api-key-env none)"
    return f"HTTP {status} from {url}: the endpoint refused the credentials (sent: {key})"


def _classify_send_failure(out: StreamOutcome, exc: Exception, conn: Connection, deadline: Deadline) -> None:
    name = type(exc).__name__
    url = conn.endpoint.base_url
    if conn.connecting:
        _classify_connect_failure(out, exc, conn)
    elif isinstance(exc, DeadlineExceeded):
        out.status, out.message = exc.status, str(exc)
    elif isinstance(exc, TimeoutError | socket.timeout):
        exceeded = deadline.head_exceeded()
        out.status, out.message = exceeded.status, str(exceeded)
    elif isinstance(exc, OSError) and exc.errno in _CONNECT_ERRNOS:
        out.status, out.message = ErrorClass.CONNECT_ERROR, f"cannot connect to {url} ({name})"
    elif isinstance(exc, HTTPParseError) and not isinstance(exc, HTTPConnectionClosed):
        out.status, out.message = ErrorClass.STREAM_BROKEN, f"the response is not valid HTTP ({_parse_error(exc)})"
    else:
        out.status, out.message = ErrorClass.CONNECT_ERROR, f"connection closed before the response ({name})"


def _classify_connect_failure(out: StreamOutcome, exc: Exception, conn: Connection) -> None:
    name = type(exc).__name__
    host = conn.endpoint.host
    if isinstance(exc, TimeoutError | socket.timeout):
        out.status, out.message = ErrorClass.TIMEOUT_CONNECT, f"connect timed out after {conn.timeouts.connect:g} s"
        return
    out.status = ErrorClass.CONNECT_ERROR
    if isinstance(exc, OSError) and exc.errno in (errno.EMFILE, errno.ENFILE):
        out.client_fault = out.message = out_of_files(exc.errno)
    elif isinstance(exc, ssl.SSLCertVerificationError):
        out.fatal = out.message = (
            f"TLS certificate verification failed for {host} ({exc.verify_message}): point SSL_CERT_FILE at the "
            "CA bundle that signed it"
        )
    elif isinstance(exc, ssl.SSLError):
        out.fatal = out.message = f"TLS handshake with {host} failed ({short(str(exc.reason or name))}): is it HTTPS?"
    elif isinstance(exc, socket.gaierror):
        out.fatal = out.message = f"cannot resolve the host name {host} ({short(str(exc))})"
    else:
        out.message = f"cannot connect to {conn.endpoint.base_url} ({name})"
        if isinstance(exc, OSError) and exc.errno in _CONNECT_ERRNOS:
            out.unreachable = f"cannot connect to {conn.endpoint.base_url}: {_errno_text(exc)}"


def _errno_text(exc: OSError) -> str:
    """`connection refused (nothing listens there)`, or the system's words for the other unreachable causes."""
    if exc.errno == errno.ECONNREFUSED:
        return "connection refused (nothing listens at that address and port: is the server running?)"
    return f"{(exc.strerror or type(exc).__name__).lower()} (check the address and the network)"


def _parse_error(exc: HTTPParseError) -> str:
    return short(str(exc.args[0]) if exc.args else type(exc).__name__)


def _read_response(
    out: StreamOutcome, conn: Connection, resp: Response, adapter: Adapter, dl: Deadline, hook: FirstOutput | None
) -> None:
    """The body, by kind: an error body, an event stream or a whole JSON body; trouble reading it is classified."""
    content_type = str(resp.get("content-type") or "")
    try:
        if (out.http_status or 0) >= 300 or out.status is not ErrorClass.OK:  # or the head already decided
            read_error(out, conn, resp, adapter, dl)
        elif "text/event-stream" in content_type:
            _read_stream(out, conn, resp, adapter, dl, hook)
        else:
            read_other(out, conn, resp, adapter, dl, content_type)
            if hook is not None and out.ttft_ms is not None:
                hook()
    except DeadlineExceeded as exc:
        out.status, out.message = exc.status, str(exc)
    except OversizedError as exc:
        out.status, out.message = ErrorClass.OVERSIZED, str(exc)
    except HTTPConnectionClosed as exc:
        out.status, out.message = ErrorClass.STREAM_BROKEN, f"connection lost mid-stream ({_parse_error(exc)})"
    except HTTPParseError as exc:
        out.status, out.message = ErrorClass.STREAM_BROKEN, f"invalid HTTP framing mid-body ({_parse_error(exc)})"
    except OSError as exc:
        out.status, out.message = ErrorClass.STREAM_BROKEN, f"connection lost mid-stream ({type(exc).__name__})"
    if out.result is not None and out.result.mended:
        add_note(out, MENDED_NOTE)


def _read_stream(
    out: StreamOutcome, conn: Connection, resp: Response, adapter: Adapter, dl: Deadline, hook: FirstOutput | None
) -> None:
    out.streamed = True
    parser = adapter.new_parser(conn.limits.text)
    decoder = SSEDecoder(conn.limits.line, conn.limits.event)
    try:
        status, message, terminal = _stream_events(out, conn, resp, parser, decoder, dl, hook)
    except UnsupportedAPIError as exc:
        out.status, out.message = ErrorClass.UNSUPPORTED_API, str(exc)
        out.result = parser.result()
        return
    except Exception:
        out.result = parser.result()  # what arrived before the stream broke (or was cancelled) was still generated
        raise
    result = out.result = parser.result()
    if out.e2e_ms is None:
        out.e2e_ms = (perf_counter() - out.t0) * 1000.0
    if status is ErrorClass.PROVIDER_ERROR:
        message = result.error.message if result.error else "error event in the stream"
    elif not (terminal or out.events or out.opening) and status is ErrorClass.OK and ended_empty(resp):
        status, message = ErrorClass.EMPTY_RESPONSE, empty_message(out)
    elif not terminal and status is ErrorClass.OK:
        status = ErrorClass.STREAM_BROKEN
        message = "stream ended without its terminal event" + (" (mid-event)" if decoder.pending else "")
        if not out.events:
            message = registry.sniff_unsupported(bytes(out.opening)) or message
    elif status is ErrorClass.OK and not out.output_stamps_ms:
        status, message = ErrorClass.EMPTY_RESPONSE, "the stream carried no output"
    out.status, out.message = status, message


def _stream_events(
    out: StreamOutcome,
    conn: Connection,
    resp: Response,
    parser: StreamParser,
    decoder: SSEDecoder,
    dl: Deadline,
    hook: FirstOutput | None = None,
) -> tuple[ErrorClass, str | None, bool]:
    """The hot loop: read, split into events, stamp the ones that carry output. Returns (status, message, whether
    the terminal event came)."""
    t0 = out.t0
    ms = 1000.0
    feed = parser.feed
    stamps = out.output_stamps_ms
    terminal, terminal_at = False, t0
    status = ErrorClass.OK
    message: str | None = None
    opening = out.opening
    while not terminal:
        data, start, now = next_bytes(out, conn, resp, dl, out.ttft_ms is None)
        if not data:
            break
        if not out.events and len(opening) < OPENING_BYTES:  # kept to explain a body that is not an event stream
            opening += data[:OPENING_BYTES]
        if start < now:  # the first byte arrived before the rest: an event starting with it carries its stamp
            events = [*decoder.feed(data[:1], start), *decoder.feed(data[1:], now)]
        else:
            events = decoder.feed(data, now)
        for stamp, event, payload in events:
            if terminal:
                break  # after the terminal event nothing is output
            out.events += 1
            if out.first_event_ms is None:
                out.first_event_ms = (stamp - t0) * ms
            try:
                flags = feed(event, payload)
            except MalformedEventError as exc:
                if status is ErrorClass.OK:
                    status, message = ErrorClass.MALFORMED_EVENT, short(str(exc))
                continue
            if not flags:
                continue
            if flags & OUTPUT:
                t = (stamp - t0) * ms
                if out.ttft_ms is None:
                    out.ttft_ms = t
                    if hook is not None:
                        hook()
                if len(stamps) <= MAX_ITL:
                    stamps.append(t)
                else:
                    keep_beyond(out, t)
                if flags & VISIBLE and out.ttfo_ms is None:
                    out.ttfo_ms = t
            if flags & ERROR and status is not ErrorClass.PROVIDER_ERROR:
                status = ErrorClass.PROVIDER_ERROR
            if flags & TERMINAL and not terminal:
                terminal, terminal_at = True, stamp
                out.e2e_ms = (stamp - t0) * ms
    if terminal:
        _end_of_body(out, conn, resp, dl, terminal_at)
    return status, message, terminal


def _end_of_body(out: StreamOutcome, conn: Connection, resp: Response, dl: Deadline, terminal_at: float) -> None:
    """After the terminal event nothing is used: the rest of the body is read only so the connection can be reused,
    and only until the end of its grace (Connection.end_grace, counted from the terminal event; with none, only the
    bytes already there). A body that goes on is not waited for: the connection is closed (the response is left
    incomplete) and the record's note says so; the user goes on at once."""
    if resp.close_delimited:  # the body ends only when the server closes: close now, never wait on a "keep-alive"
        add_note(out, conn.note_no_length(resp))
        return
    grace = conn.end_grace(terminal_at)
    try:
        while grace or resp.buffered or resp.message_complete or resp.framing_error or conn.readable():
            end_by = terminal_at + grace if grace else perf_counter() + READY_S  # no grace: what is already there
            if not next_bytes(out, conn, resp, dl, end_by=end_by)[0]:
                return
    except DeadlineExceeded:
        pass
    except (HTTPParseError, OSError, OversizedError):
        return  # only the connection's reuse is lost
    add_note(out, conn.note_late_end(perf_counter(), grace))


def keep_beyond(out: StreamOutcome, t: float) -> None:
    """An output event after the first MAX_ITL gaps: its gap goes to `itl_rest` and its stamp takes the one slot kept
    after the first MAX_ITL + 1, so a firehose of a million events keeps 4,098 stamps and one histogram, while TTFT,
    stream TPOT (first, last, count) and the tail (last) stay exact and every gap still reaches the statistics."""
    stamps = out.output_stamps_ms
    gap = t - stamps[-1]
    if out.itl_rest is None:
        out.itl_rest = Histogram()
        stamps.append(t)
    else:
        stamps[-1] = t
    out.itl_rest.record(gap)
