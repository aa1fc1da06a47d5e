"""Benchmark: what failover bookkeeping (router, a circuit breaker per endpoint, retry budget, drill ledger,
user-visible request statistics) costs the client per request, at 128 concurrent streams with no think time.

Three cases, each a real headless Locust process (128 users, `wait_time = constant(0)`, a short prompt; the
locustfile is written to a temp dir) against standalone mocks, client and mocks pinned to different cores:

    before      a worktree of commit 2cb0769 (before failover was in the request path), --host at the mock
    pool of 1   this tree, the same command (dispatcher and ledger run; a pool of one has no breaker in the way)
    pool of 2   this tree, --llm-pool of two healthy mocks with retries: breakers, router, budget, ledger and
                user-visible points all active (all traffic still goes to primary)

CPU is user+sys of the client's process tree over a steady window after a warm-up; requests are counted by the mocks
over the same window (as in bench/client_cost.py). The cases alternate (A B C A B C ...) for --rounds rounds. Printed
per case: median client CPU-ms per request, requests/s, client and mock CPU use (the mock must not be the
bottleneck), then the after/before ratios (median, min-max of the per-round ratios) and a one-line verdict.

    python bench/failover_cost.py                        # 3 rounds (~3 minutes)
    python bench/failover_cost.py --quick --rounds 1     # a short check that it works
    python bench/failover_cost.py --before DIR --json results.json

The "before" worktree is created at /tmp/failover-before when missing (git worktree add --detach ... 2cb0769).
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
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from client_cost import CLIENT_CORE, MOCK_CORE, mock_stats, tree_cpu  # noqa: E402

from loadlib.mock import MockConfig, start_subprocess  # noqa: E402

BEFORE_COMMIT = "2cb0769"
DEFAULT_BEFORE = Path("/tmp/failover-before")
STREAMS = 128
MOCK = MockConfig(ttft_ms=20.0, itl_ms=2.0, output_tokens=32)
LOCUSTFILE = '''"""failover_cost: back-to-back streams, no think time, one short prompt."""

from locust import constant, task

from loadlib.locust.user import LLMUser


class CostUser(LLMUser):
    scenario = "bench"
    wait_time = constant(0)

    @task
    def stream(self) -> None:
        self.chat([{"role": "user", "content": "Say hi."}], prompt_tokens_est=10)
'''
CASES = ("before", "pool of 1", "pool of 2")


def before_tree(path: str | None) -> Path:
    """The worktree of the commit before failover; created at the default place when missing."""
    tree = Path(path) if path else DEFAULT_BEFORE
    if not (tree / "loadlib").is_dir():
        if path:
            raise SystemExit(f"--before {tree}: not a checkout of this project")
        git = ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), BEFORE_COMMIT]
        subprocess.run(git, check=True, stdout=subprocess.DEVNULL)
    return tree


def pool_json(primary: str, secondary: str) -> str:
    endpoints = [
        {"name": "primary", "base_url": primary + "/v1", "key_env": "none"},
        {"name": "secondary", "base_url": secondary + "/v1", "key_env": "none", "priority": 2},
    ]
    return json.dumps({"endpoints": endpoints, "retry": {"max_attempts": 3, "budget": 0.2}})


def locust_cmd(locustfile: Path, seconds: int, summary: Path, target: list[str]) -> list[str]:
    n = str(STREAMS)
    return [
        *("taskset", "-c", str(CLIENT_CORE), sys.executable, "-m", "locust", "-f", str(locustfile), "--headless"),
        *("-u", n, "-r", n, "-t", f"{seconds}s", *target, "--llm-api-key-env", "none", "--llm-max-tokens", "64"),
        *("--llm-summary", str(summary), "--only-summary", "--loglevel", "WARNING", "--stop-timeout", "30"),
    ]


def snapshot(client: psutil.Process, mocks: list) -> tuple[float, float, list[int]]:
    """Client CPU, the mocks' CPU, and the requests each mock has received."""
    mock_cpu = sum(tree_cpu(psutil.Process(m.pid)) for m in mocks)
    return tree_cpu(client), mock_cpu, [int(mock_stats(m.url)["requests"]) for m in mocks]


