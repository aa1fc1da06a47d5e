"""One client connection: HTTP/1.1 framing, keep-alive, pipelining in order, and write flow control.

A request is dispatched when its last body byte has been read; that moment is the request's time zero for every
planned delay and every ground-truth stamp. Requests queued behind a streaming response wait their turn. The
connection knows its server only as a `ConnectionHost`, so the dependency points one way: server -> connection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

import orjson

from loadlib.mock.httpwire import MAX_HEAD, HttpError, RequestHead, parse_head, response_head
from loadlib.mock.truth import Stats

_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class ConnectionHost(Protocol):
    """What a connection needs from the server that accepted it: its loop, its counters, and where requests go."""

    loop: asyncio.AbstractEventLoop
    stats: Stats
    loop_time: Callable[[], float]

    def connection_opened(self, conn: Connection) -> None: ...

    def connection_closed(self, conn: Connection) -> None: ...

    def enqueue(self, conn: Connection, req: RequestHead, t0: float) -> None: ...


class Job:
    """A response in progress; `cancel()` is called when the client goes away."""

    def cancel(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError


class Connection(asyncio.Protocol):
    __slots__ = (
        "_buf",
        "_continued",
        "_head",
        "busy",
        "closed",
        "held",
        "host",
        "id",
        "job",
        "keep_alive",
        "paused",
        "transport",
        "waiter",
    )

    def __init__(self, host: ConnectionHost, conn_id: int) -> None:
        self.host = host
        self.id = conn_id
        self.transport: Any = None
        self._buf = bytearray()
        self._head: RequestHead | None = None
        self._continued = False
        self.busy = False  # a response is being produced
        self.closed = False
        self.held = b""  # bytes to go out with the next write
        self.paused = False  # the transport's write buffer is over its high-water mark
        self.waiter: Callable[[], None] | None = None  # run when writing may resume
        self.job: Job | None = None
        self.keep_alive = True

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.host.connection_opened(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        job, self.job = self.job, None
        if job is not None:
            job.cancel()
        self.waiter = None
        self.host.connection_closed(self)

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        waiter, self.waiter = self.waiter, None
        if waiter is not None:
            waiter()

    def data_received(self, data: bytes) -> None:
        self._buf += data
        if not self.busy:
            self._process()

    # request side
    def _process(self) -> None:
        buf = self._buf
        while not self.busy and not self.closed:
            if self._head is None:
                while buf[:2] == b"\r\n":  # stray CRLF between pipelined requests
                    del buf[:2]
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    if len(buf) > MAX_HEAD:
                        self.fail(431, "request head too large")
                    return
                try:
                    self._head = parse_head(bytes(buf[:end]))
                except HttpError as exc:
                    self.fail(exc.status, str(exc))
                    return
                del buf[: end + 4]
                self._continued = False
            head = self._head
            if len(buf) < head.content_length:
                if not self._continued and head.headers.get("expect", "").lower() == "100-continue":
                    self._continued = True
                    self.transport.write(_CONTINUE)
                return
            head.body = bytes(buf[: head.content_length])
            del buf[: head.content_length]
            self._head = None
            self.busy = True
            self.keep_alive = head.keep_alive
            self.host.enqueue(self, head, self.host.loop_time())

    # response side
    def write(self, data: bytes) -> None:
        if self.held:
            data, self.held = self.held + data, b""
        if not self.closed:
            self.transport.write(data)
            self.host.stats.bytes_sent += len(data)

    def hold(self, data: bytes) -> None:
        """`data` goes out in front of the next write, in one packet (a stream's head with its first token: a
        client must not wait a second read for the token)."""
        self.held += data

    def respond(self, status: int, headers: list[tuple[str, str]], body: bytes, keep_alive: bool = True) -> None:
        """A whole response with Content-Length, then the next request."""
        keep = keep_alive and self.keep_alive
        self.write(response_head(status, headers, len(body), keep) + body)
        self.host.stats.count_response(status)
        self.finish(keep)

    def finish(self, keep_alive: bool = True) -> None:
        """The current response is complete: close, or go on with any pipelined request."""
        self.job = None
        self.busy = False
        if self.closed:
            return
        if not (keep_alive and self.keep_alive):
            self.transport.close()
            return
        if self._buf:
            self.host.loop.call_soon(self._process)

    def drop(self) -> None:
        """Close after flushing what was written: the client sees the body end without its terminator."""
        self.job = None
        if not self.closed:
            self.transport.close()

    def fail(self, status: int, message: str) -> None:
        """An unparseable request: answer and close (the byte stream can no longer be trusted)."""
        body = orjson.dumps(
            {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
        )
        self.busy = True
        self.respond(status, [("content-type", "application/json")], body, keep_alive=False)
