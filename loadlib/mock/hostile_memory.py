"""Hostile behaviours about a client's memory: the most output events per MiB, and the most text per MiB.

Registered in loadlib.mock.hostile's `--list` by an import at the end of that module. `flood` sends ~110-byte
events; `firehose-tiny` sends the smallest valid content event there is (~50 bytes), so whatever a client keeps per
output event (a stamp, a gap, a text fragment) is at its most for the bytes received. `fat-events` is the other end:
events of 1 MiB of text, so whatever a client keeps per byte of answer is at its most. A client bounded per stream
holds either within its stated budget (docs/metrics.md, "Memory"); bench/hostile_memory.py measures it.
"""

from __future__ import annotations

import functools
import itertools
import json
import time

from loadlib.mock.hostile import CHUNKED, SSE, WRITE_SIZE, Exchange, behaviour, chunk, head

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


def _forever(x: Exchange, block: bytes) -> bool:
    """A chunked SSE head, then `block` again and again as fast as the socket takes (or at --rate-mb)."""
    x.peer.send(head("200 OK", SSE, CHUNKED))
    for data in itertools.repeat(block):
        x.peer.send(data)
        if x.rate:
            time.sleep(len(block) / x.rate)
    return False


@behaviour("firehose-tiny", "200 SSE, chunked: the smallest content events (46 bytes), as fast as the socket takes")
def firehose_tiny(x: Exchange) -> bool:
    return _forever(x, tiny_block())


@behaviour("fat-events", "200 SSE, chunked: content events of 1 MiB of text each, as fast as the socket takes")
def fat_events(x: Exchange) -> bool:
    return _forever(x, fat_block())
