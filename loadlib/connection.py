"""One keep-alive HTTP connection per (user, endpoint), with the phase of a failure visible.

geventhttpclient's HTTPClient is used directly (not Locust's FastHttpSession) because the stream reader needs the
socket: FastHttpSession's `iter_content(n)` waits for n bytes (a 713 ms TTFT on an 8 ms stream, ecosystem.md section 1)
and `stream=True` makes Locust time the headers. We wrap connection set-up to count connections and to tell a connect
timeout from a slow first token.
"""

from __future__ import annotations

import gevent.socket
from gevent import get_hub, getcurrent
from gevent.monkey import get_original

import socket
from time import perf_counter, time
from typing import Any

from geventhttpclient import HTTPClient

from loadlib.arrival import ANCILLARY_SIZE, SO_TIMESTAMPNS, STAMPER, kernel_stamp
from loadlib.config import Endpoint, Timeouts

_select = get_original("select", "select")


def _idle_socket_alive(sock: Any) -> bool:
    """An idle keep-alive socket must not be readable (readable = FIN or stray bytes). Unlike the pool's own check,
    this zero-timeout select does not yield to the gevent hub, so a send is never queued behind other greenlets
    after t0 has been stamped."""
    try:
        fd = sock.fileno()
        if fd < 0:
            return False
        readable, _, _ = _select([fd], [], [], 0.0)
        return not readable
    except (OSError, ValueError):
        return False


class _Watchdog:
    """Body-read deadlines of every stream in this process, checked by one repeating timer.

    A socket timeout makes gevent build and arm a Timeout object for every wait, i.e. for every token of a paced
    stream (~10 % of a worker's CPU at 128 streams). One timer every TICK_S throws TimeoutError into the greenlets
    whose deadline has passed; they are, by construction, parked in their recv (armed just before it, disarmed
    just after, with no switch in between). Deadlines are therefore honoured to within TICK_S."""

    TICK_S = 0.01

    def __init__(self) -> None:
        self.waits: dict[Any, float] = {}
        self.timer: Any = None

    def arm(self, greenlet: Any, deadline: float) -> None:
        self.waits[greenlet] = deadline
        if self.timer is None:
            self.timer = get_hub().loop.timer(self.TICK_S, self.TICK_S)
            self.timer.start(self._tick)

    def disarm(self, greenlet: Any) -> None:
        self.waits.pop(greenlet, None)

    def _tick(self) -> None:
        if not self.waits:
            self.timer.stop()
            self.timer.close()
            self.timer = None
            return
        now = perf_counter()
        expired = [g for g, deadline in self.waits.items() if deadline <= now]
        for g in expired:
            if self.waits.pop(g, None) is not None:
                g.throw(TimeoutError("timed out"))


_WATCHDOG = _Watchdog()


class _StampedSocket(gevent.socket.socket):
    """A gevent socket whose `recv` (geventhttpclient reads response headers with it) keeps the kernel's arrival stamps
    of the first and the last read since the pool handed it out: TTFB by arrival, and the arrival of body bytes read
    together with the headers, however late a busy worker read them."""

    __slots__ = ("first_arrival", "last_arrival")

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.first_arrival: float | None = None
        self.last_arrival: float | None = None

    def recv(self, size: int, flags: int = 0) -> bytes:
        data, ancillary, _, _ = self.recvmsg(size, ANCILLARY_SIZE, flags)
        self.last_arrival = kernel_stamp(ancillary)
        if self.first_arrival is None:
            self.first_arrival = self.last_arrival
        return data


