"""One keep-alive HTTP connection per (user, endpoint): send a request, read its bytes stamped with their arrival.

geventhttpclient provides the connection pool (connect, TLS, keep-alive checks) and the response parser (llhttp);
the request is sent and every byte read here, because the reader needs the socket itself: FastHttpSession's
`iter_content(n)` waits for n bytes (a 713 ms TTFT on an 8 ms stream, ecosystem.md section 1), `stream=True` makes
Locust time the headers, and geventhttpclient's own request call reads the head without arrival stamps and turns a
framing error after the head into an exception that loses the HTTP status.

Every wait is bounded by the caller's limit (loadlib.transport.deadline), and a reader that never has to wait (data
arriving faster than it is parsed) still hands the hub its turn: when the hub's loop has not gone round for BUSY_S while
this reader kept reading, it yields, so the run timer, the other users' limits and SIGTERM act promptly whatever a
server sends. The loop's iteration counter tells whether the hub ran (it counts only polls of the loop), so readers of
paced streams, which wait for every token, never pay for it.
"""

from __future__ import annotations

import gevent
from gevent import get_hub
from gevent.monkey import get_original

import logging
import socket
from select import POLLIN
from time import perf_counter, time
from typing import Any

from geventhttpclient import HTTPClient
from geventhttpclient.response import HTTPConnectionClosed, HTTPParseError, HTTPResponse

from loadlib.config import Endpoint, Limits, Timeouts
from loadlib.errors import OversizedError
from loadlib.logs import RateLimitedLog
from loadlib.transport.chunked import ChunkSizeLines
from loadlib.transport.deadline import BODY_END_GRACE_S, LATE_END_MEMORY_S, WATCHDOG
from loadlib.transport.stamps import ANCILLARY_SIZE, SO_TIMESTAMPNS, STAMPER, kernel_stamp

_poll = get_original("select", "poll")
BUSY_S = 0.005  # longest stretch of reading without a wait before the reader yields to the hub
YIELD_S = 1e-6  # gevent.sleep(0) only runs other greenlets; the loop polls after 50 of those, which a flood delays
READ_SIZE = 65536
STRAY_NOTE = "bytes followed the complete response: not parsed; the connection was closed, not reused"
NO_LENGTH_NOTE = "no length: the body ends only at close; the connection was closed after the terminal event"
LATE_END_NOTE = "the body did not end with its terminal event: the attempt ended there; the connection was closed"
_LOG = logging.getLogger("loadlib.transport.connection")


def _idle_socket_alive(sock: Any) -> bool:
    """An idle keep-alive socket must not be readable (readable = FIN or stray bytes). Unlike the pool's own check,
    this zero-timeout poll does not yield to the gevent hub, so a send is never queued behind other greenlets after
    t0 has been stamped; and it is poll, not select, because select fails on descriptors above 1023 (FD_SETSIZE),
    which made every socket of a worker past about 1,000 streams look dead and reconnect per request."""
    try:
        fd = sock.fileno()
        if fd < 0:
            return False
        poller = _poll()
        poller.register(fd, POLLIN)
        return not poller.poll(0)
    except (OSError, ValueError):
        return False


def host_header(endpoint: Endpoint) -> str:
    """Host as RFC 9110 wants it: the port only when it is not the scheme's default, IPv6 in brackets."""
    host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
    default = 443 if endpoint.scheme == "https" else 80
    return host if endpoint.port == default else f"{host}:{endpoint.port}"


