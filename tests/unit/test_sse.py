"""SSEDecoder against the spec and against sseclient-py (the reference oracle) on every captured stream."""

from __future__ import annotations

import itertools
import json
import os
import random
from pathlib import Path

import pytest
from sseclient import SSEClient

from loadlib.transport.sse import SSEDecoder

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sse"
SSE_FILES = sorted(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*.sse"))
EXPECTED = json.loads((FIXTURES / "expected.json").read_bytes())


def decode(chunks: list[bytes], stamps: list[float] | None = None) -> tuple[list[tuple[float, bytes, bytes]], bool]:
    decoder = SSEDecoder()
    out: list[tuple[float, bytes, bytes]] = []
    for i, chunk in enumerate(chunks):
        out.extend(decoder.feed(chunk, float(i) if stamps is None else stamps[i]))
    return out, decoder.pending


def events_of(chunks: list[bytes]) -> list[tuple[bytes, bytes]]:
    return [(event, data) for _, event, data in decode(chunks)[0]]


def oracle(body: bytes, drop_last: bool) -> list[tuple[str, str]]:
    """sseclient-py's events, normalised: it yields an unterminated last event at EOF, and names untyped ones
    'message'."""
    events = [(e.event, e.data) for e in SSEClient(iter([body])).events()]
    return events[:-1] if drop_last and events else events


def read(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def test_fixture_set_is_complete() -> None:
    assert len(SSE_FILES) >= 50
    assert (FIXTURES / "MANIFEST.md").exists()


@pytest.mark.parametrize("name", SSE_FILES)
def test_matches_sseclient_oracle(name: str) -> None:
    body = read(name)
    events, pending = decode([body])
    ours = [((event or b"message").decode(), data.decode()) for _, event, data in events]
    assert ours == oracle(body, drop_last=pending)
    assert not pending


@pytest.mark.parametrize("name", SSE_FILES)
def test_event_and_comment_counts_match_manifest(name: str) -> None:
    fmt = EXPECTED[name]["expected"]["format"]
    decoder = SSEDecoder()
    events = decoder.feed(read(name), 0.0)
    assert len(events) == fmt["events_dispatched"]
    assert decoder.comment_lines == fmt["comment_lines"]
    assert sorted({e.decode() for _, e, _ in events} - {""}) == sorted(fmt["named_events"])
    assert (events[-1][2] == b"[DONE]") == fmt["done_sentinel"]


def start_offsets(body: bytes) -> list[tuple[float, bytes, bytes]]:
    """Fed one byte at a time with the byte's offset as its stamp: each event is stamped with its first byte."""
    return decode([body[i : i + 1] for i in range(len(body))], [float(i) for i in range(len(body))])[0]


@pytest.mark.parametrize("name", SSE_FILES)
def test_one_byte_at_a_time(name: str) -> None:
    body = read(name)
    whole = events_of([body])
    bytewise = start_offsets(body)
    assert [(e, d) for _, e, d in bytewise] == whole
    for offset, _, _ in bytewise:  # the stamp is the first byte of the event's first field line
        assert body[int(offset) :].startswith((b"data", b"event"))


# Above this, re-decoding the whole stream for every cut costs tens of seconds; LOADLIB_EXHAUSTIVE_SPLITS=1 lifts it.
FULL_SPLIT_MAX_BYTES = 10**9 if os.environ.get("LOADLIB_EXHAUSTIVE_SPLITS") else 5_000


def split_windows(body: bytes, starts: list[float]) -> list[tuple[int, int, int]]:
    """(a, lo, hi) per event: the event's bytes are body[lo:hi], and a is where the event before it begins. A blank
    line resets every part of the decoder's state, so decoding body[a:hi] on its own, cut anywhere in lo..hi, frames
    exactly as the whole stream cut there does."""
    bounds = [0, *(int(s) for s in starts[1:]), len(body)]
    return [(bounds[max(i - 1, 0)], bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


@pytest.mark.parametrize("name", SSE_FILES)
def test_every_two_chunk_split(name: str) -> None:
    """Every cut point gives the same events, stamped 1.0 when they began before the cut and 2.0 after it."""
    body = read(name)
    bytewise = start_offsets(body)
    whole = [(e, d) for _, e, d in bytewise]
    starts = [offset for offset, _, _ in bytewise]
    if len(body) <= FULL_SPLIT_MAX_BYTES:
        for cut in range(1, len(body)):
            events, pending = decode([body[:cut], body[cut:]], [1.0, 2.0])
            assert [(e, d) for _, e, d in events] == whole, cut
            assert [s for s, _, _ in events] == [1.0 if start < cut else 2.0 for start in starts], cut
            assert not pending
        return
    for a, lo, b in split_windows(body, starts):
        inside = [i for i, start in enumerate(starts) if a <= start < b]
        for cut in range(max(lo, 1), b):
            events, pending = decode([body[a:cut], body[cut:b]], [1.0, 2.0])
            assert [(e, d) for _, e, d in events] == [whole[i] for i in inside], cut
            assert [s for s, _, _ in events] == [1.0 if starts[i] < cut else 2.0 for i in inside], cut
            assert not pending


@pytest.mark.parametrize("name", SSE_FILES)
def test_event_per_chunk_line_per_chunk_and_random_chunks(name: str) -> None:
    body = read(name)
    whole = events_of([body])
    sep = b"\r\n\r\n" if b"\r\n" in body else b"\n\n"
    assert events_of([part + sep for part in body.split(sep) if part]) == whole
    assert events_of(body.splitlines(keepends=True)) == whole
    rng = random.Random(name)
    for _ in range(20):
        cuts = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.randint(1, 40))))
        bounds = [0, *cuts, len(body)]
        assert events_of([body[a:b] for a, b in itertools.pairwise(bounds)]) == whole


def test_line_endings_crlf_lf_and_lone_cr_are_equivalent() -> None:
    lf = b"event: a\ndata: 1\n\ndata: 2\ndata: 3\n\n"
    expected = [(b"a", b"1"), (b"", b"2\n3")]
    assert events_of([lf]) == expected
    assert events_of([lf.replace(b"\n", b"\r\n")]) == expected
    assert events_of([lf.replace(b"\n", b"\r")]) == expected
    assert events_of([b"data: 1\r\n\ndata: 2\r\r"]) == [(b"", b"1"), (b"", b"2")]


def test_crlf_split_between_chunks_is_one_line_end() -> None:
    assert events_of([b"data: 1\r", b"\n\r", b"\n"]) == [(b"", b"1")]
    assert events_of([b"data: 1\r", b"", b"\n", b"\r\n"]) == [(b"", b"1")]
    # a CR then CRLF is two line ends: a blank line follows
    assert events_of([b"data: 1\r", b"\r\n", b"data: 2\n\n"]) == [(b"", b"1"), (b"", b"2")]


def test_comments_dispatch_nothing_and_are_counted() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b": OPENROUTER PROCESSING\n\n:\n\n", 0.0) == []
    assert decoder.feed(b": keep-alive\ndata: x\n: between\n\n", 1.0) == [(1.0, b"", b"x")]
    assert decoder.comment_lines == 4
    assert not decoder.pending


