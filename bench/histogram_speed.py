"""How many nanoseconds Histogram.record / record_many cost per value (the per-token path of the LLM stats).

Values are inter-token gaps as a streaming client sees them: lognormal around 20 ms with some zero gaps (events read
in the same socket read). Prints the best of several repeats (a noisy machine reports its quiet moments), in ns per
value. Run: /work/venv/bin/python bench/histogram_speed.py
"""

from __future__ import annotations

import math
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loadlib.histogram import Histogram, record_many_into
from loadlib.metrics.stats import LLMStats
from loadlib.records.record import RequestRecord

REQUESTS = 2_000
TOKENS_PER_REQUEST = 256
REPEATS = 5


def _gaps(rng: random.Random) -> list[tuple[float, ...]]:
    out = []
    for _ in range(REQUESTS):
        g = [rng.lognormvariate(math.log(20.0), 0.6) for _ in range(TOKENS_PER_REQUEST - 1)]
        for j in rng.sample(range(len(g)), 5):
            g[j] = 0.0
        out.append(tuple(g))
    return out


def _best_ns_per_value(run: Callable[[], None], n_values: int) -> float:
    best = math.inf
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - t0)
    return best / n_values * 1e9


def main() -> None:
    requests = _gaps(random.Random(42))
    n = sum(len(r) for r in requests)

    def one_by_one() -> None:
        h = Histogram()
        rec = h.record
        for r in requests:
            for v in r:
                rec(v)

    def per_request() -> None:
        h = Histogram()
        for r in requests:
            h.record_many(r)

    def per_request_two() -> None:
        key, total = Histogram(), Histogram()
        both = (key, total)
        for r in requests:
            record_many_into(both, r)

    def yardstick() -> None:
        log = math.log
        for r in requests:
            for v in r:
                if v > 0.0:
                    log(v)

    records = [
        RequestRecord(
            run_id="bench",
            scenario="chat",
            endpoint="mock",
            provider="openai",
            model="mock-llm",
            worker_id="w",
            request_id=str(i),
            start_unix_ns=1,
            ttfb_ms=40.0,
            first_event_ms=45.0,
            ttft_ms=50.0,
            ttfo_ms=50.0,
            e2e_ms=50.0 + sum(r),
            itl_ms=r,
            tpot_ms=sum(r) / len(r),
            prompt_tokens=500,
            completion_tokens=len(r) + 1,
            prompt_tokens_est=510,
            completion_tokens_est=len(r) + 3,
            cost_usd=0.001,
        )
        for i, r in enumerate(requests)
    ]

    def stats_add() -> None:
        stats = LLMStats()
        for rec in records:
            stats.add(rec)

    print(f"{n} values, {REQUESTS} requests x {TOKENS_PER_REQUEST - 1} gaps, best of {REPEATS}")
    print(f"record():                                 {_best_ns_per_value(one_by_one, n):7.1f} ns/record")
    print(f"record_many(one request's gaps):          {_best_ns_per_value(per_request, n):7.1f} ns/record")
    print(f"record_many_into(key + total histograms): {_best_ns_per_value(per_request_two, n):7.1f} ns/record")
    per_request_us = _best_ns_per_value(stats_add, len(records)) / 1000
    print(f"LLMStats.add, one {TOKENS_PER_REQUEST}-token request:     {per_request_us:7.1f} us/request")
    print(f"yardstick, a Python loop calling math.log: {_best_ns_per_value(yardstick, n):7.1f} ns/value")


if __name__ == "__main__":
    main()
