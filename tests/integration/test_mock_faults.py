"""Faults on a timer (`POST /mock/fault`) on real mock processes over loopback: each window breaks later requests and
ends by itself; `refuse` really closes the port and reopens the same one. Timing is asserted as loose bounds."""

from __future__ import annotations

import contextlib
import errno
import json
import socket
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from loadlib.mock import MockConfig, MockProcess, start_in_thread, start_subprocess
from tests.support.http_bytes import response_complete

pytestmark = pytest.mark.integration

MESSAGES = [{"role": "user", "content": "hello there"}]
CONFIG = MockConfig(ttft_ms=20, itl_ms=1, output_tokens=12)


@pytest.fixture(scope="module")
def mock() -> Iterator[MockProcess]:
    with start_subprocess(CONFIG, seed=3) as proc:
        yield proc


@pytest.fixture(autouse=True)
def no_fault_left(mock: MockProcess) -> Iterator[None]:
    """Whatever a test did, the next one starts without a fault (waiting out a refuse window, at most 3 s)."""
    yield
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            post(mock.port, {"kind": "none"})
            return
        time.sleep(0.05)


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes  # raw bytes after the head (chunk framing kept)
    eof: bool  # the server closed before the response was complete
    first_token_s: float | None  # seconds from sending to the first output event of a stream


def exchange(port: int, method: str, path: str, payload: Any = None, timeout: float = 5.0) -> Reply:
    """One request on a new connection; reads until the response ends (Content-Length, last chunk or EOF)."""
    body = json.dumps(payload).encode() if payload is not None else b""
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        t0 = time.perf_counter()
        sock.sendall(head.encode() + body)
        buf, first, eof = b"", None, False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not response_complete(buf):
            data = sock.recv(65536)
            if not data:
                eof = True
                break
            buf += data
            if first is None and buf.count(b"\n\n") >= 2:  # the role preamble, then the first token
                first = time.perf_counter() - t0
    raw_head, _, rest = buf.partition(b"\r\n\r\n")
    lines = raw_head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    return Reply(int(lines[0].split(" ")[1]), headers, rest, eof, first)


def post(port: int, body: Any) -> Reply:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    head = f"POST /mock/fault HTTP/1.1\r\nHost: x\r\nContent-Length: {len(raw)}\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(head.encode() + raw)
        buf = b""
        for _ in range(100):
            data = sock.recv(65536)
            if not data:
                break
            buf += data
    raw_head, _, rest = buf.partition(b"\r\n\r\n")
    return Reply(int(raw_head.split(b" ")[1]), {}, rest, True, None)


def start(port: int, **body: Any) -> dict[str, Any]:
    reply = post(port, body)
    assert reply.status == 200, reply.body
    return json.loads(reply.body)


def chat(port: int, stream: bool = True) -> Reply:
    return exchange(port, "POST", "/v1/chat/completions", {"model": "m", "messages": MESSAGES, "stream": stream})


def get(port: int, path: str) -> Any:
    reply = exchange(port, "GET", path)
    assert reply.status == 200
    return json.loads(reply.body)


def tokens(reply: Reply) -> int:
    return reply.body.count(b'"content":"') - 1  # minus the role preamble's empty content