def test_field_value_spacing() -> None:
    assert events_of([b"data:{}\n\n"]) == [(b"", b"{}")]
    assert events_of([b"data:  two\n\n"]) == [(b"", b" two")]
    assert events_of([b"data\n\n"]) == [(b"", b"")]
    assert events_of([b"data:\n\n"]) == [(b"", b"")]
    assert events_of([b"data: \n\n"]) == [(b"", b"")]
    assert events_of([b"event:x\ndata:a:b\n\n"]) == [(b"x", b"a:b")]


def test_multi_line_data_joins_with_lf() -> None:
    assert events_of([b"data: a\ndata:\ndata: c\n\n"]) == [(b"", b"a\n\nc")]


def test_event_type_resets_after_dispatch_and_without_data() -> None:
    body = b"event: ping\n\nevent: a\ndata: 1\n\ndata: 2\n\n"
    assert events_of([body]) == [(b"a", b"1"), (b"", b"2")]


def test_id_retry_and_unknown_fields_are_ignored() -> None:
    body = b"id: 7\nretry: 100\nfoo: bar\nnocolon\ndata: x\n\nid: 8\n\n"
    assert events_of([body]) == [(b"", b"x")]


def test_bom_is_stripped_only_at_stream_start() -> None:
    body = b"\xef\xbb\xbfdata: 1\n\n"
    assert events_of([body]) == [(b"", b"1")]
    assert events_of([body[i : i + 1] for i in range(len(body))]) == [(b"", b"1")]
    assert events_of([b"data: 1\n\n", b"\xef\xbb\xbfdata: 2\n\n"]) == [(b"", b"1")]  # mid-stream BOM: unknown field
    assert events_of([b"\xef\xbb", b"data: 1\n\n"]) == []  # not a BOM: the bytes open an unknown field name
    assert events_of([b"\xef", b"x\n", b"data: 1\n\n"]) == [(b"", b"1")]


