"""What the web UI's charts add to a worker's report (docs/webui.md, "What a point is"): the bytes, msgpack as Locust
sends them, of one 3 s report's bucket slices of one series beside the LLM statistics' own payload, at 10, 100 and
1,000 requests/s of one worker. TTFT uniform 10-70 ms, TPOT 1.5-3 ms, 8 output tokens: the histograms fill as a
jittered load fills them.

    /work/venv/bin/python bench/chart_slices.py
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import msgpack

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadlib.errors import ErrorClass
from loadlib.metrics.slices import BucketSlicer
from loadlib.metrics.stats import LLMStats
from loadlib.records.record import RequestRecord

REPORT_S = 3.0  # Locust's WORKER_REPORT_INTERVAL


def record(rng: random.Random) -> RequestRecord:
    ttft = rng.uniform(10, 70)
    tpot = rng.uniform(1.5, 3)
    return RequestRecord(
        run_id="bench",
        scenario="chat",
        endpoint="mock",
        provider="openai",
        model="m",
        worker_id="w",
        request_id="r",
        status=ErrorClass.OK,
        completion_tokens=8,
        ttft_ms=ttft,
        e2e_ms=ttft + 7 * tpot,
    )


def report_bytes(rate: int, rng: random.Random) -> tuple[int, int]:
    """(statistics, slices) bytes of one report of a worker ending `rate` requests a second from mid-bucket."""
    now = [1000.3]
    slicer, stats = BucketSlicer(lambda: now[0]), LLMStats()
    for k in range(int(rate * REPORT_S)):
        now[0] = 1000.3 + k / rate
        r = record(rng)
        slicer.add(r)
        stats.add(r, False)
    return len(msgpack.packb(stats.serialize())), len(msgpack.packb(slicer.ship()))


def main() -> None:
    rng = random.Random(1)
    for rate in (10, 100, 1000):
        stats, slices = report_bytes(rate, rng)
        share = 100 * slices / stats
        print(f"{rate:>5} requests/s: statistics {stats:>6} B, chart slices {slices:>5} B (+{share:.0f} %)")


if __name__ == "__main__":
    main()