def wait_until(check: Any, limit_s: float) -> float | None:
    """Seconds until `check()` is true, polling every 20 ms; None after `limit_s`."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        if check():
            return time.monotonic() - t0
        time.sleep(0.02)
    return None


def test_503_window_then_recovery(mock: MockProcess) -> None:
    t0 = time.monotonic()
    shown = start(mock.port, kind="http_503", for_s=1.0)
    assert shown["kind"] == "http_503" and shown["config"]["fault"] == "http_503"
    assert abs(shown["until_unix"] - (time.time() + 1.0)) < 0.5
    assert chat(mock.port).status == 503
    assert get(mock.port, "/mock/fault")["kind"] == "http_503"
    assert get(mock.port, "/mock/config")["fault"] == "none"  # the defaults themselves are untouched
    waited = wait_until(lambda: chat(mock.port).status == 200, 3.0)
    assert waited is not None
    assert 0.8 <= (time.monotonic() - t0) / 1.0 <= 2.0
    assert get(mock.port, "/mock/fault")["kind"] == "none"
    reply = chat(mock.port)
    assert reply.status == 200 and tokens(reply) == 12


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except ConnectionRefusedError as exc:
        assert exc.errno == errno.ECONNREFUSED
        return True
    return False


def _check_refuse(port: int, window_s: float) -> None:
    """An open keep-alive connection is cut, connects are refused for the window, then the same port answers."""
    idle = socket.create_connection(("127.0.0.1", port), timeout=2)
    try:
        t0 = time.monotonic()
        assert start(port, kind="refuse", for_s=window_s)["kind"] == "refuse"
        with contextlib.suppress(ConnectionResetError):
            assert idle.recv(1) == b""
    finally:
        idle.close()
    assert _refused(port)
    back = wait_until(lambda: not _refused(port), window_s + 2.0)
    assert back is not None
    assert 0.8 <= (time.monotonic() - t0) / window_s <= 2.5
    assert chat(port).status == 200


def test_refuse_closes_the_port_and_reopens_the_same_one(mock: MockProcess) -> None:
    _check_refuse(mock.port, 1.0)
    assert get(mock.port, "/mock/fault")["kind"] == "none"


def test_refuse_in_a_thread_reopens_too() -> None:
    with start_in_thread(CONFIG) as handle:
        _check_refuse(handle.port, 0.5)


def test_rate_limit_sends_both_retry_headers(mock: MockProcess) -> None:
    start(mock.port, kind="rate_limit", for_s=5, retry_after_s=1.5)
    reply = chat(mock.port)
    assert reply.status == 429
    assert reply.headers["retry-after"] == "2"  # whole seconds, rounded up
    assert reply.headers["retry-after-ms"] == "1500"
    assert start(mock.port, kind="none")["kind"] == "none"
    assert chat(mock.port).status == 200


def _ttft_ms(port: int) -> float:
    samples = []
    for _ in range(3):
        reply = chat(port)
        assert reply.status == 200 and reply.first_token_s is not None
        samples.append(reply.first_token_s * 1000.0)
    return statistics.median(samples)


def test_latency_adds_delay_to_ttft(mock: MockProcess) -> None:
    before = _ttft_ms(mock.port)
    start(mock.port, kind="latency", for_s=10, delay_ms=300)
    during = _ttft_ms(mock.port)
    assert 0.85 <= (during - before) / 300.0 <= 1.5
    start(mock.port, kind="none")
    assert _ttft_ms(mock.port) < before + 100.0


def test_broken_cuts_the_stream_after_k_tokens(mock: MockProcess) -> None:
    start(mock.port, kind="broken", for_s=10, after_tokens=3)
    reply = chat(mock.port)
    assert reply.status == 200 and reply.eof
    assert tokens(reply) == 3 and b"[DONE]" not in reply.body
    truth = get(mock.port, "/mock/truth?request_id=" + reply.headers["x-mock-request-id"])
    assert (truth["outcome"], truth["output_tokens_sent"]) == ("dropped", 3)


def test_stall_sends_no_response_head(mock: MockProcess) -> None:
    start(mock.port, kind="stall", for_s=5)
    with pytest.raises(TimeoutError):
        exchange(mock.port, "POST", "/v1/chat/completions", {"model": "m", "messages": MESSAGES}, timeout=0.3)


def test_replaced_fault_reverts_to_the_original_config(mock: MockProcess) -> None:
    original = get(mock.port, "/mock/config")
    start(mock.port, kind="latency", for_s=30, delay_ms=2000)
    shown = start(mock.port, kind="http_500", for_s=0.5)
    assert shown["config"]["ttft_ms"] == original["ttft_ms"]  # the latency layer was replaced, not stacked
    assert chat(mock.port).status == 500
    assert wait_until(lambda: chat(mock.port).status == 200, 2.0) is not None
    assert _ttft_ms(mock.port) < 500.0  # not the 2 s of the replaced latency fault
    assert get(mock.port, "/mock/config") == original
    assert get(mock.port, "/mock/fault")["kind"] == "none"


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"not json", "body is not JSON"),
        ({"kind": "explode", "for_s": 1}, "unknown kind 'explode'; valid kinds: none, refuse, http_500"),
        ({"kind": "http_503"}, "for_s is required"),
        ({"kind": "http_503", "for_s": 0}, "for_s must be a number > 0 and <= 86400"),
        ({"kind": "http_503", "for_s": 90000}, "<= 86400"),
        ({"kind": "latency", "for_s": 1, "delay": 5}, "unknown parameter 'delay' for latency"),
    ],
)
def test_bad_body_is_400_with_a_useful_message(mock: MockProcess, body: Any, fragment: str) -> None:
    reply = post(mock.port, body)
    assert reply.status == 400
    message = json.loads(reply.body)["error"]["message"]
    assert fragment in message and "\n" not in message
    assert get(mock.port, "/mock/fault")["kind"] == "none"
    assert exchange(mock.port, "PUT", "/mock/fault").status == 405