def test_stamp_is_that_of_the_first_byte() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"da", 1.0) == []
    assert decoder.feed(b"ta: x\n", 2.0) == []
    assert decoder.feed(b"\ndata: y\n\nevent: e\n", 3.0) == [(1.0, b"", b"x"), (3.0, b"", b"y")]
    assert decoder.feed(b"data: z\n\n", 4.0) == [(3.0, b"e", b"z")]
    assert decoder.feed(b": c\n\n", 5.0) == []
    assert decoder.feed(b"data: w\n\n", 6.0) == [(6.0, b"", b"w")]
    assert decoder.feed(b"data: v\n", 7.0) == []
    assert decoder.feed(b"\n", 8.0) == [(7.0, b"", b"v")]


def test_held_bom_prefix_keeps_its_stamp() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"\xef", 1.0) == []
    assert decoder.pending
    assert decoder.feed(b"x\ndata: 1\n\n", 2.0) == [(1.0, b"", b"1")]


def test_pending_marks_an_unfinished_event() -> None:
    decoder = SSEDecoder()
    assert not decoder.pending
    decoder.feed(b'data: {"trunc', 0.0)
    assert decoder.pending
    decoder = SSEDecoder()
    decoder.feed(b"data: done\n", 0.0)
    assert decoder.pending  # a data line without its blank line
    decoder.feed(b"\n", 0.0)
    assert not decoder.pending
    decoder.feed(b"event: x\n", 0.0)
    assert decoder.pending
    decoder.feed(b"\r", 0.0)
    assert not decoder.pending


def test_unterminated_event_is_never_dispatched() -> None:
    events, pending = decode([b'data: 1\n\ndata: {"trunc'])
    assert [(e, d) for _, e, d in events] == [(b"", b"1")]
    assert pending


def test_fast_path_and_framing_path_agree() -> None:
    chunks = [b"data: a\n\n", b"data: b\r\n\r\n", b"data: c\nd\n\n", b"data: \n\n", b"data: e\n\n\n", b"data: f\n\n"]
    split = [bytes([b]) for chunk in chunks for b in chunk]
    expected = [(b"", b"a"), (b"", b"b"), (b"", b"c"), (b"", b""), (b"", b"e"), (b"", b"f")]
    assert events_of(chunks) == events_of(split) == expected


def test_a_long_line_split_over_many_reads_is_joined_once_and_keeps_its_stamp() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: ", 1.0) == []
    for i in range(1000):
        assert decoder.feed(b"x" * 100, 2.0 + i) == []
    assert decoder.held_bytes == 100_006  # "data: " and the x's
    assert decoder.feed(b"y\r", 5.0) == []
    assert decoder.feed(b"\n\ndata: z\n\n", 6.0) == [(1.0, b"", b"x" * 100_000 + b"y"), (6.0, b"", b"z")]
    assert not decoder.pending and decoder.held_bytes == 0


def test_line_and_event_caps_raise_oversized() -> None:
    from loadlib.errors import OversizedError

    decoder = SSEDecoder(max_line=1024, max_event=4096)
    decoder.feed(b"data: " + b"x" * 1000, 0.0)
    with pytest.raises(OversizedError) as exc:
        decoder.feed(b"x" * 100, 0.0)
    assert exc.value.cap == "line" and "--llm-max-line-mb" in str(exc.value)
    decoder = SSEDecoder(max_line=1024, max_event=4096)
    with pytest.raises(OversizedError) as exc:
        decoder.feed(b"data: 0123456789\n" * 400, 0.0)
    assert exc.value.cap == "event"
    assert SSEDecoder(max_line=1024, max_event=4096).feed(b"data: 0123456789\n\n" * 400, 0.0)  # many small events
