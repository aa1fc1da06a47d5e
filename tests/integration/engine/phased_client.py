"""An independent closed-loop client for comparing against: plain asyncio and aiohttp, `users` streams each starting
at its own random moment within `phase_s` (people do not arrive together), then sending its next request as soon as
its answer ends. It times TTFT on the first chunk with content, the way vLLM's benchmark client does, and keeps each
request's wall-clock start."""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import aiohttp


@dataclass
class Load:
    """What the client saw: each request's wall-clock start (s) and its TTFT (ms), in finishing order."""

    starts: list[float] = field(default_factory=list)
    ttft_ms: list[float] = field(default_factory=list)


async def _stream(session: aiohttp.ClientSession, url: str, body: dict, load: Load) -> None:
    wall, t0 = time.time(), time.perf_counter()
    ttft = None
    async with session.post(url, json=body) as resp:
        resp.raise_for_status()
        async for line in resp.content:
            data = line.strip().removeprefix(b"data: ")
            if ttft is None and data and data != b"[DONE]":
                choices = json.loads(data).get("choices") or [{}]
                if choices[0].get("delta", {}).get("content"):
                    ttft = (time.perf_counter() - t0) * 1000
    if ttft is not None:
        load.starts.append(wall)
        load.ttft_ms.append(ttft)


Body = Callable[[int, int], dict]
"""The JSON body of a user's request: `body(user, index)`."""


async def _user(session, url, body: Body, user: int, phase_s: float, end: float, load: Load) -> None:
    await asyncio.sleep(phase_s)
    index = 0
    while time.perf_counter() < end:
        await _stream(session, url, body(user, index), load)
        index += 1


async def _run(url: str, body: Body, users: int, seconds: float, phase_s: float, seed: int) -> Load:
    load, rng = Load(), random.Random(seed)
    connector = aiohttp.TCPConnector(limit=users)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as session:
        end = time.perf_counter() + seconds
        phases = [rng.uniform(0, phase_s) for _ in range(users)]
        await asyncio.gather(*(_user(session, url, body, u, p, end, load) for u, p in enumerate(phases)))
    return load


def run(base_url: str, body: Body, users: int, seconds: float, phase_s: float = 1.0, seed: int = 1) -> Load:
    """Run the load for `seconds` (each user finishes its request in flight) against `base_url`/chat/completions."""
    url = base_url.rstrip("/") + "/chat/completions"
    return asyncio.run(_run(url, body, users, seconds, phase_s, seed))
