"""The rate answer key (`GET /mock/capacity`'s `rate_per_s`): how much it moves with its seed, and how long it takes.

For the docs' query (h20-8b, 1,024-token prompts, 128 output tokens, TTFT p95 under 1 s) and the three settings of
bench/capacity_accuracy.py (38-token prompts, 4 output tokens, TTFT p95 under 300 ms), the key with seeds
0 .. --seeds - 1: each key, its wall and CPU seconds, the spread (half the range over the midpoint), and beside it
the old key's (one run of 400 arrivals) for the same seeds. In-process, the same function the route runs.

    /work/venv/bin/python bench/rate_key.py [--seeds 8] [--only docs]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadlib.mock.engine.capacity import Bound, max_rate, steady_arrivals
from loadlib.mock.engine.params import PROFILES, EngineParams
from loadlib.mock.engine.sim import Workload

BENCH = {"max_batched_tokens": 64, "prefix_caching": False, "step_base_ms": 6.0, "decode_ms_per_seq": 0.5}
QUERIES: dict[str, tuple[EngineParams, Workload, list[Bound]]] = {
    "docs": (PROFILES["h20-8b"], Workload(1024, 128), [Bound("ttft", 0.95, 1000.0)]),
    **{
        f"{pre:g} ms/1k": (EngineParams(prefill_ms_per_1k=pre, **BENCH), Workload(38, 4), [Bound("ttft", 0.95, 300.0)])
        for pre in (1000.0, 500.0, 250.0)
    },
}


def spread(values: list[float]) -> float:
    """Half the range over the midpoint, in percent: the +/- that covers every value."""
    return 100.0 * (max(values) - min(values)) / (max(values) + min(values))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--only", choices=sorted(QUERIES), help="one query")
    a = ap.parse_args()
    for name, (params, work, bounds) in QUERIES.items():
        if a.only and name != a.only:
            continue
        keys, walls, cpus, short = [], [], [], []
        for seed in range(a.seeds):
            wall, cpu = time.perf_counter(), time.process_time()
            keys.append(max_rate(params, work, bounds, seed=seed))
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
            short.append(max_rate(params, work, bounds, requests=400, seed=seed))
        print(f"{name} ({steady_arrivals(work)} arrivals a run): keys {[round(k, 2) for k in keys]}")
        times = f"wall {min(walls):.1f}-{max(walls):.1f} s, CPU {min(cpus):.1f}-{max(cpus):.1f} s"
        print(f"  +/-{spread(keys):.1f} %, {times}")
        print(f"  400 arrivals: {[round(k, 2) for k in short]}, +/-{spread(short):.1f} %", flush=True)


if __name__ == "__main__":
    main()
