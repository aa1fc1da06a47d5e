"""The end of the body after the terminal event, through the real stream path on a loopback pair: the answer is whole
at `[DONE]`, so the attempt ends there; the body's end is read only within a short grace (for the connection's reuse),
a body that goes on is not waited for (its connection is closed, the record says so), and a server that does it again
costs no grace for a while. Before: each such request held its user 5 s (silence) or until the total limit (a comment
every second), with no note."""

from __future__ import annotations

import gevent
import gevent.event

import time
from collections.abc import Iterator

import pytest

from loadlib.errors import ErrorClass
from loadlib.providers.base import ChatRequest
from loadlib.providers.registry import get_adapter
from loadlib.transport.connection import LATE_END_NOTE, Connection
from loadlib.transport.deadline import BODY_END_GRACE_S, LATE_END_MEMORY_S
from loadlib.transport.stream import StreamOutcome, stream_call
from tests.support.wire import answer_next, chunked, http_head, serving

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

A = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
DONE = b"data: [DONE]\n\n"
HEAD = http_head(transfer_encoding="chunked")
ANSWER = [HEAD, *chunked(A, DONE)[:-1]]  # a whole answer, without the last chunk that ends the body
LAST = b"0\r\n\r\n"


@pytest.fixture
def release() -> Iterator[gevent.event.Event]:
    """Set at the end of a test: the canned servers holding their connection open let go."""
    event = gevent.event.Event()
    yield event
    event.set()


def held(pieces: list[bytes], release: gevent.event.Event, then: list[bytes] | None = None, every: float = 0.0):
    """`pieces`, then the connection held open (sending `then`, one piece every `every` s, when given)."""
    yield from pieces
    for piece in then or []:
        if release.wait(every):
            return
        yield piece
    release.wait(10.0)


def timed(conn: Connection) -> tuple[StreamOutcome, float]:
    adapter = get_adapter("openai")
    started = time.monotonic()
    with gevent.Timeout(15):
        out = stream_call(conn, adapter, adapter.build("/v1", "m", None, ChatRequest(messages=[])))
    return out, time.monotonic() - started


def test_a_body_that_never_ends_after_done_ends_the_attempt_at_its_grace_and_closes_the_connection(release):
    conn = serving(held(ANSWER, release), close=False)
    out, took = timed(conn)
    assert (out.status, out.result.text, out.note) == (ErrorClass.OK, "a", LATE_END_NOTE), out.message
    assert BODY_END_GRACE_S - 0.05 <= took < BODY_END_GRACE_S + 0.3, took
    assert out.e2e_ms < 200, "E2E ends at [DONE], not at the grace's end"
    assert conn.sock is None and conn.pool._socket_queue.empty(), "the connection is closed, not reused"


def test_a_body_that_keeps_sending_after_done_is_not_waited_for_either(release):
    """A comment every 0.1 s after [DONE]: a limit that each read pushes back would never end it."""
    pings = [chunked(b": keep-alive\n\n")[0]] * 50
    conn = serving(held(ANSWER, release, pings, every=0.1), close=False)
    out, took = timed(conn)
    assert (out.status, out.note) == (ErrorClass.OK, LATE_END_NOTE), out.message
    assert took < BODY_END_GRACE_S + 0.3, took


def test_a_server_that_did_it_lately_gets_no_grace_and_one_that_ends_at_once_is_reused(release):
    conn = serving(held(ANSWER, release), close=False)
    timed(conn)
    answer_next(conn, held(ANSWER, release), close=False)
    again, took = timed(conn)
    assert (again.status, again.note) == (ErrorClass.OK, LATE_END_NOTE), again.message
    assert took < 0.1, f"no grace within {LATE_END_MEMORY_S:g} s of a late end ({took:.3f} s)"
    answer_next(conn, held([*ANSWER, LAST], release), close=False)
    whole, _ = timed(conn)
    assert (whole.status, whole.note) == (ErrorClass.OK, None), "the end, already there, is read: the socket is reused"
    assert not conn.pool._socket_queue.empty()


def test_the_grace_comes_back_after_its_memory(release):
    conn = serving(held(ANSWER, release), close=False)
    timed(conn)
    conn.late_end_at -= LATE_END_MEMORY_S
    answer_next(conn, held(ANSWER, release, [LAST], every=0.05), close=False)  # the end comes 50 ms after [DONE]
    out, _ = timed(conn)
    assert (out.status, out.note) == (ErrorClass.OK, None), out.message
    assert not conn.pool._socket_queue.empty(), "the end came within the grace: the connection is reused"


def test_an_end_a_little_after_done_keeps_the_connection(release):
    """A server whose last chunk follows [DONE] in a later write (uvicorn, most proxies) loses nothing."""
    conn = serving(held(ANSWER, release, [LAST], every=0.05), close=False)
    out, took = timed(conn)
    assert (out.status, out.note) == (ErrorClass.OK, None), out.message
    assert not conn.pool._socket_queue.empty() and took < BODY_END_GRACE_S


def test_an_empty_stream_ends_at_its_grace_too(release):
    """No output yet at [DONE]: the TTFT limit must not stand in for the grace."""
    conn = serving(held([HEAD, *chunked(DONE)[:-1]], release), close=False)
    out, took = timed(conn)
    assert (out.status, out.note) == (ErrorClass.EMPTY_RESPONSE, LATE_END_NOTE), out.message
    assert took < BODY_END_GRACE_S + 0.3, took
