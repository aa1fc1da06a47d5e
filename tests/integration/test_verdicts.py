"""Verdicts in real distributed runs (master + 2 workers, the embedded mock): thresholds that hold exit 0, one that
fails exits 99 and the JSON summary, JUnit XML and Markdown name it with its value and limit, and a worker starved of
CPU by a real external hog makes the run invalid (exit 3) whatever its thresholds say. Every summary these real runs
write must validate against the published schema, so a consumer that validates never rejects a real run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from junitparser import JUnitXml

from tests.integration.locust_runs import (
    ROOT,
    CpuHog,
    headless,
    load,
    locust_cmd,
    run_distributed,
    wait_for_connected_child,
)
from tests.integration.locust_runs import run as run_locust

pytestmark = [pytest.mark.integration, pytest.mark.alone]  # timing-sensitive: run with nothing beside it
FAILING = "e2e max < 100ms"
LOAD_S = 6
SCHEMA = json.loads((ROOT / "schemas" / "summary-v1.schema.json").read_text())
# Worker 0 shares CPU 0 with the hog at the lowest priority; worker 1 runs unhindered.
STARVED = 19
STARVED_PREFIX = [["taskset", "-c", "0", "nice", "-n", str(STARVED)]]


def run(tmp_path: Path, thresholds: str, **kw: Any) -> tuple[int, dict, Path, Path]:
    summary, junit, markdown = tmp_path / "s.json", tmp_path / "j.xml", tmp_path / "m.md"
    rc, err, _ = run_distributed(
        *("-u", "8", "-r", "8", "-t", f"{LOAD_S}s", "--llm-mock", "ttft_ms=20,itl_ms=5,output_tokens=24"),
        *("--llm-threshold", thresholds, "--llm-summary", str(summary)),
        *("--llm-junit", str(junit), "--llm-markdown", str(markdown)),
        timeout=90,
        **kw,
    )
    assert summary.exists(), err[-3000:]
    return rc, load(summary), junit, markdown


def schema_errors(summary: dict) -> list[str]:
    """Every way `summary` breaks the published schema (the same validator as tests/unit/outputs/test_schema.py)."""
    errors = Draft202012Validator(SCHEMA).iter_errors(summary)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors]


def test_thresholds_that_hold_exit_0(tmp_path: Path) -> None:
    """The same real run also checks its summary against the published schema."""
    rc, summary, junit, _ = run(tmp_path, "ttft p50 < 500ms; error_rate < 1%; requests > 20")
    assert rc == 0 and summary["verdict"]["status"] == "pass", summary.get("verdict")
    suite = next(iter(JUnitXml.fromfile(str(junit))))
    assert suite.tests >= 3 and suite.failures == 0 and suite.errors == 0
    assert schema_errors(summary) == []


def test_a_cpu_hogged_worker_makes_the_run_invalid_exit_3(tmp_path: Path) -> None:
    """One worker pinned to CPU 0 at nice 19 beside two burners at normal priority: its loop lags, so its latencies
    are the client's, not the server's, and thresholds that would hold must not pass. The burners rest a third of
    each 0.75 s: a worker starved without a break misses heartbeats, goes missing and its samples never arrive."""
    hog = CpuHog(core=0, seconds=LOAD_S + 6, burners=2, burn_s=0.5, rest_s=0.25)

    def hog_once_the_starved_worker_is_up() -> None:  # its boot is not what is measured, and would starve too
        if wait_for_connected_child(STARVED, timeout=30):
            hog.start()

    try:
        rc, summary, _, _ = run(
            tmp_path,
            "ttft p50 < 2s; error_rate < 5%",
            during=hog_once_the_starved_worker_is_up,
            worker_prefix=STARVED_PREFIX,
        )
    finally:
        hog.stop()
    assert hog.procs, "the starved worker never connected, so the hog never ran"
    verdict, client = summary["verdict"], summary["client"]
    assert rc == 3 and verdict["status"] == "invalid" and summary["client_saturated"] is True, (verdict, client)
    assert client["loop_lag_p99_ms"] > 50 and "event-loop lag" in verdict["reasons"][0], (verdict, client)
    assert schema_errors(summary) == []


def test_a_failed_threshold_exits_99_and_every_output_names_it(tmp_path: Path) -> None:
    rc, summary, junit, markdown = run(tmp_path, f"ttft p50 < 500ms; {FAILING}")
    assert rc == 99 and summary["verdict"]["status"] == "fail"
    failed = [t for t in summary["thresholds"] if t["passed"] is False]
    assert [t["expression"] for t in failed] == [FAILING] and failed[0]["value"] > 100 and failed[0]["limit"] == 100
    xml = junit.read_text()
    assert 'failures="1"' in xml and "e2e max" in xml and "100 ms" in xml
    text = markdown.read_text()
    assert "**Verdict: FAIL**" in text and "`e2e max < 100ms`" in text and "**FAIL**" in text


K6_FILE = """thresholds:
  - {threshold: "ttft p50 < 1ms", abortOnFail: true, delayAbortEval: "2s"}
  - ttft p90 < 5s
"""


def test_a_k6_object_aborts_on_its_own_delay_and_a_p90_is_read_from_the_histograms(tmp_path: Path) -> None:
    """No --llm-abort-on-fail: the file's abortOnFail alone stops a local run about 2 s in (its delayAbortEval);
    ttft p90, which no summary row holds, is judged from the merged histogram."""
    summary, thresholds = tmp_path / "s.json", tmp_path / "t.yaml"
    thresholds.write_text(K6_FILE)
    cmd = locust_cmd(*headless(8, 30), "--llm-mock", "ttft_ms=20,itl_ms=5,output_tokens=24")
    proc = run_locust([*cmd, "--llm-thresholds-file", str(thresholds), "--llm-summary", str(summary)], timeout=30)
    assert summary.exists(), proc.stderr[-3000:]
    s = load(summary)
    assert proc.returncode == 99 and s["verdict"]["status"] == "fail", (proc.returncode, s.get("verdict"))
    assert s["aborted"]["thresholds"] == ["ttft p50 < 1ms"] and 2 <= s["aborted"]["after_s"] <= 4, s["aborted"]
    p90 = next(t for t in s["thresholds"] if t["expression"] == "ttft p90 < 5s")
    assert p90["passed"] is True and p90["value"] >= 20 and "from the histogram" in p90["reason"], p90
    assert schema_errors(s) == []


@pytest.mark.parametrize(
    ("threshold", "words"),
    [
        (" ; ", "no threshold in it, only separators"),
        ("ttft p95 < 1s, error_rate < 1%", "separate thresholds with ';'"),
    ],
    ids=["separators-only", "comma-joined"],
)
def test_a_threshold_option_without_a_threshold_or_joined_by_a_comma_is_one_line_exit_2(
    threshold: str, words: str
) -> None:
    proc = run_locust(locust_cmd(*headless(1, 5), "--llm-threshold", threshold), timeout=30)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert proc.returncode == 2 and len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert words in errors[0] and "targeting the embedded mock" not in proc.stdout, errors
