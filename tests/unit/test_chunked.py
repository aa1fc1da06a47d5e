"""Chunk size lines with the blanks RFC 9112 allows (`5 ;x`, `5; x`), which llhttp refuses, handed to it as their size
alone, whatever the reads' boundaries; every other byte as it came (loadlib.transport.chunked)."""

from __future__ import annotations

from itertools import pairwise

import pytest

from loadlib.errors import ErrorClass
from loadlib.transport.chunked import MAX_SIZE_LINE, ChunkSizeLines
from loadlib.transport.connection import Response
from tests.support.wire import call, http_head

A = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
DONE = b"data: [DONE]\n\n"
HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
ALLOWED = [b";x", b' ;x="a b"', b" ;x", b"; x", b" ; name = value", b"\t;x", b" ", b""]


def body_of(wire: bytes, cuts: range | list[int]) -> tuple[bytes, bool, object]:
    """(body, complete, framing error) of a chunked response fed in pieces cut at `cuts`."""
    resp = Response("POST")
    bounds = [0, *cuts, len(wire)]
    for a, b in pairwise(bounds):
        if b > a and resp.framing_error is None:  # after a framing error the body reader stops
            resp.feed(wire[a:b])
    return resp.take_body() if resp.buffered else b"", resp.message_complete, resp.framing_error


@pytest.mark.parametrize("ext", ALLOWED)
def test_every_size_line_the_rfc_allows_is_read_at_every_read_boundary(ext: bytes) -> None:
    wire = HEAD + b"5%s\r\nhello\r\n6%s\r\n world\r\n0%s\r\n\r\n" % (ext, ext, ext)
    for cut in range(1, len(wire)):
        assert body_of(wire, [cut]) == (b"hello world", True, None), (ext, cut)
    assert body_of(wire, range(1, len(wire))) == (b"hello world", True, None), "one byte per read"


@pytest.mark.parametrize("line", [b"zz", b" 5", b"-5"])
def test_what_is_not_a_size_line_is_still_refused_by_the_parser(line: bytes) -> None:
    _, complete, error = body_of(HEAD + line + b"\r\nhello\r\n0\r\n\r\n", [])
    assert not complete and error is not None


def test_a_size_line_not_ended_within_its_cap_is_not_held_but_passed_on() -> None:
    line = b"5 ;" + b"x" * (MAX_SIZE_LINE + 100)
    _, complete, error = body_of(HEAD + line + b"\r\nhello\r\n0\r\n\r\n", [len(HEAD) + len(line) - 10])
    assert not complete and error is not None


def test_a_read_that_needs_nothing_is_passed_without_a_copy() -> None:
    lines = ChunkSizeLines()
    data = b"5\r\nhello\r\n6;x\r\n world\r\n"
    assert lines.feed(data) is data and lines.left == 0
    rewritten = lines.feed(b"3 ;y\r\nabc\r\n")
    assert rewritten == b"3\r\nabc\r\n"


def test_a_stream_with_spaced_extensions_is_a_whole_answer() -> None:
    """Before: `stream_broken`, `invalid HTTP framing mid-body (Invalid character in chunk size)`."""
    chunks = [b"%x ;ext=1\r\n%s\r\n" % (len(p), p) for p in (A, A, DONE)]
    out = call([http_head(transfer_encoding="chunked"), *chunks, b"0 ; last\r\n\r\n"])
    assert (out.status, out.result.text, out.note) == (ErrorClass.OK, "aa", None), out.message
