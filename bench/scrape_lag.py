"""Benchmark: does `--llm-server-metrics` slow the load generator? (issue 35: loop lag p99 within 1 ms of the same run
without it.)

The same short headless Locust run (bench/locustfile_bench.py: 8 users streaming back to back) with and without
`--llm-server-metrics` pointed at the server's /metrics, interleaved over a few repeats (the order flips each repeat,
so a drift of the shared machine falls on both), each run's loop lag p99 and CPU p90 taken from its --llm-summary.
It prints every run, the median of each mode and the median of the paired differences (with minus without).

By default the target is the mock with its batching engine (its /metrics is vLLM's whole engine set, about 35 KB),
the mock pinned to one core and Locust to the other; `--url` gives a real server instead (vLLM: its /metrics at the
root, about 54 KB), which then gets the load too.

    python bench/scrape_lag.py                                    # the mock, 3 repeats of 30 s
    python bench/scrape_lag.py --url http://127.0.0.1:8000 --model Qwen/Qwen2.5-0.5B-Instruct --max-tokens 32
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MOCK_CORE, CLIENT_CORE = 1, 0


def locust_cmd(args: argparse.Namespace, host: str, out: Path, metrics_url: str | None) -> list[str]:
    pin = ["taskset", "-c", str(CLIENT_CORE)] if args.pin else []
    cmd = [*pin, sys.executable, "-m", "locust", "-f", "bench/locustfile_bench.py", "--headless", "--host", host]
    cmd += ["-u", str(args.users), "-r", str(args.users), "-t", f"{args.seconds}s", "--llm-model", args.model]
    cmd += ["--llm-api-key-env", "none", "--llm-max-tokens", str(args.max_tokens), "--only-summary"]
    cmd += ["--loglevel", "ERROR", "--llm-summary", str(out)]
    if metrics_url:
        cmd += ["--llm-server-metrics", metrics_url, "--llm-server-metrics-interval", str(args.interval)]
    return cmd


def one_run(args: argparse.Namespace, host: str, metrics_url: str | None) -> dict[str, Any]:
    """One run's client health and, when it scraped, how many scrapes it made and how many failed."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "summary.json"
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        cmd = locust_cmd(args, host, out, metrics_url)
        done = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if not out.exists():
            raise SystemExit(f"the run wrote no summary (exit {done.returncode}): {done.stderr[-2000:]}")
        summary = json.loads(out.read_text())
    client, server = summary.get("client") or {}, summary.get("server_metrics") or {}
    total = summary.get("total") or {}
    return {
        "exit": done.returncode,
        "requests": total.get("count"),
        "itl_p99_ms": ((total.get("latency_ms") or {}).get("itl") or {}).get("p99"),
        "lag_p99_ms": client.get("loop_lag_p99_ms"),
        "cpu_p90": client.get("cpu_p90_percent"),
        "scrapes": server.get("scrapes"),
        "failed": server.get("scrapes_failed"),
    }


@contextlib.contextmanager
def target(args: argparse.Namespace) -> Iterator[tuple[str, str]]:
    """(the base URL the users target, the /metrics URL to scrape): the given server's, or a mock started here."""
    if args.url:
        root = args.url.rstrip("/").removesuffix("/v1")
        yield root + "/v1", args.metrics_url or root + "/metrics"
        return
    from loadlib.mock import MockConfig, start_subprocess

    cfg = MockConfig(engine="batching", output_tokens=args.max_tokens)
    with start_subprocess(cfg, cpu=MOCK_CORE if args.pin else None) as mock:
        yield mock.url + "/v1", args.metrics_url or mock.url + "/metrics"


def parse_costs(url: str) -> str:
    """The body's size and what parsing it costs the loop (median of 20, ms): all of it, and the lines kept."""
    from prometheus_client.parser import text_string_to_metric_families

    from loadlib.metrics import server_metrics as sm

    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()

    def ms(parse: Callable[[], object]) -> float:
        times = []
        for _ in range(20):
            began = time.perf_counter()
            parse()
            times.append((time.perf_counter() - began) * 1000.0)
        return statistics.median(times)

    whole = ms(lambda: sm.sample_of(text_string_to_metric_families(text)))
    kept = ms(lambda: sm.parse(text))
    lines = f"{text.count(chr(10))} lines, {sm.kept(text).count(chr(10))} kept"
    return f"{len(text):,} bytes, {lines}; parsing it all takes {whole:.2f} ms, the kept lines {kept:.2f} ms"


def show(mode: str, run: dict[str, Any]) -> None:
    scraped = f", {run['scrapes']} scrapes ({run['failed']} failed)" if run["scrapes"] is not None else ""
    print(
        f"  {mode:<8} exit {run['exit']}, {run['requests']} requests, loop lag p99 {run['lag_p99_ms']:.2f} ms, "
        f"CPU p90 {run['cpu_p90'] or 0:.0f} %, ITL p99 {run['itl_p99_ms'] or 0:.1f} ms{scraped}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="a server's base URL (its /metrics at the root) instead of the mock")
    ap.add_argument("--metrics-url", help="the /metrics to scrape (default: the target's)")
    ap.add_argument("--model", default="mock-llm")
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--interval", type=float, default=1.0, help="--llm-server-metrics-interval (s)")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--no-pin", dest="pin", action="store_false", help="leave the mock and Locust unpinned")
    args = ap.parse_args()
    args.pin = args.pin and not args.url
    with target(args) as (host, metrics_url):
        print(f"target {host}; /metrics {metrics_url}: {parse_costs(metrics_url)}")
        print(f"{args.users} users, {args.seconds} s a run, scrape every {args.interval:g} s", flush=True)
        runs: dict[str, list[dict[str, Any]]] = {"without": [], "with": []}
        for i in range(args.repeats):
            print(f"repeat {i + 1}:")
            for mode in ("without", "with") if i % 2 == 0 else ("with", "without"):
                runs[mode].append(one_run(args, host, metrics_url if mode == "with" else None))
                show(mode, runs[mode][-1])
    report(runs)


def report(runs: dict[str, list[dict[str, Any]]]) -> None:
    lags = {mode: [r["lag_p99_ms"] for r in rs] for mode, rs in runs.items()}
    diffs = [w - wo for w, wo in zip(lags["with"], lags["without"], strict=True)]
    print(
        f"loop lag p99, median of {len(diffs)}: without {statistics.median(lags['without']):.2f} ms, "
        f"with {statistics.median(lags['with']):.2f} ms; with minus without (paired): median "
        f"{statistics.median(diffs):+.2f} ms, each {', '.join(f'{d:+.2f}' for d in diffs)} (target: within 1 ms)"
    )


if __name__ == "__main__":
    main()
