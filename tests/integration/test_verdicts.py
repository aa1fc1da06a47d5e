"""Verdicts in real distributed runs (master + 2 workers, the embedded mock): thresholds that hold exit 0, one that
fails exits 99 and the JSON summary, JUnit XML and Markdown name it with its value and limit."""

from __future__ import annotations

from pathlib import Path

import pytest
from junitparser import JUnitXml

from tests.integration.locust_runs import load, run_distributed

pytestmark = pytest.mark.integration
FAILING = "e2e max < 100ms"


def run(tmp_path: Path, thresholds: str) -> tuple[int, dict, Path, Path]:
    summary, junit, markdown = tmp_path / "s.json", tmp_path / "j.xml", tmp_path / "m.md"
    rc, err, _ = run_distributed(
        *("-u", "8", "-r", "8", "-t", "6s", "--llm-mock", "ttft_ms=20,itl_ms=5,output_tokens=24"),
        *("--llm-threshold", thresholds, "--llm-summary", str(summary)),
        *("--llm-junit", str(junit), "--llm-markdown", str(markdown)),
        timeout=90,
    )
    assert summary.exists(), err[-3000:]
    return rc, load(summary), junit, markdown


def test_thresholds_that_hold_exit_0(tmp_path: Path) -> None:
    rc, summary, junit, _ = run(tmp_path, "ttft p50 < 500ms; error_rate < 1%; requests > 20")
    assert rc == 0 and summary["verdict"]["status"] == "pass", summary.get("verdict")
    suite = next(iter(JUnitXml.fromfile(str(junit))))
    assert suite.tests >= 3 and suite.failures == 0 and suite.errors == 0


def test_a_failed_threshold_exits_99_and_every_output_names_it(tmp_path: Path) -> None:
    rc, summary, junit, markdown = run(tmp_path, f"ttft p50 < 500ms; {FAILING}")
    assert rc == 99 and summary["verdict"]["status"] == "fail"
    failed = [t for t in summary["thresholds"] if t["passed"] is False]
    assert [t["expression"] for t in failed] == [FAILING] and failed[0]["value"] > 100 and failed[0]["limit"] == 100
    xml = junit.read_text()
    assert 'failures="1"' in xml and "e2e max" in xml and "100 ms" in xml
    text = markdown.read_text()
    assert "**Verdict: FAIL**" in text and "e2e max &lt; 100ms" in text and "**FAIL**" in text
