"""A fake server for the real stream path: a `Connection` whose socket is one end of a loopback TCP pair, the other end
writing canned response bytes in the given pieces and then closing. Tests drive `stream_call` with any bytes, any
chunking and any HTTP framing, with kernel receive stamps as in production, and no server process."""

from __future__ import annotations

import gevent
import gevent.socket

import socket
from collections.abc import Iterable
from typing import Any

from loadlib.config import Limits, Timeouts, make_endpoint
from loadlib.providers.base import ChatRequest
from loadlib.providers.registry import get_adapter
from loadlib.transport.connection import Connection
from loadlib.transport.stream import StreamOutcome, stream_call

FAST = Timeouts(connect=2.0, ttft=5.0, idle=5.0, total=10.0)


def tcp_pair() -> tuple[Any, Any]:
    """(client, server) gevent sockets connected over loopback."""
    listener = gevent.socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = gevent.socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    listener.close()
    return client, server


def _write(server: Any, pieces: Iterable[bytes], close: bool) -> None:
    try:
        for piece in pieces:
            server.sendall(piece)
            gevent.sleep(0)  # let the reader run between pieces, so read boundaries vary with the pieces
        if close:
            server.shutdown(socket.SHUT_WR)
            gevent.sleep(0.5)  # keep the socket open until the client has read the end of file
    except OSError:
        pass  # the client hung up (a cap or a deadline closed the connection)
    finally:
        server.close()


def serving(
    pieces: Iterable[bytes],
    provider: str = "openai",
    timeouts: Timeouts = FAST,
    limits: Limits | None = None,
    close: bool = True,
) -> Connection:
    """A Connection whose next request is answered with `pieces` (written in order, then end of file if `close`)."""
    endpoint = make_endpoint("http://127.0.0.1:9/v1", provider=provider, model="m", api_key_env="none")
    conn = Connection(endpoint, timeouts, limits)
    answer_next(conn, pieces, close)
    return conn


def answer_next(conn: Connection, pieces: Iterable[bytes], close: bool = True) -> None:
    """The next connection `conn` opens is answered with `pieces` (a new loopback pair; see `serving`)."""
    client, server = tcp_pair()
    conn.kernel_stamps = conn._enable_kernel_stamps(client)
    conn.pool._create_socket = lambda: client
    gevent.spawn(_write, server, pieces, close)


def call(
    pieces: Iterable[bytes],
    provider: str = "openai",
    timeouts: Timeouts = FAST,
    limits: Limits | None = None,
    close: bool = True,
) -> StreamOutcome:
    """One stream_call answered with `pieces`, bounded by a gevent timeout so a hang fails instead of hanging."""
    conn = serving(pieces, provider, timeouts, limits, close)
    adapter = get_adapter(provider)
    req = adapter.build("/v1", "m", None, ChatRequest(messages=[{"role": "user", "content": "hi"}]))
    with gevent.Timeout(timeouts.total + 5):
        return stream_call(conn, adapter, req)


def http_head(status: int = 200, content_type: str = "text/event-stream", **headers: str) -> bytes:
    """A response head; `chunked=True`-style framing headers are given by the caller (e.g. transfer_encoding)."""
    lines = [f"HTTP/1.1 {status} X", f"Content-Type: {content_type}"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def chunked(*parts: bytes) -> list[bytes]:
    """Body parts in chunked transfer encoding, with the closing zero chunk."""
    return [b"%x\r\n%s\r\n" % (len(p), p) for p in parts if p] + [b"0\r\n\r\n"]
