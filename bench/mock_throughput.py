"""How fast and how punctual is the mock LLM server?

1. Throughput: the mock pinned to core 0 with ttft 0 / itl 0 and long outputs; a minimal raw-socket asyncio client
   pinned to core 1 keeps 32, then 128, keep-alive streams busy for a few seconds. Prints tokens/s and the mock's
   CPU-seconds per 100k tokens (psutil). Target: >= 300k tokens/s on one core.
2. Punctuality: ttft 200 ms / itl 10 ms with 128 streams; prints the mock's own timing error (actual write time
   minus planned, from its ground truth) for the first token and for the gaps, median and p99. Then 512 streams at
   itl 10 ms (about 50k paced writes/s), near what one process can pace: the closed-loop streams move in lockstep,
   so each 10 ms round is one burst of 512 writes and the tail grows with the burst.

    /work/venv/bin/python bench/mock_throughput.py [--seconds 4] [--tokens 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import statistics
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadlib.mock import MockConfig, start_subprocess

BODY = json.dumps({"model": "bench", "messages": [{"role": "user", "content": "hi"}], "stream": True}).encode()
END = b"\r\n0\r\n\r\n"


def _request(host: str, port: int) -> bytes:
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(BODY)}\r\n\r\n"
    )
    return head.encode() + BODY


class _Client(asyncio.Protocol):
    """Closed loop on one keep-alive connection: send, read until the chunked terminator, send again."""

    def __init__(self, request: bytes, stop_at: float, done: asyncio.Future[int]) -> None:
        self.request = request
        self.stop_at = stop_at
        self.done = done
        self.tail = b""
        self.responses = 0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.transport.write(self.request)  # type: ignore[union-attr]

    def data_received(self, data: bytes) -> None:
        self.tail = (self.tail + data[-16:])[-16:]
        if self.tail.endswith(END):
            self.responses += 1
            self.tail = b""
            if time.monotonic() >= self.stop_at:
                self.transport.close()  # type: ignore[union-attr]
            else:
                self.transport.write(self.request)  # type: ignore[union-attr]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(self.responses)


async def _drive(host: str, port: int, streams: int, seconds: float) -> int:
    loop = asyncio.get_running_loop()
    stop_at = time.monotonic() + seconds
    request = _request(host, port)
    futures = []
    for _ in range(streams):
        fut: asyncio.Future[int] = loop.create_future()
        await loop.create_connection(lambda f=fut: _Client(request, stop_at, f), host, port)
        futures.append(fut)
    return sum(await asyncio.gather(*futures))


def _get(port: int, path: str) -> dict:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET" if path != "/mock/reset" else "POST", path)
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def throughput(streams: int, seconds: float, tokens: int, mock_cpu: int) -> None:
    cfg = MockConfig(ttft_ms=0, itl_ms=0, output_tokens=tokens)
    with start_subprocess(cfg, cpu=mock_cpu, extra_args=["--truth-size", "1000", "--truth-events", "0"]) as mock:
        proc = psutil.Process(mock.pid)
        asyncio.run(_drive("127.0.0.1", mock.port, streams, 0.5))  # warm-up
        before = _get(mock.port, "/mock/stats")["tokens_sent"]
        cpu0 = sum(proc.cpu_times()[:2])
        t0 = time.perf_counter()
        responses = asyncio.run(_drive("127.0.0.1", mock.port, streams, seconds))
        elapsed = time.perf_counter() - t0
        cpu = sum(proc.cpu_times()[:2]) - cpu0
        sent = _get(mock.port, "/mock/stats")["tokens_sent"] - before
    print(
        f"throughput  streams={streams:4d}  tokens/s={sent / elapsed:10,.0f}  responses={responses:6d}  "
        f"mock cpu-s per 100k tokens={cpu / max(sent, 1) * 1e5:.3f}  mock cpu={cpu / elapsed:.0%} of a core"
    )


def punctuality(streams: int, seconds: float, mock_cpu: int, ttft_ms: float = 200, itl_ms: float = 10) -> None:
    cfg = MockConfig(ttft_ms=ttft_ms, itl_ms=itl_ms, output_tokens=50)
    with start_subprocess(cfg, cpu=mock_cpu) as mock:
        proc = psutil.Process(mock.pid)
        cpu0 = sum(proc.cpu_times()[:2])
        t0 = time.perf_counter()
        asyncio.run(_drive("127.0.0.1", mock.port, streams, seconds))
        elapsed = time.perf_counter() - t0
        cpu = sum(proc.cpu_times()[:2]) - cpu0
        events_sent = _get(mock.port, "/mock/stats")["events_sent"]
        records = _get(mock.port, "/mock/truth?limit=1000000")["records"]
    first = [r["first_token_sent_ms"] - r["planned_ttft_ms"] for r in records if r["first_token_sent_ms"] is not None]
    gaps: list[float] = []
    events: list[float] = []
    for r in records:
        times, planned = r["event_times_ms"], r["planned_itl_ms"]
        gaps += [b - a - p for a, b, p in zip(times, times[1:], planned, strict=False)]
        at = r["planned_ttft_ms"]
        for t, p in zip(times[1:], planned, strict=False):
            at += p
            events.append(t - at)
    print(
        f"punctuality streams={streams} ttft={ttft_ms:g}ms itl={itl_ms:g}ms requests={len(records)} "
        f"events/s={events_sent / elapsed:,.0f} mock cpu={cpu / elapsed:.0%} "
        f"({cpu / max(events_sent, 1) * 1e6:.1f} us/event)"
    )
    for name, vals in (("first token", first), ("every event", events), ("gap (ITL)", gaps)):
        med, p99 = statistics.median(vals), _pct(vals, 0.99)
        print(f"  {name:12s} actual-planned ms: median {med:+.3f}  p99 {p99:+.3f}  max {max(vals):+.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--tokens", type=int, default=2000, help="output tokens per response in the throughput runs")
    ap.add_argument("--streams", type=int, nargs="*", default=[32, 128])
    args = ap.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    mock_cpu, client_cpu = cores[0], cores[-1]
    os.sched_setaffinity(0, {client_cpu})
    print(f"mock on core {mock_cpu}, client on core {client_cpu}")
    for streams in args.streams:
        throughput(streams, args.seconds, args.tokens, mock_cpu)
    punctuality(128, args.seconds, mock_cpu)
    punctuality(512, args.seconds, mock_cpu, ttft_ms=50)  # capacity: ~50k paced events/s


if __name__ == "__main__":
    main()
