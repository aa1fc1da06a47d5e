"""Baseline regression end to end (docs/baseline.md): a real headless run against the embedded mock (TTFT 60 +/- 20
ms) writes a summary with histograms (valid against the schema); given a baseline summary whose TTFT is half that
(30 +/- 10 ms, drawn here, with the run's rows), it fails `ttft p50 < baseline + 10%`; `python -m loadlib compare
--baseline` calls it a regression (exit 1) and the reverse an improvement (exit 0); a missing baseline file stops a
run in one line, exit 2, before any request. One 3-second run, the refused one beside it."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from loadlib.histogram import Histogram
from loadlib.reports.compare_cli import compare_main
from tests.integration.locust_runs import ROOT, env, headless, load, locust_cmd, run

pytestmark = pytest.mark.integration
SLOW = "ttft_ms=60,ttft_jitter_ms=20,itl_ms=2,output_tokens=4"  # every TTFT twice the baseline's
THRESHOLD = "ttft p50 < baseline + 10%"


def baseline_summary(n: int = 1000) -> dict[str, Any]:
    """A summary as --llm-summary writes it, for the row chat @ mock: TTFT and TTFO uniform 30 +/- 10 ms."""
    rng, h = random.Random(28), Histogram()
    for _ in range(n):
        h.record(rng.uniform(20.0, 40.0))
    histograms = {"ttft": h.to_dict(), "ttfo": h.to_dict()}
    row = {"name": "chat @ mock", "scenario": "chat", "endpoint": "mock", "count": n, "histograms": histograms}
    return {"meta": {}, "rows": [row], "total": {**row, "name": "Aggregated", "scenario": "", "endpoint": ""}}


def _cmd(mock: str, out: Path, *extra: str) -> list[str]:
    args = ("--llm-mock", mock, "--llm-summary", str(out), "--scenario-slo", "off", "--only-summary", *extra)
    return locust_cmd(*headless(10, 3), *args)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("baseline")
    base, slow = d / "base.json", d / "slow.json"
    base.write_text(json.dumps(baseline_summary()))
    refused = subprocess.Popen(
        _cmd(SLOW, d / "never.json", "--llm-baseline", str(d / "missing.json"), "--llm-threshold", THRESHOLD),
        cwd=ROOT,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    second = run(_cmd(SLOW, slow, "--llm-baseline", str(base), "--llm-threshold", THRESHOLD), timeout=90)
    assert slow.exists(), second.stderr[-3000:]
    out, _ = refused.communicate(timeout=90)
    return {"base": base, "slow": slow, "second": second, "refused": (refused.returncode, out), "dir": d}


def compare(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "loadlib", "compare", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=60)


def test_the_summary_keeps_valid_histograms(runs: dict[str, Any]) -> None:
    summary = load(runs["slow"])
    schema = json.loads((ROOT / "schemas" / "summary-v1.schema.json").read_text())
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(summary)]
    assert not errors, errors[:3]
    ttft = summary["total"]["histograms"]["ttft"]
    assert ttft["count"] == summary["total"]["latency_ms"]["ttft"]["count"] > 100


def test_a_slower_run_fails_its_threshold_against_the_baseline(runs: dict[str, Any]) -> None:
    summary = load(runs["slow"])
    (result,) = [r for r in summary["thresholds"] if r["expression"] == THRESHOLD]
    assert result["passed"] is False and "above x1.100" in result["reason"], result
    assert runs["second"].returncode != 0 and summary["verdict"]["status"] in ("fail", "invalid")


def test_compare_calls_the_slowdown_a_regression_and_the_reverse_an_improvement(
    runs: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    md = runs["dir"] / "cmp.md"
    worse = compare("--baseline", str(runs["base"]), str(runs["slow"]), "--markdown", str(md))
    assert worse.returncode == 1, worse.stdout + worse.stderr
    (ttft,) = [ln for ln in worse.stdout.splitlines() if ln.startswith("chat @") and " ttft " in ln and " p50 " in ln]
    assert ttft.rstrip().endswith("regressed") and "Verdict: REGRESSED" in worse.stdout
    assert "| **regressed** |" in md.read_text()
    # the reverse in this process (the command's start-up is the slow part of a call)
    assert compare_main(["--baseline", str(runs["slow"]), str(runs["base"])]) == 0
    assert "improved" in capsys.readouterr().out


def test_a_missing_baseline_stops_the_run_before_any_load(runs: dict[str, Any]) -> None:
    code, out = runs["refused"]
    lines = [ln for ln in out.splitlines() if "missing.json" in ln]
    assert code == 2 and lines and "file not found" in lines[0], out[-2000:]
    assert "Traceback" not in out and not (runs["dir"] / "never.json").exists()