def run_case(case: str, tree: Path, target: list[str], mocks: list, timing: tuple[float, float], tmp: Path) -> dict:
    """One headless Locust run from `tree`: skip the warm-up, then measure CPU and requests over the window."""
    warmup, window = timing
    summary = tmp / f"summary-{time.time_ns()}.json"
    cmd = locust_cmd(tmp / "costfile.py", int(warmup + window + 2), summary, target)
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.Popen(cmd, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    client = psutil.Process(proc.pid)
    time.sleep(warmup)
    cpu0, mcpu0, req0 = snapshot(client, mocks)
    time.sleep(window)
    cpu1, mcpu1, req1 = snapshot(client, mocks)
    _, err = proc.communicate(timeout=120)
    if proc.returncode not in (0, 1) or not summary.exists():
        raise SystemExit(f"{case}: locust failed ({proc.returncode}): {err[-2000:]}")
    requests = [b - a for a, b in zip(req0, req1, strict=True)]
    served = sum(requests)
    return {
        "case": case,
        "cpu_ms_per_request": (cpu1 - cpu0) * 1000.0 / served if served else float("nan"),
        "requests_per_s": served / window,
        "client_cpu_use": (cpu1 - cpu0) / window,
        "mock_cpu_use": (mcpu1 - mcpu0) / window,
        "requests_by_mock": requests,
        "problems": check_summary(case, json.loads(summary.read_text())),
    }


def check_summary(case: str, summary: dict) -> list[str]:
    """That the run was what the case says: no errors, the right tree (failover section or not), the right pool."""
    problems = []
    errors = summary["total"]["errors_total"]
    if errors:
        problems.append(f"{errors} failed requests")
    failover = summary.get("failover")
    if (case == "before") != (failover is None):
        problems.append("failover section " + ("present: not the 'before' tree" if failover else "missing"))
    if failover is not None:
        endpoints = (failover.get("pool") or {}).get("endpoints") or []
        if len(endpoints) != (2 if case == "pool of 2" else 1):
            problems.append(f"pool is {endpoints}")
        users = failover["user_requests"] or {}  # null for a pool of one: its requests are its attempts
        if users.get("failed_over"):
            problems.append(f"{users['failed_over']} requests failed over")
    return problems


def ratios(rounds: list[dict[str, dict]], case: str) -> dict:
    per_round = [r[case]["cpu_ms_per_request"] / r["before"]["cpu_ms_per_request"] for r in rounds]
    return {"median": statistics.median(per_round), "min": min(per_round), "max": max(per_round)}


def summarize(rounds: list[dict[str, dict]]) -> dict:
    out: dict = {"cases": {}, "ratios": {}}
    for case in CASES:
        runs = [r[case] for r in rounds]
        out["cases"][case] = {
            key: statistics.median(run[key] for run in runs)
            for key in ("cpu_ms_per_request", "requests_per_s", "client_cpu_use", "mock_cpu_use")
        }
    for case in CASES[1:]:
        out["ratios"][case] = ratios(rounds, case)
    worst = max(out["ratios"][c]["median"] for c in CASES[1:])
    out["added_percent"] = (worst - 1.0) * 100.0
    return out


def print_results(result: dict) -> None:
    print(f"\n{'case':<12}{'CPU-ms/req':>12}{'req/s':>9}{'client CPU':>12}{'mock CPU':>10}  CPU/req vs before")
    for case in CASES:
        c, r = result["cases"][case], result["ratios"].get(case)
        ratio = f"{r['median']:.3f}x ({r['min']:.3f}-{r['max']:.3f})" if r else "-"
        print(
            f"{case:<12}{c['cpu_ms_per_request']:>12.3f}{c['requests_per_s']:>9.0f}{c['client_cpu_use']:>11.0%}"
            f"{c['mock_cpu_use']:>10.0%}  {ratio}"
        )
    if max(c["mock_cpu_use"] for c in result["cases"].values()) > 0.8:
        print("warning: a mock used over 80 % of its core: it may be the bottleneck")
    rates = [c["requests_per_s"] for c in result["cases"].values()]
    if max(rates) > 2 * min(rates):
        print("warning: request rates differ by more than 2x between cases")
    pct, parts = result["added_percent"], result["ratios"]
    verdict = "meets" if pct < 3.0 else "MISSES"
    detail = ", ".join(f"{case} {(parts[case]['median'] - 1) * 100:+.1f} %" for case in CASES[1:])
    print(f"bookkeeping adds {pct:.1f} % CPU per request (target < 3 %): {verdict} ({detail})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="shorter warm-up and window")
    ap.add_argument("--rounds", type=int, default=3, help="times the three cases alternate (default 3)")
    ap.add_argument("--before", help=f"checkout of {BEFORE_COMMIT} (default {DEFAULT_BEFORE}, created if missing)")
    ap.add_argument("--json", help="also write the results as JSON here")
    args = ap.parse_args()
    if shutil.which("taskset") is None:
        raise SystemExit("taskset (util-linux) is needed to pin client and mock to different cores")
    before = before_tree(args.before)
    timing = (2.0, 4.0) if args.quick else (3.0, 8.0)
    rounds: list[dict[str, dict]] = []
    with tempfile.TemporaryDirectory() as d, start_subprocess(MOCK, cpu=MOCK_CORE) as m1:
        tmp = Path(d)
        (tmp / "costfile.py").write_text(LOCUSTFILE)
        with start_subprocess(MOCK, cpu=MOCK_CORE) as m2:
            host = ["--host", m1.url + "/v1"]
            cases = {
                "before": (before, host, [m1]),
                "pool of 1": (ROOT, host, [m1]),
                "pool of 2": (ROOT, ["--llm-pool", pool_json(m1.url, m2.url)], [m1, m2]),
            }
            for n in range(args.rounds):
                rounds.append({})
                for case, (tree, target, mocks) in cases.items():
                    run = rounds[-1][case] = run_case(case, tree, target, mocks, timing, tmp)
                    note = "; ".join(run["problems"]) or "ok"
                    print(
                        f"... round {n + 1} {case}: {run['cpu_ms_per_request']:.3f} CPU-ms/req, "
                        f"{run['requests_per_s']:.0f} req/s, by mock {run['requests_by_mock']} ({note})",
                        file=sys.stderr,
                        flush=True,
                    )
    result = summarize(rounds)
    print_results(result)
    if args.json:
        config = {"streams": STREAMS, "mock": MOCK.to_args(), "warmup_s": timing[0], "window_s": timing[1]}
        Path(args.json).write_text(json.dumps({**result, "config": config, "rounds": rounds}, indent=2))


if __name__ == "__main__":
    main()