def request_bytes(method: str, path: str, host: str, headers: dict[str, str], body: bytes) -> bytes:
    """An HTTP/1.1 request with a Content-Length body. Header names and values may not hold line breaks."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", "User-Agent: loadlib", f"Content-Length: {len(body)}"]
    for name, value in headers.items():
        if "\r" in name or "\n" in name or "\r" in value or "\n" in value or ":" in name:
            raise ValueError(f"header {name!r} holds a line break or colon")
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _recvmsg(sock: Any) -> tuple[bytes, list[tuple[int, int, bytes]]]:
    """recvmsg on the real socket under gevent's, waiting while there is nothing to read: what gevent's own
    `recvmsg` does, without its wrapper's frames (this runs once per paced token; bench/event_cost.py)."""
    raw = sock._sock
    while True:
        try:
            data, ancillary, _, _ = raw.recvmsg(READ_SIZE, ANCILLARY_SIZE)
            return data, ancillary
        except BlockingIOError:
            sock._wait(sock._read_event)


class _NoIteration:
    iteration = 0


_NO_ITERATION = _NoIteration()


class _AfterTheEnd(Exception):
    """Raised by the parser's message-begin callback when bytes follow a complete final response: llhttp would
    otherwise parse them as the next response and reset this one (its status, its headers, its completion)."""


class HeadTooLarge(OversizedError):
    """The response head went past --llm-max-head-kb before it ended (an endless header section)."""

    def __init__(self, limit_bytes: int) -> None:
        super().__init__("head", limit_bytes)
        self.args = (f"the response head crossed its size cap of {limit_bytes / 1024:g} KiB (--llm-max-head-kb)",)


def _interim(code: int) -> bool:
    """A 1xx head, which a final one follows. Any other code is final, invalid ones too (0 to 99, 600 and up): the
    head decides them (`http_invalid_status`) instead of leaving the client waiting for a head that never comes."""
    return 100 <= code < 200


class Response(HTTPResponse):
    """geventhttpclient's response parser, fed by our reads. A framing error after the head (a bad chunk size) is
    kept in `framing_error` instead of raised, so the status is still known; the body reader raises it.

    Bytes after the complete final response (`stray`) are not parsed: the answer stands, as received, and the
    connection is not reused (the parser has failed, so `should_close()` is true)."""

    def __init__(self, method: str) -> None:
        super().__init__(method)
        self.framing_error: HTTPParseError | None = None
        self.final_complete = False  # a final (non-1xx) response ended; anything after it is stray
        self.stray = False
        self.head_bytes = 0  # bytes fed before the final head ended (interim 1xx heads included)
        self.in_body = False  # the final head has been parsed: what follows is its body
        self.head_tail = b""  # the last bytes of the head being read, where its blank line may have begun
        self.chunk_lines: ChunkSizeLines | None = None  # a chunked body's size lines, as llhttp accepts them

    def feed(self, data: bytes) -> None:  # type: ignore[override]  # bytes only: the heads are found in them
        if self.framing_error is not None:
            raise self.framing_error
        if self.stray:
            return
        if data:  # b"" is the end of file
            if not self.in_body:
                data = self._feed_heads(data)
            if self.chunk_lines is not None and data:
                data = self.chunk_lines.feed(data)
            if not data:
                return  # all of it was a head, or the start of a size line held until it ends
        self._parse(data)

    def _feed_heads(self, data: bytes) -> bytes:
        """Parse the heads `data` holds or ends (interim 1xx ones, then the final one), each up to its blank line, and
        return what follows the final head: its body, whose size lines, when chunked, llhttp must get as it accepts
        them (loadlib.transport.chunked). llhttp ends every head line with CRLF, so its blank line is CRLF CRLF."""
        while data and not self.in_body:
            seen = self.head_tail + data
            end = seen.find(b"\r\n\r\n")
            if end < 0:
                self.head_tail = seen[-3:]
                self._parse(data)
                return b""
            cut = end + 4 - len(self.head_tail)
            self.head_tail = b""
            self._parse(data[:cut])
            data = data[cut:]
            self.in_body = self.final_head
        if self.in_body and "chunked" in str(self.get("transfer-encoding") or "").lower():
            self.chunk_lines = ChunkSizeLines()
        return data

    def _parse(self, data: bytes) -> None:
        """llhttp's parse of `data`: a framing error after the final head is kept, not raised (see the class)."""
        try:
            super().feed(data)
        except _AfterTheEnd:
            self.stray = True
        except HTTPParseError as exc:
            self._failed(exc)

    def _failed(self, exc: HTTPParseError) -> None:
        if self.final_complete:  # e.g. bytes after a `Connection: close` response: llhttp's closed state
            self.stray = True
        elif not self.headers_complete or _interim(self.get_code()):
            raise exc
        else:
            self.framing_error = exc

    def feed_head(self, data: bytes, cap: int) -> None:
        """Feed bytes read while the final head is incomplete; HeadTooLarge when it has not ended within `cap` bytes.
        Only the bytes within the cap are parsed before that is known: an endless header section costs no memory."""
        room = cap - self.head_bytes
        self.head_bytes += len(data)
        if len(data) <= room:
            self.feed(data)
            return
        if room > 0:  # never b"": that would tell the parser the connection ended
            self.feed(data[:room])
        if not self.final_head:
            raise HeadTooLarge(cap)
        self.feed(data[room:])

    @property
    def final_head(self) -> bool:
        """The head of the final (non-1xx) response has been parsed."""
        return self.headers_complete and not _interim(self.get_code())

    @property
    def close_delimited(self) -> bool:
        """The body ends only when the server closes (RFC 9112 section 6.3): no Content-Length, not chunked. Such a
        connection can never be reused, whatever `Connection: keep-alive` it claims."""
        encoding = str(self.get("transfer-encoding") or "").lower()
        return self.get("content-length") is None and "chunked" not in encoding and self.get_code() not in (204, 304)

    def _on_message_begin(self) -> None:
        if self.final_complete:
            raise _AfterTheEnd
        super()._on_message_begin()

    def _on_message_complete(self) -> None:
        super()._on_message_complete()
        self.final_complete = not _interim(self.get_code())

    def take_body(self) -> bytes:
        """The body bytes parsed so far (chunk framing removed), emptying the buffer."""
        data = bytes(self._body_buffer)
        del self._body_buffer[:]
        return data

    @property
    def buffered(self) -> bool:
        return bool(self._body_buffer)


