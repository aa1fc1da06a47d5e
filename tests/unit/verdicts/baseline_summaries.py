"""Summaries with histograms, as --llm-summary writes them, built from drawn latencies for the baseline tests."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loadlib.histogram import Histogram

Draw = Callable[[random.Random], float]


def lognormal(median: float, sigma: float = 0.5) -> Draw:
    return lambda rng: median * rng.lognormvariate(0.0, sigma)


def row(scenario: str, endpoint: str, n: int, draws: dict[str, Draw], rng: random.Random) -> dict[str, Any]:
    """A summary row whose latency histograms hold `n` draws of each metric."""
    hs = {}
    for metric, draw in draws.items():
        h = Histogram()
        for _ in range(n):
            h.record(draw(rng))
        hs[metric] = h
    latency = {m: {"count": h.count, "p50": h.percentile(50), "p95": h.percentile(95)} for m, h in hs.items()}
    return {
        "name": f"{scenario} @ {endpoint}" if scenario else "Aggregated",
        "scenario": scenario,
        "endpoint": endpoint,
        "count": n,
        "ok": n,
        "errors_total": 0,
        "errors": {},
        "latency_ms": latency,
        "output_tokens_per_s": 100.0 * n / 1000,
        "histograms": {m: h.to_dict() for m, h in hs.items()},
    }


def summary(n: int, draws: dict[str, Draw], seed: int) -> dict[str, Any]:
    """One row (chat @ mock) and its total: the same samples, as in a run with one row."""
    r = row("chat", "mock", n, draws, random.Random(seed))
    total = {**r, "name": "Aggregated", "scenario": "", "endpoint": ""}
    return {"meta": {}, "duration_s": 10.0, "rows": [r], "total": total}


def write(path: Path, data: dict[str, Any]) -> str:
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)
