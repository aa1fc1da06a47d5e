"""How fast SSEDecoder frames a typical OpenAI chat stream, against sseclient-py on the same chunks.

Each chunk is one `data: {...}\\n\\n` event, as a server flushing per token delivers it. Prints µs per event (best of
several repeats, so a noisy machine reports its quiet moments). Run: /work/venv/bin/python bench/sse_decoder_speed.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from sseclient import SSEClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from loadlib.sse import SSEDecoder  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "sse" / "openai" / "chat-text-include-usage.sse"


def event_chunks(body: bytes) -> list[bytes]:
    """The body cut after every blank line: one chunk per event."""
    return [part + b"\n\n" for part in body.split(b"\n\n") if part]


def line_chunks(body: bytes) -> list[bytes]:
    """One chunk per line, as a reader built on readline(b"\\n") delivers it."""
    return body.splitlines(keepends=True)


def paired_chunks(chunks: list[bytes]) -> list[bytes]:
    """Two events per chunk: a loaded server or client reads several events at once (the general framing path)."""
    return [b"".join(chunks[i : i + 2]) for i in range(0, len(chunks), 2)]


def time_ours(chunks: list[bytes]) -> tuple[float, int]:
    decoder = SSEDecoder()
    feed = decoder.feed
    n = 0
    t = time.perf_counter()
    for chunk in chunks:
        n += len(feed(chunk, 0.0))
    return time.perf_counter() - t, n


def time_sseclient(chunks: list[bytes]) -> tuple[float, int]:
    n = 0
    t = time.perf_counter()
    for _ in SSEClient(iter(chunks)).events():
        n += 1
    return time.perf_counter() - t, n


def best_us_per_event(fn, chunks: list[bytes], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        seconds, n = fn(chunks)
        best = min(best, seconds / n * 1e6)
    return best


def main() -> None:
    body = FIXTURE.read_bytes() * 300
    chunks = event_chunks(body)
    ours = best_us_per_event(time_ours, chunks, 7)
    theirs = best_us_per_event(time_sseclient, chunks, 7)
    print(f"{len(chunks)} events of {FIXTURE.name}, best of 7")
    print(f"one event per chunk:  loadlib.sse.SSEDecoder {ours:5.2f} µs/event")
    print(f"one event per chunk:  sseclient-py 1.9.0     {theirs:5.2f} µs/event  ({theirs / ours:.1f}x ours)")
    paired = best_us_per_event(time_ours, paired_chunks(chunks), 7)
    print(f"two events per chunk: loadlib.sse.SSEDecoder {paired:5.2f} µs/event  (general framing path)")
    lines = best_us_per_event(time_ours, line_chunks(body), 7)
    print(f"one line per chunk:   loadlib.sse.SSEDecoder {lines:5.2f} µs/event")


if __name__ == "__main__":
    main()
