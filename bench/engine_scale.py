"""Is the batching engine's step loop a bottleneck? One mock process (`--engine batching`, a fast engine: 5 ms a
step plus 5 us per sequence, so the model itself allows far more than one core can write) pinned to core 0; the
lean raw-socket client of bench/mock_throughput.py pinned to core 1 keeps 128, 256, 512 and 1024 streams busy
(first the h20-8b profile at 256 streams, its full batch).
Prints per level: tokens/s delivered, the mock's CPU share, and how late the writes went against the model's
times (p50/p99, from the truth) and the worst step-timer lag (/mock/stats).

    /work/venv/bin/python bench/engine_scale.py [--seconds 5] [--levels 128,256,512,1024]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mock_throughput import _drive, _get, _pct

from loadlib.mock import MockConfig, start_subprocess

FAST = {"step_base_ms": 5.0, "decode_ms_per_seq": 0.005, "prefill_ms_per_1k": 1.0, "max_num_seqs": 4096}


def lateness(records: list[dict]) -> list[float]:
    """Each output write's time minus the model's time for it (ms)."""
    out: list[float] = []
    for r in records:
        if r["planned_ttft_ms"] is None:
            continue
        at = r["planned_ttft_ms"]
        times = r["event_times_ms"]
        if times:
            out.append(times[0] - at)
        for t, gap in zip(times[1:], r["planned_itl_ms"], strict=False):
            at += gap
            out.append(t - at)
    return out


def level(streams: int, seconds: float, fast: bool) -> str:
    cfg = MockConfig(engine="batching", output_tokens=200, **(FAST if fast else {}))
    with start_subprocess(cfg, cpu=0, extra_args=["--truth-size", "20000", "--truth-events", "64"]) as mock:
        proc = psutil.Process(mock.pid)
        asyncio.run(_drive("127.0.0.1", mock.port, streams, 0.5))  # warm-up
        _get(mock.port, "/mock/reset")
        cpu0, t0 = sum(proc.cpu_times()[:2]), time.perf_counter()
        asyncio.run(_drive("127.0.0.1", mock.port, streams, seconds))
        elapsed = time.perf_counter() - t0
        cpu = sum(proc.cpu_times()[:2]) - cpu0
        stats = _get(mock.port, "/mock/stats")
        late = lateness(_get(mock.port, "/mock/truth?limit=20000")["records"])
    tokens = stats["tokens_sent"]
    return (
        f"{'fast' if fast else 'h20-8b':7s} streams={streams:5d}  tokens/s={tokens / elapsed:9,.0f}  "
        f"mock cpu={cpu / elapsed:4.0%}  "
        f"write lateness p50={_pct(late, 0.5):.2f} ms p99={_pct(late, 0.99):.2f} ms  "
        f"worst step-timer lag={stats['engine']['max_lag_ms']:.2f} ms"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--levels", default="128,256,512,1024")
    args = ap.parse_args()
    os.sched_setaffinity(0, {1})
    print(level(256, args.seconds, fast=False), flush=True)  # the published profile at its full batch
    for streams in (int(x) for x in args.levels.split(",")):
        print(level(streams, args.seconds, fast=True), flush=True)


if __name__ == "__main__":
    main()
