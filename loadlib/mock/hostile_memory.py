"""Hostile behaviours about a client's memory: the most output events per MiB, and the most text per MiB.

Registered in loadlib.mock.hostile's `--list` by an import at the end of that module. `flood` (here since the
others share its sender) sends ~110-byte events; `firehose-tiny` sends the smallest valid content event there is (~50
bytes), so whatever a client keeps per output event (a stamp, a gap, a text fragment) is at its most for the bytes
received. `fat-events` is the other end: events of 1 MiB of text, so whatever a client keeps per byte of answer is at
its most. A client bounded per stream holds either within its stated budget (docs/metrics.md, "Memory");
bench/hostile_memory.py measures it.
"""

from __future__ import annotations

import functools
import itertools
import json
import time
from collections.abc import Iterable

from loadlib.mock.hostile import CHUNKED, SSE, WRITE_SIZE, Exchange, behaviour, chunk, delta, event, head

TINY_EVENT = b'data: {"choices":[{"delta":{"content":"x"}}]}\n\n'  # index 0 is the default: 46 bytes
FAT_TEXT_BYTES = 1 << 20  # the text of one fat event, under the default 8 MiB event cap


@functools.cache
def tiny_block() -> bytes:
    """One ~64 KB chunk of the smallest content events, built once."""
    return chunk(TINY_EVENT * (WRITE_SIZE // len(TINY_EVENT)))


@functools.cache
def fat_block() -> bytes:
    """One chunk holding one content event of FAT_TEXT_BYTES of text, built once."""
    text = ("fat " * (FAT_TEXT_BYTES // 4))[:FAT_TEXT_BYTES]
    payload = json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}, separators=(",", ":"))
    return chunk(b"data: " + payload.encode() + b"\n\n")


@functools.cache
def flood_blocks() -> tuple[bytes, ...]:
    """Sixteen ~64 KB chunks of distinct content events, built once: the flood costs the server no CPU."""
    return tuple(_flood_block(seed) for seed in range(16))


def _flood_block(seed: int) -> bytes:
    """One chunk of as many content events as fit in WRITE_SIZE, numbered from the seed's range (varying text)."""
    per_block = WRITE_SIZE // len(event(delta("t000000 ")))
    first = seed * per_block
    return chunk(b"".join(event(delta(f"t{i} ")) for i in range(first, first + per_block)))


def send_forever(x: Exchange, blocks: Iterable[bytes]) -> bool:
    """A chunked SSE head, then the blocks as fast as the socket takes them (or at --rate-mb), forever."""
    x.peer.send(head("200 OK", SSE, CHUNKED))
    for block in blocks:
        x.peer.send(block)
        if x.rate:
            time.sleep(len(block) / x.rate)
    return False


@behaviour("flood", "200 SSE, chunked: valid content events in ~64 KB writes, as fast as the socket takes, forever")
def flood(x: Exchange) -> bool:
    return send_forever(x, itertools.cycle(flood_blocks()))


def _forever(x: Exchange, block: bytes) -> bool:
    """`block` again and again, as fast as the socket takes it (or at --rate-mb)."""
    return send_forever(x, itertools.repeat(block))


@behaviour("firehose-tiny", "200 SSE, chunked: the smallest content events (46 bytes), as fast as the socket takes")
def firehose_tiny(x: Exchange) -> bool:
    return _forever(x, tiny_block())


@behaviour("fat-events", "200 SSE, chunked: content events of 1 MiB of text each, as fast as the socket takes")
def fat_events(x: Exchange) -> bool:
    return _forever(x, fat_block())