class Connection:
    """HTTP/1.1 client for one endpoint used by one user (concurrency 1: a user streams one request at a time)."""

    def __init__(self, endpoint: Endpoint, timeouts: Timeouts) -> None:
        self.endpoint = endpoint
        self.timeouts = timeouts
        self.header_timeout = min(timeouts.ttft, timeouts.total)
        self.client = HTTPClient(
            endpoint.host,
            port=endpoint.port,
            ssl=endpoint.scheme == "https",
            connection_timeout=timeouts.connect,
            network_timeout=self.header_timeout,
            concurrency=1,
            block_size=65536,
            headers={"User-Agent": "loadlib"},
        )
        self.connects = 0
        self.connecting = False
        self.kernel_stamps = False
        self.drained = False
        self.clock_offset = 0.0
        pool = self.client._connection_pool
        create = pool._create_socket

        def counted_create() -> Any:
            self.connecting = True
            sock = create()
            self.connecting = False
            self.connects += 1
            self.kernel_stamps = self._enable_kernel_stamps(sock)
            return sock

        get_socket = pool.get_socket

        def fresh_get_socket() -> Any:
            sock = get_socket()
            if isinstance(sock, _StampedSocket):
                sock.first_arrival = sock.last_arrival = None
            return sock

        pool._create_tcp_socket = self._create_tcp_socket
        pool._create_socket = counted_create
        pool._is_socket_alive = _idle_socket_alive
        pool.get_socket = fresh_get_socket

    def _create_tcp_socket(self, family: int, kind: int, proto: int) -> Any:
        if self.endpoint.scheme == "http" and SO_TIMESTAMPNS is not None:
            return _StampedSocket(family, kind, proto)
        return gevent.socket.socket(family, kind, proto)

    def request(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[Any, float, float]:
        """Send; return the response once its headers are read (body unread), when its first byte arrived and when
        the last header read's bytes did (body bytes read with the headers are buffered in the response). Upper
        bounds on the perf_counter clock: kernel stamps of the header reads, else the moment the headers were read."""
        self.connecting = False
        self.clock_offset = time() - perf_counter()  # wall clock minus perf_counter, refreshed per request
        resp = self.client.request(method, path, body=body, headers=headers)
        now = perf_counter()
        sock = resp._sock
        if not (self.kernel_stamps and isinstance(sock, _StampedSocket)) or sock.last_arrival is None:
            return resp, now, now
        last = min(sock.last_arrival - self.clock_offset, now)
        return resp, min(sock.first_arrival - self.clock_offset, last), last

    def preconnect(self) -> None:
        """Open the keep-alive connection now, outside any timed request (best effort: a failure shows up, classified,
        on the first request instead)."""
        pool = self.client._connection_pool
        try:
            sock = pool.get_socket()
        except Exception:  # reported, classified, by the first request
            return
        pool.return_socket(sock)

    def recv(self, sock: Any, size: int, deadline: float, first: bool = False) -> tuple[bytes, float, float]:
        """Bytes from the socket and when they arrived, on the perf_counter clock; TimeoutError past `deadline`.

        Returns (data, first byte's arrival, last byte's arrival), both upper bounds, never later than now. With
        kernel stamps, the last is the kernel's stamp of the newest packet read; `first=True` (a read the stream's
        first token may be in) also has the arrival thread stamp the first unread byte before later packets merge
        into it (see loadlib.arrival). Without kernel stamps (TLS, other platforms) both are the moment recv returned.
        The socket must have no timeout of its own."""
        me = getcurrent()
        _WATCHDOG.arm(me, deadline)
        if not self.kernel_stamps:
            try:
                data = sock.recv(size)
            finally:
                _WATCHDOG.disarm(me)
            now = perf_counter()
            return data, now, now
        early = None
        try:
            if first:  # bytes already waiting gain nothing from the thread; arm it only to wait
                raw = sock._sock
                try:
                    data, ancillary, _, _ = raw.recvmsg(size, ANCILLARY_SIZE)
                except BlockingIOError:
                    armed = STAMPER.arm(raw)
                    try:
                        sock._wait(sock._read_event)
                        data, ancillary, _, _ = sock.recvmsg(size, ANCILLARY_SIZE)
                    finally:
                        early = STAMPER.disarm(armed) if armed is not None else None
            else:
                if self.drained:  # the last read emptied the queue: wait for data instead of a read that fails
                    sock._wait(sock._read_event)
                data, ancillary, _, _ = sock.recvmsg(size, ANCILLARY_SIZE)
        finally:
            _WATCHDOG.disarm(me)
        self.drained = len(data) < size
        now = perf_counter()
        stamp = kernel_stamp(ancillary)
        last = now if stamp is None else min(stamp - self.clock_offset, now)
        if early is not None:
            return data, min(early - self.clock_offset, last), last
        return data, last, last

    def _enable_kernel_stamps(self, sock: Any) -> bool:
        if SO_TIMESTAMPNS is None or self.endpoint.scheme == "https":
            return False
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        except OSError:
            return False
        return True

    def close(self) -> None:
        self.client.close()
