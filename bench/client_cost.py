"""Benchmark: our load generator (a real headless Locust process with LLMUser) against a minimal asyncio + aiohttp
reference client (written like vLLM's benchmark_serving), both streaming from the same mock in the same run.

Prints, for each client: client CPU-seconds per 100k streamed tokens and tokens per CPU-second at 32 and 128 streams
with no inter-token delay and at 10 ms between tokens, the TTFT error (median / p99) against the injected 200 ms,
then our figures as ratios of the reference's. Mock and client are pinned to different cores. CPU is user+sys of the
client's process tree over a steady window; tokens are counted by the mock over the same window.

    python bench/client_cost.py              # full run (~3 minutes)
    python bench/client_cost.py --quick      # smaller version
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from loadlib.mock import MockConfig, start_subprocess  # noqa: E402

MOCK_CORE, CLIENT_CORE = 1, 0


def mock_tokens(url: str) -> int:
    with urllib.request.urlopen(url + "/mock/stats", timeout=5) as r:
        return int(json.load(r)["tokens_sent"])


def mock_stats(url: str) -> dict:
    with urllib.request.urlopen(url + "/mock/stats", timeout=5) as r:
        return json.load(r)


def tree_cpu(proc: psutil.Process) -> float:
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def measure(cmd: list[str], mock_url: str, warmup: float, window: float) -> tuple[float, int, subprocess.Popen]:
    """Start the client, skip `warmup` seconds, then measure its CPU and the tokens streamed during `window`."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        ["taskset", "-c", str(CLIENT_CORE), *cmd],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    ps = psutil.Process(proc.pid)
    time.sleep(warmup)
    cpu0, tok0 = tree_cpu(ps), mock_tokens(mock_url)
    time.sleep(window)
    cpu1, tok1 = tree_cpu(ps), mock_tokens(mock_url)
    return cpu1 - cpu0, tok1 - tok0, proc


def run_ours(mock_url: str, streams: int, warmup: float, window: float, tmp: Path) -> dict:
    out = tmp / f"ours-{streams}-{time.time_ns()}.json"
    duration = int(warmup + window + 3)
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        "bench/locustfile_bench.py",
        "--headless",
        "-u",
        str(streams),
        "-r",
        str(streams),
        "-t",
        f"{duration}s",
        "--host",
        mock_url + "/v1",
        "--llm-api-key-env",
        "none",
        "--llm-max-tokens",
        "256",
        "--llm-summary",
        str(out),
        "--only-summary",
        "--loglevel",
        "WARNING",
        "--stop-timeout",
        "30",
    ]
    conns0 = mock_stats(mock_url)["connections_accepted"]
    cpu, tokens, proc = measure(cmd, mock_url, warmup, window)
    _, err = proc.communicate(timeout=120)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"locust failed ({proc.returncode}): {err[-2000:]}")
    summary = json.loads(out.read_text())
    total = summary["total"]
    ttft = total["latency_ms"]["ttft"]
    return {
        "cpu": cpu,
        "tokens": tokens,
        "ttft_p50": ttft["p50"],
        "ttft_p99": ttft["p99"],
        "tpot_p50": total["latency_ms"]["tpot"]["p50"],
        "requests": total["count"],
        "errors": total["errors_total"],
        "connections": mock_stats(mock_url)["connections_accepted"] - conns0,
        "saturated": summary.get("client_saturated"),
    }


def run_reference(mock_url: str, streams: int, warmup: float, window: float, tmp: Path) -> dict:
    out = tmp / f"ref-{streams}-{time.time_ns()}.json"
    cmd = [
        sys.executable,
        "bench/reference_client.py",
        "--url",
        mock_url + "/v1",
        "--streams",
        str(streams),
        "--duration",
        str(warmup + window + 1),
        "--out",
        str(out),
    ]
    cpu, tokens, proc = measure(cmd, mock_url, warmup, window)
    proc.communicate(timeout=120)
    data = json.loads(out.read_text())
    ttfts = sorted(data["ttft_ms"])

    def q(p: float) -> float:
        return ttfts[min(len(ttfts) - 1, max(0, round(p / 100 * len(ttfts)) - 1))]

    return {
        "cpu": cpu,
        "tokens": tokens,
        "ttft_p50": q(50),
        "ttft_p99": q(99),
        "tpot_p50": statistics.median(data["tpot_ms"]) if data["tpot_ms"] else None,
        "requests": data["requests"],
        "errors": 0,
        "connections": None,
        "saturated": None,
    }


def per_100k(r: dict) -> float:
    return r["cpu"] / r["tokens"] * 100_000 if r["tokens"] else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="shorter windows, fewer cases")
    ap.add_argument("--json", help="also write the results as JSON here")
    args = ap.parse_args()
    if shutil.which("taskset") is None:
        raise SystemExit("taskset (util-linux) is needed to pin client and mock to different cores")
    warmup, window = (2.0, 5.0) if args.quick else (3.0, 12.0)
    cases = [("no delay", 0.0, 0.0, 32), ("no delay", 0.0, 0.0, 128), ("ttft 200 ms, 10 ms/token", 200.0, 10.0, 128)]
    if args.quick:
        cases = [cases[0], cases[2]]
    results = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for label, ttft, itl, streams in cases:
            cfg = MockConfig(ttft_ms=ttft, itl_ms=itl, output_tokens=256)
            with start_subprocess(cfg, cpu=MOCK_CORE) as mock:
                ref = run_reference(mock.url, streams, warmup, window, tmp)
                ours = run_ours(mock.url, streams, warmup, window, tmp)
            results.append(
                {"case": label, "streams": streams, "ttft_ms": ttft, "itl_ms": itl, "ours": ours, "reference": ref}
            )
            print_case(results[-1])
    print_table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


def print_case(r: dict) -> None:
    print(f"... {r['case']}, {r['streams']} streams done", file=sys.stderr, flush=True)


def print_table(results: list[dict]) -> None:
    print()
    print(
        f"{'case':<28}{'streams':>8}  {'client':<10}{'CPU-s/100k tok':>15}{'tok/CPU-s':>11}"
        f"{'TTFT err p50':>13}{'p99':>8}{'TPOT p50':>10}{'conns':>7}"
    )
    for r in results:
        for who in ("reference", "ours"):
            m = r[who]
            tok_per_cpu = m["tokens"] / m["cpu"] if m["cpu"] else float("nan")
            err50 = m["ttft_p50"] - r["ttft_ms"] if m["ttft_p50"] is not None else float("nan")
            err99 = m["ttft_p99"] - r["ttft_ms"] if m["ttft_p99"] is not None else float("nan")
            tpot = f"{m['tpot_p50']:.2f}" if m["tpot_p50"] is not None else "-"
            conns = str(m["connections"]) if m["connections"] is not None else "-"
            print(
                f"{r['case']:<28}{r['streams']:>8}  {who:<10}{per_100k(m):>15.2f}{tok_per_cpu:>11.0f}"
                f"{err50:>+13.1f}{err99:>+8.1f}{tpot:>10}{conns:>7}"
            )
        ratio = per_100k(r["ours"]) / per_100k(r["reference"])
        target = 0.6 if r["itl_ms"] == 0 else 0.75
        verdict = "meets" if ratio <= target else "MISSES"
        print(f"{'':<36}ours / reference CPU per token = {ratio:.2f}x ({verdict} target {target}x)")


if __name__ == "__main__":
    main()
