"""Benchmark: how fast the pool moves traffic when an endpoint gets slow or fails, per policy (docs/failover.md,
"Routing" and "Outlier detection"). Each case is a real headless Locust run of locustfiles/failover_drill.py against
two embedded mocks (primary TTFT 60 ms, secondary 150 ms), 10 users asking twice a second, one drill at +6 s:

- latency: the `latency` policy, primary +1 s TTFT for 10 s (nothing fails)
- slow-call: `priority` with slow-call ejection (TTFT > 0.5 s at a 50 % share over a 4 s window), the same drill
- weighted: the `weighted` policy, weights 3:1, primary 503 for 8 s

Printed per case: the primary's share of the attempts before / during / after the drill, the users' TTFT p95 before
/ during / after, the seconds from the drill's start until the primary's share of a 1-s bin first fell below 20 %
(moved away) and from its stop until it first rose above half its share before (back), and the drill's detect,
failover and failback times. The JSON summaries stay in a temporary folder (printed).

    python bench/failover_routing.py [latency slow-call weighted]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
AT_S, RUN_S = 6, 26
MOCKS = [
    {"name": "primary", "mock": {"ttft_ms": 60, "itl_ms": 8, "output_tokens": 32}},
    {"name": "secondary", "priority": 2, "mock": {"ttft_ms": 150, "itl_ms": 12, "output_tokens": 32}},
]
SLOW = {"endpoint": "primary", "fault": "latency", "at": AT_S, "for": 10, "delay_ms": 1000}
BREAKER = {"failures": 5, "failure_rate": 0, "cooldown_s": 3, "probes": 1}
CASES: dict[str, dict[str, Any]] = {
    "latency": {"policy": "latency", "breaker": BREAKER, "drills": [SLOW]},
    "slow-call": {
        "policy": "priority",
        "breaker": {**BREAKER, "window_s": 4, "min_calls": 10, "slow_call_s": 0.5, "slow_call_rate": 0.5},
        "drills": [SLOW],
    },
    "weighted": {
        "policy": "weighted",
        "endpoints": [{**MOCKS[0], "weight": 3}, {**MOCKS[1], "weight": 1}],
        "breaker": BREAKER,
        "drills": [{"endpoint": "primary", "fault": "http_503", "at": AT_S, "for": 8}],
    },
}


def pool(case: dict[str, Any]) -> str:
    return json.dumps(
        {
            "endpoints": MOCKS,
            "retry": {"max_attempts": 2, "budget": 0.5},
            "targets": {"failover_within_s": None, "user_error_rate_max": 0.05},
            **case,
        }
    )


def run(name: str, folder: Path) -> dict[str, Any]:
    summary = folder / f"{name}.json"
    cmd = [sys.executable, "-m", "locust", "-f", "locustfiles/failover_drill.py", "--headless", "-u", "10", "-r", "10"]
    cmd += ["-t", f"{RUN_S}s", "--llm-pool", pool(CASES[name]), "--llm-summary", str(summary)]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, timeout=RUN_S + 90, check=False)
    return json.loads(summary.read_text())


def moved(summary: dict[str, Any]) -> tuple[float | None, float | None]:
    """Seconds from the drill's start until the primary's share of a bin fell below 20 %, and from its stop until
    it rose above half its share before."""
    failover = summary["failover"]
    d, t = failover["drills"][0], failover["traffic"]
    before = (d["traffic_share"]["before"] or {}).get("primary") or 1.0
    start, stop = d["start"] - t["t0"], d["stop"] - t["t0"]
    away = back = None
    for i, second in enumerate(t["seconds"]):
        total = sum(v[i] for v in t["by_endpoint"].values())
        share = t["by_endpoint"]["primary"][i] / total if total else None
        if share is None:
            continue
        if away is None and start <= second < stop and share < 0.2:
            away = second + 1 - start  # the bin's end: the move happened within it
        if back is None and second >= stop and share > before / 2:
            back = second + 1 - stop
    return away, back


def report(name: str, summary: dict[str, Any]) -> str:
    d = summary["failover"]["drills"][0]
    share = " -> ".join(
        f"{(d['traffic_share'][w] or {}).get('primary', 0) * 100:.0f} %" for w in ("before", "during", "after")
    )
    ttft = " / ".join(f"{d[k] or 0:.0f}" for k in ("ttft_p95_before_ms", "ttft_p95_during_ms", "ttft_p95_after_ms"))
    away, back = (f"{v:.1f}" if v is not None else "-" for v in moved(summary))
    times = ", ".join(f"{k[:-2]} {d[k]['max']}" for k in ("detect_s", "failover_s", "failback_s"))
    return (
        f"{name:10s} primary share {share}; users' TTFT p95 {ttft} ms; away within {away} s, back within {back} s; "
        f"{times} s"
    )


def main(names: list[str]) -> None:
    folder = Path(tempfile.mkdtemp(prefix="failover-routing-"))
    print(f"summaries in {folder}")
    for name in names or list(CASES):
        print(report(name, run(name, folder)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
