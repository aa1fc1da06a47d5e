"""Everything that can be known before load is checked before load: one line, exit code 2, no traceback, no request
sent, no mock started. And a summary that cannot be written at the end still leaves the table and fails the run."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from loadlib.mock import MockConfig, start_subprocess
from tests.integration.locust_runs import ROOT, env, free_port, headless, locust_cmd

pytestmark = pytest.mark.integration
MOCK_BANNER = "targeting the embedded mock"


@pytest.fixture(scope="module")
def mock():
    with start_subprocess(MockConfig(ttft_ms=5, itl_ms=1, output_tokens=4)) as m:
        yield m


def requests_seen(mock) -> int:
    with urllib.request.urlopen(mock.url + "/mock/stats", timeout=5) as r:
        return int(json.load(r)["requests"])


def refused(*args: str, locustfile: str = "locustfiles/chat.py", **environ: str) -> str:
    """Run Locust, expect the start-up refusal; return its one error line."""
    cmd = locust_cmd(*headless(1, 5), *args, locustfile=locustfile)
    proc = subprocess.run(cmd, cwd=ROOT, env=env(**environ), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert MOCK_BANNER not in proc.stdout, "no mock may start before the checks pass"
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr[-2000:]
    return errors[0]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--llm-provider", "gemini"], "unknown provider 'gemini'"),
        (["--llm-price-table", "README.md"], "price table"),
        (["--llm-summary", "README.md/s.json"], "README.md is a file, not a directory"),
        (["--llm-records", "README.md/r.jsonl"], "README.md is a file, not a directory"),
        (["--html", "docs"], "is a directory"),
        (["--llm-mock", "no_such_knob=1"], "no_such_knob"),
        (["--llm-timeout-total", "0"], "timeout total must be a positive number"),
        (["--llm-max-line-mb", "0"], "--llm-max-line-mb"),
        (["--arrival-rate", "-1"], "--arrival-rate must be >= 0"),
        (["--influx-url", "http://127.0.0.1:1", "--influx-api", "v3"], "--influx-api must be v1 or v2"),
        (["--llm-server-metrics", "localhost:8000/metrics"], "--llm-server-metrics 'localhost:8000/metrics': give"),
    ],
    ids=lambda v: v if isinstance(v, str) else v[0],
)
def test_a_mistake_is_one_line_and_exit_2_before_the_mock_starts(args: list[str], words: str) -> None:
    assert words in refused(*args)


def test_a_bad_csv_prefix_is_one_line_and_exit_2_before_anything_runs() -> None:
    cmd = locust_cmd(*headless(1, 5), "--csv", "README.md/stats")
    proc = subprocess.run(cmd, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "argument --csv: README.md/stats: " in proc.stderr and "is a file, not a directory" in proc.stderr
    assert MOCK_BANNER not in proc.stdout


def test_an_unwritable_audit_file_stops_a_compliance_run_before_any_request(mock) -> None:
    before = requests_seen(mock)
    line = refused(
        "--host",
        mock.url + "/v1",
        "--llm-api-key-env",
        "none",
        "--audit-file",
        "README.md/a.jsonl",
        locustfile="locustfiles/compliance.py",
    )
    assert "--audit-file" in line and requests_seen(mock) == before


def test_a_missing_key_stops_a_run_against_a_real_host_before_any_request(mock) -> None:
    before = requests_seen(mock)
    line = refused("--host", mock.url + "/v1")
    assert "OPENAI_API_KEY" in line and requests_seen(mock) == before


def test_parent_directories_outside_the_current_one_are_created_and_said(mock, tmp_path: Path) -> None:
    target = tmp_path / "new" / "dir" / "s.json"
    cmd = locust_cmd(
        *headless(1, 2), "--host", mock.url + "/v1", "--llm-api-key-env", "none", "--llm-summary", str(target)
    )
    proc = subprocess.run(cmd, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"created {target.parent}" in proc.stdout and target.exists()


def test_a_summary_that_cannot_be_written_at_the_end_keeps_the_table_and_fails_the_run(mock, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cmd = locust_cmd(
        *headless(1, 3), "--host", mock.url + "/v1", "--llm-api-key-env", "none", "--llm-summary", str(out / "s.json")
    )
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    end = time.monotonic() + 30
    while not out.is_dir() and time.monotonic() < end:  # created by the start-up check
        time.sleep(0.1)
    time.sleep(0.5)
    shutil.rmtree(out)
    out.write_text("now a file")  # the summary's directory is gone by the end of the run
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 2, stderr[-2000:]
    assert "LLM summary of run" in stdout, "the table is printed all the same"
    assert "cannot write the LLM summary" in stderr and "Traceback" not in stderr


POOL_OK = {"endpoints": [{"name": "primary", "mock": {}}, {"name": "secondary", "mock": {}}]}


def pool_with(**changes: object) -> str:
    return json.dumps({**POOL_OK, **changes})


@pytest.mark.parametrize(
    ("pool", "words"),
    [
        (pool_with(drills=[{"endpoint": "tertiary", "fault": "http_503", "at": 5, "for": 5}]), "tertiary"),
        (pool_with(endpoints=[{"name": "a", "mock": {}}, {"name": "a", "mock": {}}]), "repeats 'a'"),
        (pool_with(endpoints=[{"name": "a", "mock": {}, "weight": 0}]), "weight"),
        (
            pool_with(endpoints=[{"name": "real", "base_url": "http://127.0.0.1:9/v1", "key_env": "NO_SUCH_KEY_VAR"}]),
            "NO_SUCH_KEY_VAR",
        ),
        (pool_with(drills=[{"endpoint": "primary", "fault": "meltdown", "at": 5, "for": 5}]), "meltdown"),
        (pool_with(policy="round_robin"), "round_robin"),
        ("{endpoints: [", "--llm-pool"),
    ],
    ids=["unknown-endpoint", "duplicate", "weight", "missing-key", "unknown-fault", "policy", "yaml"],
)
def test_a_bad_pool_or_drill_is_one_line_before_any_mock_starts(pool: str, words: str) -> None:
    line = refused("--llm-pool", pool)
    assert words in line, line


def test_a_bad_drill_option_is_one_line() -> None:
    line = refused("--llm-drill", "mock:explode@5s+5s")
    assert "explode" in line, line


@pytest.mark.parametrize(
    ("threshold", "words"),
    [("latency p95 < 1s", "unknown metric 'latency'"), ("ttft p95 < 5%", "%"), ("ttft p95 ~ 5ms", "~")],
    ids=["metric", "unit", "operator"],
)
def test_a_bad_threshold_is_one_line_before_any_load(threshold: str, words: str) -> None:
    line = refused("--llm-threshold", threshold)
    assert words in line, line


def test_a_master_refuses_a_bad_threshold_before_any_worker_or_request(mock) -> None:
    """In a distributed run the master checks before it waits for workers: exit 2, one line, nothing sent."""
    before = requests_seen(mock)
    line = refused(
        *(
            "--master",
            "--expect-workers",
            "2",
            "--master-bind-host",
            "127.0.0.1",
            "--master-bind-port",
            str(free_port()),
        ),
        *(
            "--host",
            mock.url + "/v1",
            "--llm-api-key-env",
            "none",
            "--llm-threshold",
            "error_rate{class=rate_limit} < 5%",
        ),
    )
    assert "unknown error class 'rate_limit'" in line and "did you mean 'rate_limited'?" in line, line
    assert requests_seen(mock) == before
