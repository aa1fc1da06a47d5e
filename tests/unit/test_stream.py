"""The real stream path (`stream_call`) against canned bytes on a loopback TCP pair: HTTP framing, caps, limits that
hold while data keeps coming, and the guard that turns a bug of ours into a counted `internal_error`."""

from __future__ import annotations

import gevent

import time

import pytest

from loadlib.config import Endpoint, Limits, Timeouts, make_endpoint
from loadlib.errors import ErrorClass
from loadlib.providers.registry import get_adapter
from loadlib.transport.connection import host_header, request_bytes
from tests.support.wire import call, chunked, http_head, serving

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

A = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
B = b'data: {"choices":[{"index":0,"delta":{"content":"b"}}]}\n\n'
DONE = b"data: [DONE]\n\n"
JSON_REPLY = b'{"id":"x","choices":[{"index":0,"message":{"content":"hi there"},"finish_reason":"stop"}]}'


def test_chunked_stream_is_read_and_the_connection_reused():
    conn = serving([http_head(transfer_encoding="chunked"), *chunked(A, B, DONE)])
    adapter = get_adapter("openai")
    from loadlib.providers.base import ChatRequest
    from loadlib.transport.stream import stream_call

    out = stream_call(conn, adapter, adapter.build("/v1", "m", None, ChatRequest(messages=[])))
    assert out.status is ErrorClass.OK and out.http_status == 200 and out.result.text == "ab"
    assert len(out.output_stamps_ms) == 2 and out.ttfb_ms <= out.ttft_ms <= out.e2e_ms
    assert conn.sock is None and not conn.pool._socket_queue.empty(), "the socket went back to the pool"


def test_close_delimited_json_reply_is_one_event():
    out = call([http_head(content_type="application/json", connection="close"), JSON_REPLY])
    assert out.status is ErrorClass.OK, out.message
    assert out.http_status == 200 and out.result.text == "hi there" and len(out.output_stamps_ms) == 1


@pytest.mark.parametrize(
    "pieces",
    [
        [http_head(transfer_encoding="chunked") + b"5\r\nhello\r\nZZ\r\n"],  # framing error in the head's read
        [http_head(transfer_encoding="chunked"), chunked(A)[0], b"ZZ\r\n"],  # ... in a later read
        [http_head(content_length="500"), A],  # the body is cut short
        [http_head(transfer_encoding="chunked"), chunked(A)[0]],  # the chunked body never ends
    ],
    ids=["chunk-error-with-head", "chunk-error-mid-body", "short-content-length", "chunked-cut"],
)
def test_broken_framing_is_stream_broken_with_its_status(pieces):
    out = call(pieces)
    assert out.status is ErrorClass.STREAM_BROKEN, out.message
    assert out.http_status == 200


def test_garbage_instead_of_http_and_an_immediate_close():
    out = call([b"SSH-2.0-OpenSSH\r\n\r\n"])
    assert (out.status, out.http_status) == (ErrorClass.STREAM_BROKEN, None)
    assert "not valid HTTP" in out.message
    assert call([]).status is ErrorClass.CONNECT_ERROR


def test_caps_end_a_request_as_oversized():
    limits = Limits(line=64 << 10, event=128 << 10, response=1 << 20)
    long_line = call([http_head(connection="close"), b"data: " + b"x" * (200 << 10)], limits=limits)
    assert long_line.status is ErrorClass.OVERSIZED and "line" in long_line.message
    many_lines = call([http_head(connection="close"), b"data: yyyyyyyy\n" * 30000], limits=limits)
    assert many_lines.status is ErrorClass.OVERSIZED and "event" in many_lines.message
    huge = call([http_head(connection="close"), A * 30000], limits=limits)
    assert huge.status is ErrorClass.OVERSIZED and "response" in huge.message


def _forever(piece: bytes, head: bytes = b""):
    yield head
    while True:
        yield piece * 1000


