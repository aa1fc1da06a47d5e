"""Can `python -m loadlib report` build the run report from 1,000,000 records in under 30 s and well under 2 GB?

Writes synthetic `--llm-records` lines (every field a real record has, ~1.3 KB each) for a one-hour run of four
workers into a temporary file: chat and compliance on two endpoints, support chat whose prompt grows by turn, long
documents of 2,000 to 120,000 prompt tokens; TTFT grows with the prompt (prefill) and with load over the hour; ~30
inter-token gaps per answer, a few of them 0 ms; ~2 % errors of four classes. The file is written by one child
process and the report built by another, so the report's peak RSS (ru_maxrss of that child alone, from wait4) is
its own and not the generator's.

    python bench/report_1m.py                   # 1,000,000 records
    python bench/report_1m.py --records 200000 --keep /tmp/r.html
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

ROOT = Path(__file__).resolve().parent.parent
RUN_S = 3600.0
WORKERS = 4
CHUNK = 100_000
# scenario, endpoint, share of requests, $ per 1M prompt tokens, $ per 1M completion tokens
GROUPS = (
    ("chat", "gpt-4o-mini", 0.40, 0.15, 0.60),
    ("chat", "claude-haiku", 0.20, 0.80, 4.00),
    ("support_chat", "gpt-4o-mini", 0.25, 0.15, 0.60),
    ("long_document", "gpt-4o-mini", 0.10, 0.15, 0.60),
    ("compliance", "claude-haiku", 0.05, 0.80, 4.00),
)
ERRORS = (("rate_limited", 429), ("http_5xx", 503), ("timeout_ttft", None), ("stream_broken", 200))
TEMPLATE = {
    "run_id": "20261201-120000-bench",
    "provider": "openai",
    "model": "mock-llm",
    "server_request_id": None,
    "attempt": 1,
    "hedge": False,
    "turn": None,
    "ttfo_ms": None,
    "intended_send_ms": None,
    "schedule_lag_ms": None,
    "cached_prompt_tokens": 0,
    "reasoning_tokens": 0,
    "usage_rejected": None,
    "usage_source": "stream",
    "usage_disagrees": False,
    "finish_reason": "stop",
    "error_message": None,
    "ratelimit": {},
    "time": "2026-12-01T12:00:00.000Z",
}


def chunk_columns(rng: np.random.Generator, n: int, first: int, total: int) -> dict[str, np.ndarray]:
    """One chunk's numbers, vectorised: starts spread over the hour in order, groups, prompts, timings, errors."""
    shares = np.array([g[2] for g in GROUPS])
    group = rng.choice(len(GROUPS), size=n, p=shares / shares.sum())
    start_s = np.sort(rng.uniform(first / total, (first + n) / total, n)) * RUN_S
    turn = rng.integers(1, 9, n)
    prompt = np.select(
        [group == 2, group == 3, group == 4],
        [300 + 450 * turn, rng.integers(2_000, 120_000, n), rng.integers(800, 3_000, n)],
        rng.integers(30, 400, n),
    )
    completion = rng.integers(16, 64, n)
    load = 1.0 + start_s / RUN_S  # the server slows down as the hour goes on
    ttft = rng.lognormal(np.log(120.0), 0.35, n) * load + prompt * 0.012
    itl = rng.lognormal(np.log(14.0), 0.4, (n, 30)) * load[:, None]
    itl[rng.random((n, 30)) < 0.02] = 0.0
    failed = rng.random(n) < 0.02
    return {
        "group": group,
        "start_s": start_s,
        "turn": turn,
        "prompt": prompt,
        "completion": completion,
        "ttft": ttft,
        "itl": itl,
        "failed": failed,
        "error": rng.integers(0, len(ERRORS), n),
    }


