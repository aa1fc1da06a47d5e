"""Hostile behaviours about HTTP framing: a head that never ends, bytes after a complete response, a body without
length on a connection that claims keep-alive, a chunked body that never ends after the terminal event, and chunk
size lines with the whitespace RFC 9112 allows.

Registered in loadlib.mock.hostile's `--list` by an import at the end of that module. A client must cap the head
(`oversized`, not memory growing until a timeout), let a complete answer stand whatever follows it (and not reuse the
connection), close a close-delimited body at its end instead of waiting on a connection that will not close, end an
attempt at its terminal event however long the body goes on after it, and read every chunk size line the RFC allows.
"""

from __future__ import annotations

import json
import time
from contextlib import suppress

from loadlib.mock.hostile import (
    CHUNKED,
    DONE,
    JSON,
    SSE,
    WRITE_SIZE,
    Exchange,
    behaviour,
    chunk,
    completion,
    delta,
    event,
    head,
    usage,
)

FLOOD_HEADER = b"X-Flood: " + b"h" * 1013 + b"\r\n"  # one header line of 1 KiB
JUNK = b"\x00\x17stray bytes after the response, not HTTP\r\n"


@behaviour("header-flood", "200 head whose header section never ends: 1 KiB header lines in ~64 KB writes, forever")
def header_flood(x: Exchange) -> bool:  # ends when the client hangs up (the write fails)
    """No blank line ever ends the head: a client without a head cap keeps every header until a timeout."""
    block = FLOOD_HEADER * (WRITE_SIZE // len(FLOOD_HEADER))
    x.peer.send(head("200 OK", SSE)[:-2])  # without the blank line that would end the head
    while True:
        x.peer.send(block)


def _json_then(x: Exchange, after: bytes) -> bool:
    """A complete JSON answer with a correct Content-Length, then `after` in the same write; keep-alive claimed."""
    body = json.dumps(completion(x.n)).encode()
    x.peer.send(head("200 OK", JSON, f"Content-Length: {len(body)}") + body + after)
    return True


@behaviour("stray-bytes-after-json", "200 JSON with a correct Content-Length, then stray non-HTTP bytes in one write")
def stray_bytes_after_json(x: Exchange) -> bool:
    return _json_then(x, JUNK)


@behaviour("junk-head-after-json", "200 JSON with a correct Content-Length, then a second 200 SSE head in one write")
def junk_head_after_json(x: Exchange) -> bool:
    """The second head looks like a chunked stream that never sends a byte: a client that parses it as the answer
    reports its 200 with no events and waits its idle limit."""
    return _json_then(x, head("200 OK", SSE, CHUNKED))


@behaviour("http10-keepalive-no-length", "HTTP/1.0 200 SSE, Connection: keep-alive, no length: a stream, then no close")
def http10_keepalive_no_length(x: Exchange) -> bool:
    """The body is close-delimited (RFC 9112 section 6.3) but the server keeps the connection open for the next
    request: a client that reads to the end of the body waits until its own limit, after every request."""
    rid = f"h10-{x.n}"
    events = [event(delta(f"k{i} ", id=rid)) for i in range(5)]
    opening = b"HTTP/1.0 200 OK\r\n" + head("200 OK", SSE, "Connection: keep-alive").split(b"\r\n", 1)[1]
    x.peer.send(opening + b"".join([*events, event(usage(id=rid)), DONE]))
    return True


DONE_STREAM_EVENTS = 20  # as the control `slow-ok`: 20 content events 10 ms apart, usage, [DONE]
DONE_PAUSE_S = 0.01
PING_EVERY_S = 1.0  # after [DONE], an SSE comment this often: a gateway's keep-alive that outlives the answer


def _answer_then_no_end(x: Exchange, name: str) -> None:
    """The control's chunked stream up to its [DONE] chunk, without the last chunk (`0`) that would end the body."""
    rid = f"{name}-{x.n}"
    x.peer.send(head("200 OK", SSE, CHUNKED, f"x-request-id: {rid}"))
    for i in range(DONE_STREAM_EVENTS):
        x.peer.send(chunk(event(delta(f"d{i} ", id=rid))))
        time.sleep(DONE_PAUSE_S)
    x.peer.send(chunk(event(usage(id=rid))) + chunk(DONE))


@behaviour("done-then-silence", "200 SSE, chunked: a complete answer and [DONE], then the body never ends (silence)")
def done_then_silence(x: Exchange) -> bool:
    """The answer is whole at [DONE], but the chunked body is never ended: a client that waits for its end before
    the next request waits out its own limit after every request. Ends when the client hangs up."""
    _answer_then_no_end(x, "silence")
    with suppress(OSError):
        while x.peer.sock.recv(WRITE_SIZE):  # a pipelined request is not answered: the body before it never ended
            pass
    return False


@behaviour("done-then-pings", "200 SSE, chunked: a complete answer and [DONE], then an SSE comment every 1 s forever")
def done_then_pings(x: Exchange) -> bool:
    """As done-then-silence, but the body keeps moving: a limit restarted by every read never ends it."""
    _answer_then_no_end(x, "pings")
    with suppress(OSError):
        while True:
            time.sleep(PING_EVERY_S)
            x.peer.send(chunk(b": keep-alive\n\n"))
    return False


CHUNK_EXTENSIONS = (b" ;x", b"; x", b" ; name = value", b"\t;x", b';x="a b"')  # RFC 9112 7.1.1: BWS around ; and =


def spaced_chunk(data: bytes, i: int) -> bytes:
    """One chunk whose size line carries the i-th extension form."""
    return b"%x%s\r\n%s\r\n" % (len(data), CHUNK_EXTENSIONS[i % len(CHUNK_EXTENSIONS)], data)


@behaviour("chunk-ext-space", "200 SSE, chunked: chunk size lines with extensions and the whitespace RFC 9112 allows")
def chunk_ext_space(x: Exchange) -> bool:
    rid = f"ext-{x.n}"
    events = [event(delta(f"x{i} ", id=rid)) for i in range(6)] + [event(usage(id=rid)), DONE]
    body = b"".join(spaced_chunk(e, i) for i, e in enumerate(events))
    x.peer.send(head("200 OK", SSE, CHUNKED, f"x-request-id: {rid}") + body + b"0 ;end=1\r\n\r\n")
    return True
