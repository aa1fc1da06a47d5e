"""A closed-loop streaming client for the batching engine's tests and benchmark: `users` keep-alive connections on
one asyncio loop, each sending its next request when the last answer ends, bounded in time and in count. A raw
socket client, light enough that 128 streams leave the mock its CPU; times are the client's own clock."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from loadlib.mock.engine.sim import Workload, output_of

TOKEN = b'"delta":{"content"'
END = b"\r\n0\r\n\r\n"
REQUEST_ID = re.compile(rb"x-mock-request-id: (\w+)")
DEFAULT_WORK = Workload()


@dataclass(frozen=True, slots=True)
class Sample:
    """One answer as the client saw it (ms after it sent the request's last byte); `sent_s`: when it was sent,
    seconds after the run began."""

    user: int
    index: int
    request_id: str
    ttft_ms: float
    tpot_ms: float
    e2e_ms: float
    tokens: int
    sent_s: float = 0.0


RUNS = itertools.count()


def prompt(run: int, user: int, index: int, words: int) -> str:
    """A prompt of the same token count for every request, unique from its first token: no prefix-cache hit, not
    even on the prompts of an earlier run against the same mock."""
    return f"run {run:04d} request {user:04d}-{index:04d}: " + "hello world " * words


def _request(host: str, port: int, text: str, output_tokens: int) -> bytes:
    body = json.dumps(
        {"model": "bench", "stream": True, "max_tokens": output_tokens, "messages": [{"role": "user", "content": text}]}
    ).encode()
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


async def _answer(reader: asyncio.StreamReader, sent: float) -> tuple[list[float], str]:
    """Read one chunked SSE answer: the arrival time of every output token event, and the mock's request id."""
    times: list[float] = []
    tail, rid = b"", ""
    while True:
        data = await reader.read(65536)
        now = time.perf_counter()
        if not data:
            raise ConnectionError("the mock closed the connection")
        joined = tail + data
        times.extend([now] * joined.count(TOKEN))
        if not rid and (m := REQUEST_ID.search(joined)):
            rid = m.group(1).decode()
        if joined.endswith(END):
            return [t - sent for t in times], rid
        tail = joined[-(len(TOKEN) - 1) :]


async def _user(
    user: int,
    url: tuple[str, int],
    delay: float,
    span: tuple[float, float],
    limit: int,
    words: int,
    work: Workload,
    run: int,
) -> list[Sample]:
    began, stop_at = span
    await asyncio.sleep(delay)
    host, port = url
    reader, writer = await asyncio.open_connection(host, port)
    out: list[Sample] = []
    try:
        while time.perf_counter() < stop_at and len(out) < limit:
            output = output_of(work, user, len(out))
            writer.write(_request(host, port, prompt(run, user, len(out), words), output))
            sent = time.perf_counter()
            async with asyncio.timeout(30.0):
                times, rid = await _answer(reader, sent)
            n = len(times)
            tpot = (times[-1] - times[0]) * 1000.0 / (n - 1) if n > 1 else 0.0
            out.append(Sample(user, len(out), rid, times[0] * 1000.0, tpot, times[-1] * 1000.0, n, sent - began))
    finally:
        writer.close()
    return out


async def _closed_loop(
    url: tuple[str, int], delays: Sequence[float], seconds: float, limit: int, words: int, work: Workload
) -> list[Sample]:
    began = time.perf_counter()
    run = next(RUNS)
    tasks = [_user(u, url, delay, (began, began + seconds), limit, words, work, run) for u, delay in enumerate(delays)]
    return [s for samples in await asyncio.gather(*tasks) for s in samples]


def closed_loop(
    url: tuple[str, int],
    users: int,
    seconds: float,
    *,
    spread_s: float = 0.0,
    phases: Sequence[float] | None = None,
    limit: int = 1000,
    words: int = 60,
    work: Workload = DEFAULT_WORK,
) -> list[Sample]:
    """Run `users` closed-loop users for `seconds` (each stops after `limit` answers), their first requests spread
    evenly over `spread_s`, as the engine's capacity simulation spreads them, or each after its own delay in
    `phases` (seconds, one per user); each answer's length is the simulation's (`output_of(work, ...)`, asked as
    max_tokens: the mock's own output_tokens must be larger). Every answer, in no particular order."""
    delays = list(phases) if phases is not None else [u * spread_s / users for u in range(users)]
    return asyncio.run(_closed_loop(url, delays, seconds, limit, words, work))


async def _ping(host: str, port: int, count: int, idle_s: float) -> list[float]:
    reader, writer = await asyncio.open_connection(host, port)
    request = f"GET /health HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    out: list[float] = []
    try:
        for _ in range(count):
            await asyncio.sleep(idle_s)
            sent = time.perf_counter()
            writer.write(request)
            data = b""
            while not data.endswith(b"\r\n\r\nok"):
                async with asyncio.timeout(10.0):
                    data += await reader.read(4096)
            out.append(time.perf_counter() - sent)
    finally:
        writer.close()
    return out


def link_ms(url: tuple[str, int], count: int = 20, idle_s: float = 0.01) -> float:
    """This client's one-way distance from the mock (the simulation's `Workload.link_ms`): half the median round
    trip of `GET /health` over one keep-alive connection, the same loop and socket path as its streams, each after
    `idle_s` asleep (as both sides are between a request and its first token: waking costs a loaded box 0.1 ms or
    more each way, three times a round trip back to back)."""
    return p50(asyncio.run(_ping(*url, count, idle_s))) * 1000.0 / 2.0


def p50(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[(len(ordered) - 1) // 2]
