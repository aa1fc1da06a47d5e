"""Benchmark: the peak RSS of a real headless Locust process (locustfiles/chat.py) against each hostile behaviour at
1, 10 and 100 users, and the worst case per stream, against the budget docs/metrics.md ("Memory") states.

Each behaviour gets its own hostile server (`python -m loadlib.mock.hostile --behaviour NAME`) and one bounded run
per user count (`-t`, killed 30 s past it); the Locust process tree's RSS is sampled every 0.1 s with psutil. A
stream's cost is the slope (peak at N users - peak at 1 user) / (N - 1), the worst over N and behaviours (the first
stream also pays one-time costs such as loading the tokenizer, so only a lone 1-user run is measured against the
control `slow-ok`); it is compared with the per-stream budget, the worst peak with the per-worker budget.

    python bench/hostile_memory.py                         # every behaviour at 1, 10, 100 users, -t 4s (~10 min)
    python bench/hostile_memory.py --users 1,10 -t 3 --behaviours flood,firehose-tiny,fat-events
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
CONTROL = "slow-ok"
MIB = 1 << 20


def environment() -> dict[str, str]:
    """The repository on the path, and no provider key: the hostile server takes any key or none."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def behaviours() -> list[str]:
    """Every behaviour `--list` shows (first word of each line)."""
    out = subprocess.run(
        [sys.executable, "-m", "loadlib.mock.hostile", "--list"], cwd=ROOT, env=environment(), text=True, check=True,
        capture_output=True, timeout=60,
    ).stdout  # fmt: skip
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def start_hostile(name: str) -> tuple[subprocess.Popen[str], str]:
    """A hostile server on a free port, and the URL its first stdout line announced."""
    cmd = [sys.executable, "-m", "loadlib.mock.hostile", "--behaviour", name, "--port", "0"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=environment(), stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 20)
    line = proc.stdout.readline() if ready else ""
    if " listening on " not in line:
        stop(proc)
        raise RuntimeError(f"hostile server {name} did not start: {line!r}")
    return proc, line.strip().rsplit(" ", 1)[1]


def stop(proc: subprocess.Popen[str]) -> None:
    """Terminate, then kill past 5 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def peak_rss(url: str, users: int, seconds: int) -> tuple[int, int]:
    """(peak RSS of the Locust process tree in bytes, exit code) of one headless run against `url`."""
    cmd = [sys.executable, "-m", "locust", "-f", "locustfiles/chat.py", "--headless", "-u", str(users)]
    cmd += ["-r", str(users), "-t", f"{seconds}s", "--host", url + "/v1", "--llm-api-key-env", "none"]
    cmd += ["--llm-stop-on-fatal-s", "0"]  # a run that can only fail is measured, not stopped early
    proc = subprocess.Popen(cmd, cwd=ROOT, env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    root, peak, deadline = psutil.Process(proc.pid), 0, time.monotonic() + seconds + 30
    while proc.poll() is None and time.monotonic() < deadline:
        peak = max(peak, tree_rss(root))
        time.sleep(0.1)
    if proc.poll() is None:
        proc.kill()
    return peak, proc.wait(10)


def tree_rss(root: psutil.Process) -> int:
    """RSS of a process and its children; 0 for any that vanished meanwhile."""
    total = 0
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    for p in procs:
        with contextlib.suppress(psutil.Error):
            total += p.memory_info().rss
    return total


def budget() -> tuple[float, float]:
    """(MiB per stream, MiB per worker) as docs/metrics.md's "Memory" section states them."""
    text = (ROOT / "docs" / "metrics.md").read_text()
    section = text.split("## Memory", 1)[1].split("\n## ", 1)[0]
    stream = re.search(r"budget: ([\d.]+) MiB per stream", section)
    worker = re.search(r"([\d.]+) MiB per worker", section)
    if stream is None or worker is None:
        raise SystemExit("docs/metrics.md's Memory section states no 'budget: N MiB per stream ... M MiB per worker'")
    return float(stream.group(1)), float(worker.group(1))


def measure(names: list[str], users: list[int], seconds: int) -> dict[tuple[str, int], tuple[int, int]]:
    """(behaviour, users) -> (peak RSS, exit code); one hostile server per behaviour."""
    results = {}
    for name in names:
        server, url = start_hostile(name)
        try:
            for n in users:
                results[name, n] = peak_rss(url, n, seconds)
                print(f"  {name:<28} {n:>4} users: {results[name, n][0] / MIB:8.1f} MiB", file=sys.stderr, flush=True)
        finally:
            stop(server)
    return results


def per_stream(peaks: dict[int, int], base: int) -> float:
    """MiB one more stream costs: the slope from the 1-user run to each larger one, the worst of them. The first
    stream also pays the process's one-time costs (the tokenizer loaded for an estimate, the first import of a
    parser), so it is the measure only when there is no larger run."""
    first = peaks.get(1)
    slopes = [(p - first) / MIB / (n - 1) for n, p in peaks.items() if first is not None and n > 1]
    return max(slopes) if slopes else max((p - base) / MIB / n for n, p in peaks.items())


def report(results: dict[tuple[str, int], tuple[int, int]], names: list[str], users: list[int]) -> None:
    """The table, the worst case per stream and per process, and the verdict against the documented budget."""
    per_stream_budget, per_worker_budget = budget()
    base = results.get((CONTROL, 1), (min(p for p, _ in results.values()), 0))[0]
    print(f"{'behaviour':<28}" + "".join(f"{n:>8} u" for n in users) + "   worst/stream  (peak RSS, MiB)")
    worst, worst_at = 0.0, ""
    for name in names:
        cells = [results[name, n][0] / MIB for n in users]
        per = per_stream({n: results[name, n][0] for n in users}, base)
        if per > worst:
            worst, worst_at = per, name
        print(f"{name:<28}" + "".join(f"{c:>10.1f}" for c in cells) + f"   {per:10.2f}")
    peak = max(p for p, _ in results.values()) / MIB
    print(f"\nbaseline ({CONTROL}, 1 user): {base / MIB:.1f} MiB")
    print(f"worst per stream: {worst:.2f} MiB ({worst_at}); budget {per_stream_budget:g} MiB per stream")
    print(f"worst process peak: {peak:.1f} MiB; budget {per_worker_budget:g} MiB per worker (docs/metrics.md)")
    within = worst <= per_stream_budget and peak <= per_worker_budget
    print("within the documented budget" if within else "OVER the documented budget")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", default="1,10,100", help="user counts, comma-separated (default 1,10,100)")
    parser.add_argument("-t", "--seconds", type=int, default=4, help="each run's -t in seconds (default 4)")
    parser.add_argument("--behaviours", default="", help="comma-separated (default: every behaviour of --list)")
    args = parser.parse_args()
    users = [int(u) for u in args.users.split(",")]
    names = [b for b in args.behaviours.split(",") if b] or behaviours()
    if CONTROL not in names:
        names.insert(0, CONTROL)
    report(measure(names, users, args.seconds), names, users)
    return 0


if __name__ == "__main__":
    sys.exit(main())