def test_a_never_ending_flood_ends_at_the_total_limit_and_the_hub_keeps_running():
    gaps = []

    def ticker() -> None:
        last = time.perf_counter()
        while True:
            gevent.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    tick = gevent.spawn(ticker)
    t = Timeouts(connect=1.0, ttft=5.0, idle=5.0, total=1.0)
    start = time.perf_counter()
    out = call(_forever(A, http_head(connection="close")), timeouts=t, limits=Limits(response=1 << 40))
    elapsed = time.perf_counter() - start
    tick.kill()
    assert out.status is ErrorClass.TIMEOUT_TOTAL, out.message
    assert elapsed < 1.2, elapsed
    assert max(gaps) < 0.1, f"the hub was starved for {max(gaps) * 1000:.0f} ms"


def test_keep_alives_only_end_at_the_ttft_limit():
    t = Timeouts(connect=1.0, ttft=0.5, idle=5.0, total=10.0)
    out = call(_forever(b": keep-alive\n\n", http_head(connection="close")), timeouts=t)
    assert out.status is ErrorClass.TIMEOUT_TTFT and out.e2e_ms < 700


def test_an_exception_of_ours_is_a_counted_internal_error(monkeypatch):
    from loadlib.providers.openai import OpenAIChatParser

    def boom(self, event, data):
        raise RuntimeError("bug in the parser")

    monkeypatch.setattr(OpenAIChatParser, "feed", boom)
    conn = serving([http_head(transfer_encoding="chunked"), *chunked(A, DONE)])
    adapter = get_adapter("openai")
    from loadlib.providers.base import ChatRequest
    from loadlib.transport.stream import stream_call

    out = stream_call(conn, adapter, adapter.build("/v1", "m", None, ChatRequest(messages=[])))
    assert out.status is ErrorClass.INTERNAL_ERROR and out.message == "RuntimeError: bug in the parser"
    assert out.e2e_ms is not None and conn.sock is None


def test_a_socket_closed_under_its_reader_by_a_cancel_is_cancelled_not_a_bug(monkeypatch, caplog):
    """gevent may tell a reader whose socket another greenlet just closed with ConcurrentObjectUseError (not an
    OSError): after a cancel (a hedge's loser, a user stopped at the end of the run) that is the cancel, not a bug."""
    from gevent.exceptions import ConcurrentObjectUseError

    from loadlib.providers.base import ChatRequest
    from loadlib.transport.stream import stream_call

    conn = serving([http_head(transfer_encoding="chunked"), *chunked(A, A, DONE)])

    def closed_meanwhile(*_args, **_kwargs):
        conn.cancelled = True
        raise ConcurrentObjectUseError("The socket has already been closed by another greenlet")

    adapter = get_adapter("openai")
    monkeypatch.setattr(conn, "recv", closed_meanwhile)
    out = stream_call(conn, adapter, adapter.build("/v1", "m", None, ChatRequest(messages=[])))
    assert out.status is ErrorClass.CANCELLED
    assert not [r for r in caplog.records if "please report it" in r.getMessage()]


@pytest.mark.parametrize(("status", "words"), [(401, "refused the credentials"), (404, "no such path or model")])
def test_statuses_that_cannot_heal_are_marked_fatal(status, words):
    out = call([http_head(status, content_type="application/json", content_length="2"), b"{}"])
    assert out.status is ErrorClass.HTTP_4XX and words in out.fatal
    assert call([http_head(429, content_type="application/json", content_length="2"), b"{}"]).fatal is None


def test_request_bytes_and_host_header():
    data = request_bytes("POST", "/v1/x", "h:8000", {"A": "1"}, b"{}")
    assert data == b"POST /v1/x HTTP/1.1\r\nHost: h:8000\r\nUser-Agent: loadlib\r\nContent-Length: 2\r\nA: 1\r\n\r\n{}"
    with pytest.raises(ValueError):
        request_bytes("POST", "/", "h", {"x-mock": "a\r\nInjected: 1"}, b"")
    ep: Endpoint = make_endpoint("https://api.example.com/v1", api_key_env="none")
    assert host_header(ep) == "api.example.com"
    assert host_header(make_endpoint("http://[::1]:8000/v1", api_key_env="none")) == "[::1]:8000"


def test_a_body_that_is_not_an_event_stream_is_explained() -> None:
    html = b"<html><head><title>502 Bad Gateway</title></head></html>"
    out = call([http_head(connection="close"), html])
    assert out.status is ErrorClass.STREAM_BROKEN and "HTML" in out.message