class Connection:
    """HTTP/1.1 client for one endpoint used by one user (concurrency 1: a user streams one request at a time).

    `reused` says whether the last `send` went out on a kept-alive socket rather than a new one (the stream retries a
    request once when such a socket proves stale: loadlib.transport.stream). `keepalive_idle_s` (0: no limit) is the
    longest a socket may have been idle and still be reused (--llm-keepalive-idle-s): set below the idle timeout of
    the server or of a middlebox in front of it, no request meets a connection it forgot."""

    def __init__(
        self, endpoint: Endpoint, timeouts: Timeouts, limits: Limits | None = None, keepalive_idle_s: float = 0.0
    ) -> None:
        self.endpoint = endpoint
        self.timeouts = timeouts
        self.limits = limits or Limits()
        self.client = HTTPClient(
            endpoint.host,
            port=endpoint.port,
            ssl=endpoint.scheme == "https",
            connection_timeout=timeouts.connect,
            network_timeout=min(timeouts.ttft, timeouts.total),
            concurrency=1,
            block_size=READ_SIZE,
        )
        self.host = host_header(endpoint)
        self.connects = 0
        self.connecting = False
        self.reused = False
        self.keepalive_idle_s = keepalive_idle_s
        self.idle_since = 0.0  # perf_counter when the socket went back to the pool
        self.kernel_stamps = False
        self.sock: Any = None
        self.cancelled = False
        self.drained = True
        self.stray_log = RateLimitedLog(_LOG, interval_s=30.0)
        self.no_length_log = RateLimitedLog(_LOG, interval_s=30.0)
        self.late_end_log = RateLimitedLog(_LOG, interval_s=30.0)
        self.late_end_at = float("-inf")  # when a body last did not end within its grace after the terminal event
        loop = get_hub().loop
        self.loop = loop if hasattr(loop, "iteration") else _NO_ITERATION  # other backends: yield every BUSY_S
        self.seen_iteration = -1
        self.busy_since = 0.0
        self.clock_offset = 0.0
        pool = self.pool = self.client._connection_pool
        create = pool._create_socket

        def counted_create() -> Any:
            self.connecting = True
            sock = create()
            self.connecting = False
            self.connects += 1
            self.kernel_stamps = self._enable_kernel_stamps(sock)
            sock.settimeout(None)  # limits come from the watchdog, not a Timeout per wait
            return sock

        pool._create_socket = counted_create  # type: ignore[method-assign]  # the pool's hooks, counted and stamped
        pool._is_socket_alive = self._reusable  # type: ignore[method-assign]

    def _reusable(self, sock: Any) -> bool:
        """A pooled socket is reused when it has not been idle past `keepalive_idle_s` and looks alive."""
        limit = self.keepalive_idle_s
        if limit > 0 and perf_counter() - self.idle_since > limit:
            return False
        return _idle_socket_alive(sock)

    def _pool_back(self, sock: Any) -> None:
        self.idle_since = perf_counter()
        self.pool.return_socket(sock)

    def note_stray(self) -> str:
        """Say (rate-limited) that a response was followed by bytes it did not declare; the record's note."""
        self.stray_log.error(
            "a response from %s was followed by bytes it did not declare (a body longer than its Content-Length, or a "
            "response nobody asked for): the answer stands as received and the connection is closed, not reused",
            self.endpoint.base_url,
        )
        return STRAY_NOTE

    def note_no_length(self, response: Response) -> str:
        """Say (rate-limited) that a response without length claimed keep-alive: its body ends only when the server
        closes (RFC 9112 section 6.3), so the connection was closed after the terminal event instead of drained."""
        if str(response.get("connection") or "").lower() != "close":
            self.no_length_log.error(
                "a %s response from %s has no Content-Length and is not chunked, yet keeps the connection open: its "
                "body ends only when the server closes, so the connection is closed after the terminal event (a new "
                "one per request; E2E ends at the terminal event)",
                response.version,
                self.endpoint.base_url,
            )
        return NO_LENGTH_NOTE

    def end_grace(self, now: float) -> float:
        """How long after the terminal event the body's end may take: BODY_END_GRACE_S, or none (only bytes already
        there are read) while a body on this connection lately did not end in time, so such a server costs one grace
        per LATE_END_MEMORY_S, not one per request."""
        return 0.0 if now - self.late_end_at < LATE_END_MEMORY_S else BODY_END_GRACE_S

    def note_late_end(self, now: float, grace: float) -> str:
        """Say (rate-limited) that a body went on after its terminal event; the record's note. A whole grace that ran
        out is remembered (only that: the server gets its grace again LATE_END_MEMORY_S later)."""
        if grace > 0:
            self.late_end_at = now
        self.late_end_log.error(
            "a response from %s did not end its body with its terminal event ([DONE], message_stop): the answer is "
            "complete, so the attempt ended there and the connection was closed instead of waiting for the end (a "
            "new connection per request while this lasts)",
            self.endpoint.base_url,
        )
        return LATE_END_NOTE

    def readable(self) -> bool:
        """Bytes (or the end of file) are waiting on the socket: a read would not wait."""
        return self.sock is not None and not _idle_socket_alive(self.sock)

    def send(self, data: bytes, until: float) -> None:
        """Take the kept-alive socket (or connect) and send `data`; TimeoutError past `until`."""
        self.connecting = False
        self.clock_offset = time() - perf_counter()  # wall clock minus perf_counter, refreshed per request
        self.reused = False
        connects = self.connects
        self.sock = self.pool.get_socket()
        self.reused = self.connects == connects
        self.drained = True
        if self.cancelled:
            raise HTTPConnectionClosed("cancelled")
        me = WATCHDOG.arm(until)
        try:
            self.sock.sendall(data)
        finally:
            WATCHDOG.disarm(me)

    def cancel(self) -> None:
        """End the attempt in flight from another greenlet (a hedge that lost): its socket is closed, which wakes its
        reader with an error, and the attempt ends as `cancelled` (see loadlib.transport.stream)."""
        self.cancelled = True
        sock = self.sock
        if sock is not None:
            sock.close()

    def finish(self, response: Response | None) -> None:
        """Hand the socket back: to the pool when the response ended cleanly, else closed (it cannot be reused)."""
        sock, self.sock = self.sock, None
        if sock is None:
            return
        if response is not None and not response.should_close() and response.framing_error is None:
            self._pool_back(sock)
        else:
            self.pool.release_socket(sock)

    def recv(self, until: float, first: bool = False) -> tuple[bytes, float, float]:
        """Bytes from the socket and when they arrived, on the perf_counter clock; TimeoutError past `until`;
        HTTPConnectionClosed when there is no socket.

        Returns (data, first byte's arrival, last byte's arrival), both upper bounds, never later than now. With
        kernel stamps, the last is the kernel's stamp of the newest packet read; `first=True` (a read the stream's
        first token may be in) also has the arrival thread stamp the first unread byte before later packets merge
        into it (see loadlib.transport.stamps). Without kernel stamps (TLS, other platforms) both are the moment recv
        returned.
        """
        sock = self.sock
        if sock is None or self.cancelled:
            raise HTTPConnectionClosed("connection closed")
        self._let_hub_run()
        me = WATCHDOG.arm(until)
        try:
            if self.kernel_stamps:
                data, early, stamp = self._recv_stamped(sock, first)
            else:
                data, early, stamp = sock.recv(READ_SIZE), None, None
        finally:
            WATCHDOG.disarm(me)
        self.drained = len(data) < READ_SIZE
        now = perf_counter()
        last = now if stamp is None else min(stamp - self.clock_offset, now)
        if early is not None:
            return data, min(early - self.clock_offset, last), last
        return data, last, last

    def _let_hub_run(self) -> None:
        """Yield when the hub's loop has not gone round for BUSY_S while this reader kept reading."""
        iteration = self.loop.iteration
        if iteration != self.seen_iteration:
            self.seen_iteration = iteration
            self.busy_since = perf_counter()
        elif perf_counter() - self.busy_since > BUSY_S:
            gevent.sleep(YIELD_S)  # a timer, not sleep(0): the loop must go round (fire timers, poll sockets)

    def _recv_stamped(self, sock: Any, first: bool) -> tuple[bytes, float | None, float | None]:
        """recvmsg with the kernel's stamp; with `first`, the arrival thread's stamp of the first unread byte."""
        early = None
        if first:  # bytes already waiting gain nothing from the thread; arm it only to wait
            raw = sock._sock
            try:
                data, ancillary, _, _ = raw.recvmsg(READ_SIZE, ANCILLARY_SIZE)
            except BlockingIOError:
                armed = STAMPER.arm(raw)
                try:
                    sock._wait(sock._read_event)
                    data, ancillary, _, _ = sock.recvmsg(READ_SIZE, ANCILLARY_SIZE)
                finally:
                    early = STAMPER.disarm(armed) if armed is not None else None
        else:
            if self.drained:  # the last read emptied the queue: wait for data instead of a read that fails
                sock._wait(sock._read_event)
            data, ancillary = _recvmsg(sock)
        return data, early, kernel_stamp(ancillary)

    def preconnect(self) -> None:
        """Open the keep-alive connection now, outside any timed request (best effort: a failure shows up, classified,
        on the first request instead)."""
        try:
            sock = self.pool.get_socket()
        except Exception:  # reported, classified, by the first request
            return
        self._pool_back(sock)

    def _enable_kernel_stamps(self, sock: Any) -> bool:
        if SO_TIMESTAMPNS is None or self.endpoint.scheme == "https":
            return False
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        except OSError:
            return False
        return True

    def close(self) -> None:
        self.finish(None)
        self.client.close()
