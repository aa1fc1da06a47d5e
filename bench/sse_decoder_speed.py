"""How fast SSEDecoder frames a typical OpenAI chat stream, against sseclient-py on the same chunks.

Each chunk is one `data: {...}\\n\\n` event, as a server flushing per token delivers it. Prints µs per event (best of
several repeats, so a noisy machine reports its quiet moments). Then one line that never ends, fed in 4 KB and 64 KB
reads with the caps lifted: the seconds it takes must grow linearly with its length (a hostile server cannot make
decoding quadratic). Run: python bench/sse_decoder_speed.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from sseclient import SSEClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from loadlib.transport.sse import SSEDecoder  # noqa: E402

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


def time_long_line(megabytes: int, read_size: int) -> float:
    """Seconds to decode one `data:` line of `megabytes` MiB delivered in `read_size` reads (best of 3)."""
    piece = b"x" * read_size
    reads = (megabytes << 20) // read_size
    best = float("inf")
    for _ in range(3):
        decoder = SSEDecoder(max_line=1 << 40, max_event=1 << 40)
        t = time.perf_counter()
        decoder.feed(b"data: ", 0.0)
        for _ in range(reads):
            decoder.feed(piece, 0.0)
        events = decoder.feed(b"\n\n", 0.0)
        best = min(best, time.perf_counter() - t)
        assert len(events[0][2]) == reads * read_size
    return best


def main() -> None:
    body = FIXTURE.read_bytes() * 300
    chunks = event_chunks(body)
    ours = best_us_per_event(time_ours, chunks, 7)
    theirs = best_us_per_event(time_sseclient, chunks, 7)
    print(f"{len(chunks)} events of {FIXTURE.name}, best of 7")
    print(f"one event per chunk:  loadlib.transport.sse.SSEDecoder {ours:5.2f} µs/event")
    print(f"one event per chunk:  sseclient-py 1.9.0     {theirs:5.2f} µs/event  ({theirs / ours:.1f}x ours)")
    paired = best_us_per_event(time_ours, paired_chunks(chunks), 7)
    print(f"two events per chunk: loadlib.transport.sse.SSEDecoder {paired:5.2f} µs/event  (general framing path)")
    lines = best_us_per_event(time_ours, line_chunks(body), 7)
    print(f"one line per chunk:   loadlib.transport.sse.SSEDecoder {lines:5.2f} µs/event")
    for read_size in (4096, 65536):
        figures = {mb: time_long_line(mb, read_size) for mb in (1, 10, 100)}
        shown = ", ".join(f"{mb} MiB {s:.3f} s ({s / mb * 1000:.1f} ms/MiB)" for mb, s in figures.items())
        print(f"one endless line in {read_size // 1024} KB reads: {shown}")


if __name__ == "__main__":
    main()
