"""A kept-alive connection the server (or a middlebox) forgot while it was idle, through the real stream path against a
loopback server that answers each request as told: a request that meets one fails before any byte of a response,
and is sent again once on a new connection, with t0 kept (docs/metrics.md, "Stale keep-alive connections"). Never
for a new connection, after a response byte, on a time limit, or twice; and --llm-keepalive-idle-s keeps a
connection idle too long from being reused at all."""

from __future__ import annotations

import gevent
import gevent.server

import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest

from loadlib.config import Timeouts, make_endpoint
from loadlib.errors import ErrorClass
from loadlib.providers.base import ChatRequest
from loadlib.providers.registry import get_adapter
from loadlib.transport.connection import Connection
from loadlib.transport.outcome import StreamOutcome
from loadlib.transport.stream import RETRIED, stream_call
from tests.support.wire import chunked, http_head

FAST = Timeouts(connect=2.0, ttft=1.0, idle=1.0, total=5.0)
ANSWER = http_head(transfer_encoding="chunked") + b"".join(
    chunked(b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n', b"data: [DONE]\n\n")
)


class Scripted:
    """A loopback server answering its n-th request (counted over all connections) as `script[n]` says: `ok` (a
    complete stream, kept alive), `ok-fin` (a complete stream, then the connection closed while idle, as nginx
    does), `rst` (read, then reset), `fin` (read, then closed), `byte` (one byte of a head, then closed), `silent`
    (read, never answered). Requests past the script are answered `ok`."""

    def __init__(self, *script: str) -> None:
        self.script = list(script)
        self.requests = 0
        self.connections = 0
        self.server = gevent.server.StreamServer(("127.0.0.1", 0), self._serve)
        self.server.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/v1"

    def _serve(self, sock: Any, _: Any) -> None:
        self.connections += 1
        rfile = sock.makefile("rb")
        try:
            while _read_request(rfile):
                action = self.script[self.requests] if self.requests < len(self.script) else "ok"
                self.requests += 1
                if not self._answer(sock, action):
                    return
        finally:
            rfile.close()
            sock.close()

    @staticmethod
    def _answer(sock: Any, action: str) -> bool:
        if action in ("ok", "ok-fin"):
            sock.sendall(ANSWER)
            gevent.sleep(0.02 if action == "ok-fin" else 0.0)
            return action == "ok"
        if action == "rst":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif action == "byte":
            sock.sendall(b"H")
        elif action == "silent":
            gevent.sleep(FAST.total + 1)
        return False

    def stop(self) -> None:
        self.server.stop(timeout=1)


def _read_request(rfile: Any) -> bool:
    """Read one request (head and Content-Length body); False at the end of the connection."""
    length = 0
    line = rfile.readline()
    if not line:
        return False
    while (line := rfile.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    rfile.read(length)
    return True


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[Scripted] = []

    def start(*script: str) -> Scripted:
        servers.append(Scripted(*script))
        return servers[-1]

    yield start
    for s in servers:
        s.stop()


def connect(server: Scripted, idle_s: float = 0.0) -> Connection:
    endpoint = make_endpoint(server.url, provider="openai", model="m", api_key_env="none")
    return Connection(endpoint, FAST, keepalive_idle_s=idle_s)


def ask(conn: Connection) -> StreamOutcome:
    adapter = get_adapter("openai")
    req = adapter.build("/v1", "m", None, ChatRequest(messages=[{"role": "user", "content": "hi"}]))
    with gevent.Timeout(FAST.total + 5):
        return stream_call(conn, adapter, req)


@pytest.mark.parametrize("drop", ["rst", "fin"])
def test_a_request_on_a_stale_reused_connection_goes_again_once_on_a_new_one(serve, drop: str) -> None:
    server = serve("ok", drop)
    conn = connect(server)
    first = ask(conn)
    second = ask(conn)
    assert (first.status, first.stale_retry_ms) == (ErrorClass.OK, None)
    assert second.status is ErrorClass.OK, second.message
    assert second.result is not None and second.result.text == "hi"
    assert (server.requests, server.connections, conn.connects) == (3, 2, 2)
    assert second.stale_retry_ms is not None
    assert 0 < second.stale_retry_ms <= second.ttfb_ms <= second.ttft_ms, "t0 stays the first send"


def test_a_new_connection_closed_before_the_response_is_the_endpoints_error(serve) -> None:
    server = serve("fin")
    out = ask(connect(server))
    assert (out.status, out.stale_retry_ms, server.requests) == (ErrorClass.CONNECT_ERROR, None, 1)
    assert out.message == "connection closed before the response (HTTPConnectionClosed)"


def test_a_response_byte_is_the_servers_answer_never_retried(serve) -> None:
    server = serve("ok", "byte")
    conn = connect(server)
    ask(conn)
    out = ask(conn)
    assert out.status is not ErrorClass.OK and out.stale_retry_ms is None, out.message
    assert server.requests == 2


def test_a_time_limit_on_a_reused_connection_is_not_retried(serve) -> None:
    server = serve("ok", "silent")
    conn = connect(server)
    ask(conn)
    out = ask(conn)
    assert (out.status, out.stale_retry_ms, server.requests) == (ErrorClass.TIMEOUT_TTFT, None, 2)


def test_only_one_retry_and_its_failure_is_the_endpoints_error_saying_so(serve) -> None:
    server = serve("ok", "rst", "fin", "ok")
    conn = connect(server)
    ask(conn)
    out = ask(conn)
    assert out.status is ErrorClass.CONNECT_ERROR and out.stale_retry_ms is not None
    assert out.message == f"connection closed before the response (HTTPConnectionClosed); {RETRIED}"
    assert server.requests == 3, "the retried request went out on a new connection, which is never retried"
    assert ask(conn).status is ErrorClass.OK


def test_a_connection_the_server_closed_while_idle_is_replaced_before_the_send_without_a_retry(serve) -> None:
    """The plain case (a FIN while idle, as nginx sends): the check before reuse sees it; nothing to retry."""
    server = serve("ok-fin")
    conn = connect(server)
    ask(conn)
    sock = conn.pool._socket_queue.peek()
    gevent.sleep(0.1)
    out = ask(conn)
    assert (out.status, out.stale_retry_ms, conn.connects) == (ErrorClass.OK, None, 2), out.message
    assert sock.fileno() < 0


@pytest.mark.parametrize(("idle_s", "connects"), [(0.0, 1), (5.0, 1), (0.02, 2)])
def test_the_idle_limit_decides_reuse(serve, idle_s: float, connects: int) -> None:
    server = serve()
    conn = connect(server, idle_s)
    ask(conn)
    gevent.sleep(0.05)
    out = ask(conn)
    assert (out.status, out.stale_retry_ms) == (ErrorClass.OK, None)
    assert conn.connects == server.connections == connects
