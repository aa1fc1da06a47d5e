"""Verdicts of whole runs beyond pass and fail: a scenario's SLO defaults decide its exit code (0 when they hold, 99
naming the one that failed); abort-on-fail stops a real distributed run (master + 2 workers) within its delay + 2 s
and still writes every output naming the lost threshold; a run stopped by a signal is `interrupted` (exit 130); a
run in which no request succeeded is never a pass, and its line names the cause (issues 35, 36)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.integration.locust_runs import ROOT, env, headless, load, locust_cmd, run, run_distributed

pytestmark = pytest.mark.integration
MOCK = ("--llm-mock", "ttft_ms=20,itl_ms=5,output_tokens=24")
LOST = "ttft p50 < 5ms"
DELAY_S = 6.0  # enough loop-lag samples that one start-up stall is not the p99


def test_abort_on_fail_ends_a_distributed_run_within_the_delay_and_writes_every_output(tmp_path: Path) -> None:
    summary, junit, markdown = tmp_path / "s.json", tmp_path / "j.xml", tmp_path / "m.md"
    rc, err, _ = run_distributed(
        *("-u", "8", "-r", "8", "-t", "60s", *MOCK),
        *("--llm-threshold", f"error_rate < 1%; {LOST}", "--llm-abort-on-fail", "--llm-abort-delay", str(DELAY_S)),
        *("--llm-summary", str(summary), "--llm-junit", str(junit), "--llm-markdown", str(markdown)),
        timeout=90,
    )
    exited = time.time()
    assert summary.exists(), err[-3000:]
    s = load(summary)
    meta = s["meta"]
    assert rc == 99 and s["verdict"]["status"] == "fail", (rc, s.get("verdict"))
    assert s["aborted"]["thresholds"] == [LOST] and DELAY_S <= s["aborted"]["after_s"] <= DELAY_S + 2
    assert meta["stopped_at"] - meta["started_at"] <= DELAY_S + 2, "the test stopped within delay + 2 s"
    assert exited - meta["started_at"] <= DELAY_S + 2 + 3, "the master quit soon after (workers' final reports)"
    assert s["verdict"]["reasons"][0].startswith("aborted after"), s["verdict"]
    assert s["total"]["count"] > 0 and s["interrupted"] is False
    assert "aborted after" in junit.read_text() and LOST.replace("<", "&lt;") in junit.read_text()
    assert "**Verdict: FAIL**" in markdown.read_text() and "aborted after" in markdown.read_text()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_run_stopped_by_a_signal_is_interrupted(tmp_path: Path, sig: signal.Signals) -> None:
    summary = tmp_path / "s.json"
    cmd = locust_cmd(*headless(4, 60), *MOCK, "--llm-threshold", "error_rate < 1%", "--llm-summary", str(summary))
    log = tmp_path / "err.txt"
    with log.open("w") as err_file:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.DEVNULL, stderr=err_file, text=True)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and "All users spawned" not in log.read_text():
                time.sleep(0.1)
            time.sleep(2)
            proc.send_signal(sig)
            proc.wait(timeout=30)
        finally:
            proc.kill()
    err = log.read_text()
    assert proc.returncode == 130, err[-3000:]
    s = load(summary)
    assert s["interrupted"] is True and s["verdict"]["status"] == "interrupted" and s["verdict"]["exit_code"] == 130
    assert s["verdict"]["reasons"][0].startswith("interrupted after") and s["total"]["count"] > 0


def scenario_run(tmp_path: Path, locustfile: str, users: int, seconds: int, *args: str) -> tuple[int, dict]:
    summary = tmp_path / "s.json"
    cmd = locust_cmd(
        *headless(users, seconds),
        "--scenario-slo",
        "on",
        "--llm-summary",
        str(summary),
        *args,
        locustfile=f"locustfiles/{locustfile}.py",
    )
    p = run(cmd, timeout=120)
    assert summary.exists(), p.stderr[-3000:]
    return p.returncode, load(summary)


def test_a_scenario_exits_0_when_its_slo_defaults_hold(tmp_path: Path) -> None:
    rc, s = scenario_run(tmp_path, "support_chat", 20, 7, "--chat-think-time", "0.05")
    judged = {t["expression"]: (t["passed"], t["origin"]) for t in s["thresholds"]}
    assert judged == {
        "ttft{scenario=support_chat} p95 < 150ms": (True, "support_chat SLO"),
        "error_rate{scenario=support_chat} < 1%": (True, "support_chat SLO"),
    }, s["thresholds"]
    assert rc == 0 and s["verdict"]["status"] == "pass"


def test_a_scenario_exits_99_naming_the_slo_it_missed(tmp_path: Path) -> None:
    """The mock breaks the schema in one answer of ten: the compliance SLO `schema_valid >= 99%` fails."""
    rc, s = scenario_run(tmp_path, "compliance", 20, 11, "--llm-mock", "json_valid_rate=0.9")
    failed = [t for t in s["thresholds"] if t["passed"] is False]
    assert [t["expression"] for t in failed] == ["schema_valid >= 99%"] and 0.8 < failed[0]["value"] < 0.97
    assert rc == 99 and s["verdict"]["reasons"][0].startswith("schema_valid >= 99%"), s["verdict"]


def verdict_line(out: str) -> str:
    (line,) = [x for x in out.splitlines() if x.startswith("Verdict: ")]
    return line


def test_every_request_a_500_and_defaults_too_short_to_judge_is_no_pass(tmp_path: Path) -> None:
    """Issue 36: 12 of 12 http_5xx, both chat SLO defaults skipped for want of samples, and the run passed."""
    summary = tmp_path / "s.json"
    slow = ("--arrival-rate", "3", "--arrival-process", "constant")  # ~9 requests: under the 20 an error rate needs
    cmd = locust_cmd(*headless(2, 3), "--scenario-slo", "on", "--llm-mock", "fault=http_500", *slow)
    p = run([*cmd, "--llm-summary", str(summary)], timeout=60)
    s = load(summary)
    line = verdict_line(p.stdout)
    assert p.returncode == 1 and s["verdict"]["status"] == "errors", (p.returncode, line)
    failed = s["total"]["errors_total"]
    assert 0 < failed < 20 and s["total"]["ok"] == 0 and s["total"]["errors"] == {"http_5xx": failed}
    assert line.startswith(f"Verdict: ERRORS (exit code 1): no request succeeded ({failed} failed: http_5xx {failed}")
    assert '(the server: "The server had an error' in line and "look at the server behind" in line
    assert line.endswith("(none of the 2 scenario SLO defaults could be judged: Locust's rule)"), line
    assert [t["passed"] for t in s["thresholds"]] == [None, None]


def long_document(tmp_path: Path, doc_tokens: str) -> tuple[int, str, dict]:
    """long_document against the mock's 4,096-token model (`mock-4k`), its SLO defaults on."""
    summary = tmp_path / f"s-{doc_tokens}.json"
    args = ("--llm-model", "mock-4k", "--doc-tokens", doc_tokens, "--llm-mock", "ttft_ms=5,itl_ms=1")
    cmd = locust_cmd(*headless(1, 3), "--scenario-slo", "on", *args, locustfile="locustfiles/long_document.py")
    p = run([*cmd, "--llm-summary", str(summary)], timeout=90)
    return p.returncode, verdict_line(p.stdout), load(summary)