def record(i: int, c: dict[str, np.ndarray], t0_ns: int) -> dict:
    """One record line from row i of a chunk."""
    scenario, endpoint, _, p_in, p_out = GROUPS[c["group"][i]]
    worker = f"worker-{i % WORKERS}"
    prompt, completion = int(c["prompt"][i]), int(c["completion"][i])
    ttft, gaps = float(c["ttft"][i]), c["itl"][i].tolist()
    e2e = ttft + sum(gaps) + 1.5
    d = dict(TEMPLATE)
    d.update(
        scenario=scenario,
        endpoint=endpoint,
        worker_id=worker,
        request_id=f"{worker}-{i}",
        user_request_id=f"{worker}-{i}",
        turn=int(c["turn"][i]) if scenario == "support_chat" else None,
        start_unix_ns=t0_ns + int(c["start_s"][i] * 1e9),
        ttfb_ms=ttft * 0.2,
        first_event_ms=ttft * 0.2,
        ttft_ms=ttft,
        e2e_ms=e2e,
        itl_ms=gaps,
        tpot_ms=(e2e - ttft) / (completion - 1),
        stream_tpot_ms=sum(gaps) / len(gaps),
        stream_tail_ms=1.5,
        output_events=len(gaps) + 1,
        prompt_tokens=prompt,
        completion_tokens=completion,
        prompt_tokens_est=prompt,
        completion_tokens_est=None,
        cost_usd=(prompt * p_in + completion * p_out) / 1e6,
        status="ok",
        http_status=200,
        response_bytes=400 + 220 * completion,
    )
    if c["failed"][i]:
        _fail(d, ERRORS[c["error"][i]])
    return d


def _fail(d: dict, error: tuple[str, int | None]) -> None:
    """An error attempt: the timings it got before failing, no output, no cost unless output was generated."""
    status, http = error
    d.update(status=status, http_status=http, error_message=f"synthetic {status}", finish_reason=None)
    if status != "stream_broken":
        d.update(ttft_ms=None, ttfo_ms=None, itl_ms=[], tpot_ms=None, stream_tpot_ms=None, stream_tail_ms=None)
        d.update(e2e_ms=d["ttfb_ms"], completion_tokens=None, prompt_tokens=None, cost_usd=None, output_events=0)
        d.update(usage_source=None)
    else:
        d.update(tpot_ms=None, stream_tail_ms=None, itl_ms=d["itl_ms"][:10], e2e_ms=d["ttft_ms"] + 150.0)


def write_records(path: Path, total: int, seed: int = 7) -> int:
    """`total` record lines into `path`; returns the file's size in bytes."""
    rng = np.random.default_rng(seed)
    t0_ns = 1_796_126_400_000_000_000
    dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    with path.open("wb") as f:
        for first in range(0, total, CHUNK):
            n = min(CHUNK, total - first)
            c = chunk_columns(rng, n, first, total)
            f.write(b"".join(dumps(record(i, c, t0_ns), option=newline) for i in range(n)))
    return path.stat().st_size


def generate(records: Path, total: int) -> None:
    """Write the records in a child process (its memory is not the report's)."""
    subprocess.run([sys.executable, __file__, "--write-only", str(records), "--records", str(total)], check=True)


def build(records: Path, out: Path) -> tuple[int, float, float]:
    """Run the report command in a child; (exit code, wall seconds, that child's peak RSS in MB)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-m", "loadlib", "report", str(records), "-o", str(out)]
    t0 = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=ROOT, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode, wall, usage.ru_maxrss / 1024.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path, help="keep the report here (default: a temporary file, removed)")
    ap.add_argument("--write-only", type=Path, help=argparse.SUPPRESS)  # the generator child
    args = ap.parse_args()
    if args.write_only:
        write_records(args.write_only, args.records)
        return 0
    with tempfile.TemporaryDirectory(prefix="report-1m-") as tmp:
        records = Path(tmp) / "records.jsonl"
        t0 = time.perf_counter()
        generate(records, args.records)
        size, took = records.stat().st_size, time.perf_counter() - t0
        print(f"generated {args.records:,} records, {size / 1e6:.0f} MB, in {took:.1f} s", flush=True)
        code, wall, rss_mb = build(records, args.keep or Path(tmp) / "report.html")
    print(f"report: exit {code}, wall {wall:.1f} s, peak RSS {rss_mb:.0f} MB")
    return code


if __name__ == "__main__":
    sys.exit(main())
