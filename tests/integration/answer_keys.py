"""The batching mock's answer key (`GET /mock/capacity`, docs/mock.md) for the capacity checks, and the rate its
model holds in steady state: the key's rate is the largest at which one run of 400 seeded Poisson arrivals (the first
tenth left out) keeps the bound, a short run whose queue near capacity has not reached its steady state and whose one
seed can fall either side of it; the same simulation with 4,000 arrivals is the steady state."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from loadlib.mock.engine.capacity import Bound, max_rate
from loadlib.mock.engine.params import EngineParams
from loadlib.mock.engine.sim import Workload

STEADY_ARRIVALS = 4000


def answer_key(url: str, query: str) -> dict[str, Any]:
    """The key for `query` (asked after a run: the run's prompts set its median prompt)."""
    with urllib.request.urlopen(f"{url}/mock/capacity?{query}", timeout=120) as r:
        found: dict[str, Any] = json.loads(r.read())
    return found


def steady_rate(key: dict[str, Any], ttft_p95_ms: float) -> float:
    """The largest rate at which the key's model keeps TTFT p95 within `ttft_p95_ms` over 4,000 arrivals."""
    work = key["workload"]
    workload = Workload(work["prompt_tokens"], work["output_tokens"], work["shared_prefix_tokens"])
    bound = [Bound("ttft", 0.95, ttft_p95_ms)]
    return max_rate(EngineParams(**key["params"]), workload, bound, requests=STEADY_ARRIVALS)
