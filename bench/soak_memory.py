"""Benchmark: is a long distributed run's memory flat? A real master and workers for a long time, their RSS sampled.

A real headless master (`locustfiles/support_chat.py`, 16 users, the embedded mock as its target, which runs in a
process of its own) and 2 real workers on loopback, with the InfluxDB sink writing into a throw-away influxd 1.x
when one is installed (Debian package `influxdb`; `--no-influx` leaves it out). The RSS of the master and of each
worker is sampled every --every seconds (30) and printed; at the end, for each process, its RSS at the half and at
the end of the run and the trend over the second half (least squares, in MB and MB per hour): a run whose memory is
bounded shows a flat second half. The run's own figures follow: requests counted, InfluxDB points written and
dropped, the exit code.

    python bench/soak_memory.py                       # 2 hours (the figures in docs/metrics.md, "Memory")
    python bench/soak_memory.py --minutes 15          # a shorter soak
    python bench/soak_memory.py --minutes 10 --trace  # where the master's memory grows (slower; RSS not comparable)
    python bench/soak_memory.py --server-metrics      # a mock of its own, its /metrics scraped every second

`--trace` runs the master under tracemalloc and writes, every --every seconds after the first third of the run, the
allocation sites that grew most since then (with their call stacks) to results/soak-trace.txt: the way to find what
a master keeps for the whole run. Tracing costs the master CPU and memory of its own, so its RSS then says nothing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "integration")]

from influx_server import InfluxServer, find_influxd  # noqa: E402
from locust_runs import env, free_port  # noqa: E402

from loadlib.mock import MockConfig, parse_overrides, start_subprocess  # noqa: E402

LOCUSTFILE = "locustfiles/support_chat.py"
MOCK = "ttft_ms=80,itl_ms=20,output_tokens=96"  # a small engine's pace, within support chat's TTFT SLO: ~4 requests/s
TRACE_FILE = ROOT / "results" / "soak-trace.txt"


def master_cmd(args: argparse.Namespace, port: int, summary: Path, influx: str | None, mock: str | None) -> list[str]:
    """The master's command: plain Locust, or Locust under bench/soak_probe.py's tracemalloc (--trace). With `mock`
    (a mock of this script's, --server-metrics) it targets that one and scrapes its /metrics, else its own."""
    locust = ["-f", args.locustfile, "--master", "--headless", "--expect-workers", str(args.workers)]
    locust += ["--expect-workers-max-wait", "60", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port)]
    locust += ["-u", str(args.users), "-r", str(args.users), "-t", f"{int(args.minutes * 60)}s", "--only-summary"]
    locust += ["--llm-summary", str(summary), "--loglevel", "WARNING"]
    if mock:
        locust += ["--host", f"{mock}/v1", "--llm-api-key-env", "none", "--llm-server-metrics", f"{mock}/metrics"]
    else:
        locust += ["--llm-mock", args.mock]
    if influx:
        locust += ["--influx-url", influx, "--influx-api", "v1", "--influx-db", "soak"]
    if args.trace:
        probe = [str(ROOT / "bench" / "soak_probe.py"), str(TRACE_FILE), str(args.every), str(args.minutes * 20)]
        return [sys.executable, *probe, *locust]
    return [sys.executable, "-m", "locust", *locust]


def worker_cmd(args: argparse.Namespace, port: int) -> list[str]:
    cmd = [sys.executable, "-m", "locust", "-f", args.locustfile, "--worker", "--master-host", "127.0.0.1"]
    return [*cmd, "--master-port", str(port), "--loglevel", "WARNING"]


def rss_mb(proc: psutil.Process) -> float | None:
    try:
        return float(proc.memory_info().rss) / 2**20
    except psutil.Error:
        return None


def trend(points: list[tuple[float, float]]) -> tuple[float, float]:
    """(growth in MB over the points' span, in MB per hour): the least-squares slope of RSS on time."""
    if len(points) < 2:
        return 0.0, 0.0
    ts, ms = [t for t, _ in points], [m for _, m in points]
    slope = statistics.linear_regression(ts, ms).slope  # MB per second
    return slope * (ts[-1] - ts[0]), slope * 3600


def report(name: str, samples: list[tuple[float, float]], half: float) -> str:
    """One process's line: RSS at the half and at the end, the second half's trend, range and verdict."""
    second = [(t, m) for t, m in samples if t >= half]
    if len(second) < 2:
        return f"{name}: too few samples in the second half"
    grew, per_hour = trend(second)
    spread = max(m for _, m in second) - min(m for _, m in second)
    verdict = "flat (within 2 MB)" if abs(grew) <= 2.0 else "GROWS"
    return (
        f"{name}: {second[0][1]:.1f} MB at the half, {second[-1][1]:.1f} MB at the end; second half: trend "
        f"{grew:+.1f} MB ({per_hour:+.1f} MB/h), range {spread:.1f} MB: {verdict}"
    )


