"""Reference client for the benchmark: a minimal asyncio + aiohttp streaming loop written the way vLLM's
benchmark_serving does it (json.loads per chunk, TTFT on the first chunk with content). Not part of loadlib.

    python bench/reference_client.py --url http://127.0.0.1:8000/v1 --streams 32 --duration 12 --out ref.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import aiohttp


async def one_stream(
    session: aiohttp.ClientSession, url: str, body: dict, ttfts: list[float], tpots: list[float], counts: list[int]
) -> None:
    st = time.perf_counter()
    ttft = None
    most_recent = st
    n = 0
    async with session.post(url, json=body) as resp:
        async for chunk_bytes in resp.content:
            chunk_bytes = chunk_bytes.strip()
            if not chunk_bytes:
                continue
            chunk = chunk_bytes.decode("utf-8").removeprefix("data: ")
            if chunk == "[DONE]":
                continue
            data = json.loads(chunk)
            if choices := data.get("choices"):
                content = choices[0]["delta"].get("content")
                if content:
                    now = time.perf_counter()
                    if ttft is None:
                        ttft = now - st
                    most_recent = now
                    n += 1
    if ttft is not None:
        ttfts.append(ttft * 1000)
        if n > 1:
            tpots.append((most_recent - st - ttft) * 1000 / (n - 1))
    counts.append(n)


async def worker(session, url, body, deadline, ttfts, tpots, counts) -> None:
    while time.perf_counter() < deadline:
        await one_stream(session, url, body, ttfts, tpots, counts)


async def main_async(args: argparse.Namespace) -> dict:
    url = args.url.rstrip("/") + "/chat/completions"
    body = {
        "model": "mock-llm",
        "messages": [{"role": "user", "content": "Tell me about load testing."}],
        "max_tokens": args.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    ttfts: list[float] = []
    tpots: list[float] = []
    counts: list[int] = []
    connector = aiohttp.TCPConnector(limit=args.streams)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as session:
        deadline = time.perf_counter() + args.duration
        await asyncio.gather(*(worker(session, url, body, deadline, ttfts, tpots, counts) for _ in range(args.streams)))
    return {"ttft_ms": ttfts, "tpot_ms": tpots, "requests": len(counts), "tokens": sum(counts)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--url", required=True)
    ap.add_argument("--streams", type=int, default=32)
    ap.add_argument("--duration", type=float, default=12.0)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    result = asyncio.run(main_async(args))
    with open(args.out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