def test_long_documents_beyond_the_context_exit_non_zero_naming_it_and_ones_that_fit_pass(tmp_path: Path) -> None:
    """Issue 35: every document over a 4,096-token context (`fits 0`) passed with exit 0."""
    rc, line, s = long_document(tmp_path, "8000,16000")
    whole = s["scenarios"]["long_document"]["whole"]
    assert rc == 1 and whole["fits"] == 0 and whole["context_length_exceeded"] == s["total"]["errors_total"] > 0
    failed = s["total"]["errors_total"]
    assert line.startswith(f"Verdict: ERRORS (exit code 1): no request succeeded ({failed:,} failed: context_length")
    assert "every prompt was over the model's context (4,096 tokens, says the server)" in line, line
    assert "send shorter documents (--doc-tokens under 4,096" in line, line
    rc, line, s = long_document(tmp_path, "1000,2000")
    whole = s["scenarios"]["long_document"]["whole"]
    assert rc == 0 and whole["fits"] > 0 and whole["context_length_exceeded"] == 0, (rc, line, whole)
    assert line.startswith("Verdict: PASS (exit code 0)"), line


def test_a_wrong_key_stops_a_short_run_at_the_windows_end(tmp_path: Path, hostile) -> None:
    """Issue 36: 8 of 8 HTTP 401 in a 6 s run, and a pass: the users' backoff (0.5, 1, 2, 4 s) slept past the 5 s
    window and the end of the run. Now the stop comes at the window's end."""
    server = hostile("unauthorized")
    summary = tmp_path / "s.json"
    cmd = locust_cmd(*headless(2, 6), "--host", server.url, "--scenario-slo", "on", "--llm-summary", str(summary))
    p = run(cmd, timeout=60, env=env(OPENAI_API_KEY="sk-wrong-0000"))
    s = load(summary)
    assert p.returncode == 2 and s["verdict"]["status"] == "fatal", (p.returncode, s["verdict"])
    assert "all " in s["fatal"] and "HTTP 401" in s["fatal"] and "$OPENAI_API_KEY" in s["fatal"]
    assert 5.0 <= s["duration_s"] < 5.9, s["duration_s"]
    assert "sk-wrong-0000" not in p.stdout + p.stderr
