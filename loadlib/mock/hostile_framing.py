"""Hostile behaviours about HTTP framing: a head that never ends, bytes after a complete response, and a body without
length on a connection that claims keep-alive.

Registered in loadlib.mock.hostile's `--list` by an import at the end of that module. A client must cap the head
(`oversized`, not memory growing until a timeout), let a complete answer stand whatever follows it (and not reuse the
connection), and close a close-delimited body at its end instead of waiting on a connection that will not close.
"""

from __future__ import annotations

import json

from loadlib.mock.hostile import (
    CHUNKED,
    DONE,
    JSON,
    SSE,
    WRITE_SIZE,
    Exchange,
    behaviour,
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
