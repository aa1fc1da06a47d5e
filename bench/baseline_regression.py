"""Baseline regression against the mock's ground truth (docs/baseline.md, "Does it work?"): how often
`python -m loadlib compare --baseline` calls a regression between like runs (A/A) and finds a 10 % TTFT slowdown
(A/B) at the sample size the docs recommend.

Every run is one headless Locust process (locustfiles/chat.py, --users users for --seconds seconds: 2,000 or more
requests on a busy 2-core machine, the size docs/baseline.md recommends). The two runs of a pair go at the same
time, so that the machine's other load weighs on both alike: the rule judges sampling error, not a machine that got
busier between two runs. The target is a mock with jitter: TTFT uniform 40 +/- 30 ms, 8 output tokens 3 +/- 2 ms
apart; the slowed mock makes every TTFT 10 % longer (44 +/- 33 ms). One mock process per setting for the whole
bench, each with its own seed, so no two runs see the same draws. A/A: --aa pairs of two runs on the same mock; A/B:
--ab pairs of one run on each. Each pair is compared with the command's defaults (TTFT, TTFO, TPOT, stream TPOT, E2E
at p50, p95 and p99; a 5 % false-alarm budget shared by the comparisons, no tolerance). Prints per pair the
requests of each side, what regressed and whether a client was saturated; then the counts.

    /work/venv/bin/python bench/baseline_regression.py [--aa 20] [--ab 10] [--seconds 30] [--users 20]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadlib.mock import MockConfig, start_subprocess
from loadlib.reports import compare_baseline
from loadlib.verdicts.baseline import TOTAL_ROW
from loadlib.verdicts.baseline_file import load_baseline
from tests.integration.locust_runs import ROOT, env, headless, load, locust_cmd

A = MockConfig(ttft_ms=40.0, ttft_jitter_ms=30.0, itl_ms=3.0, itl_jitter_ms=2.0, output_tokens=8)
B = MockConfig(ttft_ms=44.0, ttft_jitter_ms=33.0, itl_ms=3.0, itl_jitter_ms=2.0, output_tokens=8)  # TTFT x 1.1


def start_run(url: str, out: Path, users: int, seconds: int) -> subprocess.Popen[str]:
    """One headless Locust process, started."""
    args = ("--host", url + "/v1", "--llm-api-key-env", "none", "--llm-summary", str(out), "--only-summary")
    cmd = locust_cmd(*headless(users, seconds), *args)
    return subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def pair(
    label: str, urls: tuple[str, str], tmp: Path, users: int, seconds: int, show: bool = False
) -> tuple[bool, bool, int]:
    """Both runs of a pair at once (the machine's load then weighs on both alike) and their comparison: (any
    regression, TTFT p95 regressed, the smaller side's TTFT samples)."""
    files = [tmp / f"{label.replace('/', '').replace(' ', '-')}-{side}.json" for side in ("base", "cand")]
    procs = [start_run(url, out, users, seconds) for url, out in zip(urls, files, strict=True)]
    for proc, out in zip(procs, files, strict=True):
        _, err = proc.communicate(timeout=seconds + 120)
        if not out.exists():
            raise SystemExit(f"run failed, exit {proc.returncode}: {err[-2000:]}")
    saturated = ["yes" if load(out).get("client_saturated") else "no" for out in files]
    base, cand = load_baseline([str(files[0])]), load_baseline([str(files[1])])
    table = compare_baseline.build(base.pooled, cand.pooled)
    n = [p[TOTAL_ROW]["ttft"].count for p in (base.pooled, cand.pooled)]
    regressed = [f"{x.metric} {x.percentile} x{x.change.ratio or 0:.3f}" for x in table.regressed]
    ttft95 = any(x.metric == "ttft" and x.percentile == "p95" for x in table.regressed)
    sat = " client saturated: " + "/".join(saturated)
    if show:
        print(compare_baseline.text(table, *(str(f.name) for f in files)))
    print(f"{label}: {n[0]:,} vs {n[1]:,} requests, {len(regressed)} of {table.judged} regressed {regressed}{sat}")
    return bool(regressed), ttft95, min(n)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--aa", type=int, default=20, help="A/A pairs")
    p.add_argument("--ab", type=int, default=10, help="A/B pairs")
    p.add_argument("--seconds", type=int, default=30, help="of each run: at least the docs' 2,000 requests a side")
    p.add_argument("--users", type=int, default=20, help="of each run (a pair's two runs go at once)")
    p.add_argument("--show", action="store_true", help="print each A/B pair's whole table")
    args = p.parse_args()
    with (
        start_subprocess(A, seed=101) as mock_a,
        start_subprocess(B, seed=202) as mock_b,
        tempfile.TemporaryDirectory() as tmp,
    ):
        runs = (args.users, args.seconds)
        aa = [pair(f"A/A {i + 1}", (mock_a.url, mock_a.url), Path(tmp), *runs) for i in range(args.aa)]
        ab = [pair(f"A/B {i + 1}", (mock_a.url, mock_b.url), Path(tmp), *runs, args.show) for i in range(args.ab)]
    fewest = min(n for *_, n in aa + ab) if aa + ab else 0
    print(f"fewest successful requests on a side: {fewest:,} (docs/baseline.md recommends at least 2,000)")
    print(f"A/A: {sum(r for r, *_ in aa)} of {len(aa)} pairs reported a regression (acceptance: at most 1)")
    print(
        f"A/B: {sum(r for r, *_ in ab)} of {len(ab)} pairs reported a regression, TTFT p95 among them in "
        f"{sum(t for _, t, _ in ab)} (acceptance: at least 9)"
    )


if __name__ == "__main__":
    main()
