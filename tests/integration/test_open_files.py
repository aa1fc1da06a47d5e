"""A load generator out of open files (a container's or CI runner's `ulimit -n` of 1,024 is common) fails its own
connects: said before any load when -u cannot fit, and otherwise a fatal stop naming the limit at the first socket
it could not open, never a run of connect errors blamed on the endpoint. Real Locust processes under a real limit."""

from __future__ import annotations

import json
import resource
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.locust_runs import ROOT, env, headless, load, locust_cmd, run_distributed

pytestmark = pytest.mark.integration
HOLDING = "tests/fixtures/locustfiles/file_holding.py"
QUICK = ("--llm-mock", "ttft_ms=20,itl_ms=5,output_tokens=4", "--scenario-slo", "off")
CALM = ("--llm-lag-threshold-ms", "5000", "--llm-cpu-threshold", "100")


def limited(files: int) -> Callable[[], None]:
    """A child's soft and hard open-file limits, so neither Locust nor loadlib can raise them."""
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))


def run_limited(files: int, *args: str, locustfile: str = "locustfiles/chat.py") -> subprocess.CompletedProcess:
    cmd = locust_cmd(*args, *CALM, *QUICK, locustfile=locustfile)
    return subprocess.run(
        cmd, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=120, preexec_fn=limited(files)
    )


def test_users_beyond_the_limit_are_refused_before_any_load(tmp_path: Path) -> None:
    summary = tmp_path / "s.json"
    proc = run_limited(200, *headless(300, 10), "--llm-summary", str(summary))
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert proc.returncode == 2 and len(errors) == 1, proc.stderr[-2000:]
    assert "-u 300 needs at least 364 open files" in errors[0] and "may open 200 (`ulimit -n`)" in errors[0]
    assert "Verdict: CONFIG ERROR (exit code 2): nothing was sent" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_connect_out_of_files_stops_the_run_as_this_machines_fault(tmp_path: Path) -> None:
    """100 users fit the check (164 files of 400), but each holds 3 more: about the 90th user's connect fails."""
    records, summary = tmp_path / "r.jsonl", tmp_path / "s.json"
    args = (*headless(100, 30), "-r", "50", "--llm-cold-connect", "--llm-records", str(records))
    proc = run_limited(400, *args, "--llm-summary", str(summary), locustfile=HOLDING)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-3000:]
    s = load(summary)
    assert s["verdict"]["status"] == "fatal" and s["interrupted"] is False, s["verdict"]
    assert "ran out of open files (EMFILE: its limit is 400" in s["fatal"], s["fatal"]
    assert s["meta"]["duration_s"] < 15, "stopped at the first socket it could not open, not at -t"
    failed = [r for r in map(json.loads, records.read_text().splitlines()) if r["status"] == "connect_error"]
    assert failed and all("ran out of open files" in r["error_message"] for r in failed)
    assert "Traceback" not in out


def test_a_worker_out_of_files_stops_the_distributed_run(tmp_path: Path) -> None:
    """The worker says its line to the master, which stops every worker and exits with the fatal verdict."""
    summary = tmp_path / "s.json"
    args = (*headless(100, 30), "-r", "50", "--llm-cold-connect", *CALM, *QUICK, "--llm-summary", str(summary))
    prefix = [["prlimit", "--nofile=400:400"]]
    code, err, seconds = run_distributed(*args, workers=1, locustfile=HOLDING, worker_prefix=prefix)
    s = load(summary)
    assert code == 2 and s["verdict"]["status"] == "fatal", (s["verdict"], err[-2000:])
    assert "ran out of open files" in s["fatal"] and seconds < 60