def soak(args: argparse.Namespace, influx: str | None, mock: str | None, tmp: Path) -> int:
    """Run the master and workers, sample their RSS until the master exits; print the figures; its exit code."""
    port, summary = free_port(), tmp / "summary.json"
    log = (tmp / "master.log").open("w")
    cmd = master_cmd(args, port, summary, influx, mock)
    master = subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=log, stderr=log)
    workers = [
        subprocess.Popen(
            worker_cmd(args, port), cwd=ROOT, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        for _ in range(args.workers)
    ]
    names = ["master", *(f"worker {i + 1}" for i in range(args.workers))]
    procs = [psutil.Process(p.pid) for p in (master, *workers)]
    samples: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    start, deadline = time.monotonic(), time.monotonic() + args.minutes * 60 + 300
    try:
        while master.poll() is None and time.monotonic() < deadline:
            now = time.monotonic() - start
            row = [rss_mb(p) for p in procs]
            for name, mb in zip(names, row, strict=True):
                if mb is not None:
                    samples[name].append((now, mb))
            shown = "  ".join(
                f"{n} {m:6.1f}" if m is not None else f"{n}   gone" for n, m in zip(names, row, strict=True)
            )
            print(f"{now / 60:6.1f} min  RSS MB: {shown}", flush=True)
            time.sleep(min(args.every, max(deadline - time.monotonic(), 0.1)))
    finally:
        for p in (master, *workers):
            _end(p)
        log.close()
    half = args.minutes * 60 / 2
    print(*(report(n, samples[n], half) for n in names), sep="\n")
    print(run_figures(summary, master.returncode, tmp / "master.log"))
    return int(master.returncode or 0)


def _end(proc: subprocess.Popen[Any]) -> None:
    """Wait for a process this script started to end with the run (it should); stop it past 20 s."""
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_figures(path: Path, code: int | None, log: Path) -> str:
    """The run's counts from its summary: requests, InfluxDB points, exit code (the log's tail when it has none)."""
    if not path.exists():
        return f"no summary (exit code {code}); the master's log ends: {log.read_text()[-1500:]}"
    s = json.loads(path.read_text())
    sink = s.get("sink") or {}
    points = f", InfluxDB points written {sink.get('written')}, dropped {sink.get('dropped')}" if sink else ""
    server = s.get("server_metrics") or {}
    scrapes = f", {server.get('scrapes')} scrapes of the server's metrics" if server else ""
    verdict = next((line for line in reversed(log.read_text().splitlines()) if line.startswith("Verdict")), "")
    return f"run: {s['total']['count']} requests{points}{scrapes}; exit code {code}\n{verdict}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=120.0, help="the run's length (default 2 hours)")
    parser.add_argument("--every", type=float, default=30.0, help="seconds between RSS samples")
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--locustfile", default=LOCUSTFILE)
    parser.add_argument("--mock", default=MOCK, help="the embedded mock's settings (--llm-mock)")
    parser.add_argument("--no-influx", action="store_true", help="run without the InfluxDB sink")
    parser.add_argument(
        "--server-metrics", action="store_true", help="a mock of its own, its /metrics scraped (--llm-server-metrics)"
    )
    parser.add_argument("--trace", action="store_true", help=f"tracemalloc in the master, growth to {TRACE_FILE}")
    args = parser.parse_args()
    binary, why = find_influxd()
    if binary is None and not args.no_influx:
        print(f"note: no InfluxDB ({why}): the run goes without the sink", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        server = InfluxServer(binary, Path(tmp) / "influx") if binary and not args.no_influx else None
        if server is not None:
            server.start()
            server.create_database("soak")
        mock = (
            start_subprocess(MockConfig().with_overrides(parse_overrides(args.mock, "--mock")), stderr="devnull")
            if args.server_metrics
            else None
        )
        try:
            print(
                f"{args.minutes:g} min, {args.users} users, {args.workers} workers, mock {args.mock}, "
                f"InfluxDB {server.url if server else 'off'}, server metrics {'on' if mock else 'off'}",
                flush=True,
            )
            code = soak(args, server.url if server else None, mock.url if mock else None, Path(tmp))
        finally:
            if mock is not None:
                mock.stop()
            if server is not None:
                server.stop()
            shutil.rmtree(Path(tmp) / "influx", ignore_errors=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
