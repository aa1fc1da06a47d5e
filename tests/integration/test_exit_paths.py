"""Every way a run can end prints the verdict line of the code the process exits with (docs/outputs.md, "Exit
codes"), in real Locust processes against the embedded mock: a CI pipeline reads only the exit code, a person the
line. One test walks the local paths (two runs at a time: nothing here is timed); the distributed ones (a master
stopped by SIGTERM or SIGINT, workers that never came, a lost worker) run with real workers."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.integration.locust_runs import ROOT, env, free_port, load, locust_cmd, worker

pytestmark = pytest.mark.integration
VERDICT = re.compile(r"^Verdict: ([A-Z ]+) \(exit code (\d+)\)(?:: (.*))?$", re.M)
QUICK = ("--llm-mock", "ttft_ms=5,itl_ms=1,output_tokens=8")
SLO_ON = ("--scenario-slo", "on")  # the suite turns the defaults off (conftest); these paths are about them
RECORDS = ("--llm-records", "{tmp}/records-{worker}.jsonl")  # the file appears when the test starts
NOTHING = "ttft{scenario=nosuch} p95"  # a threshold of the user's that no request can judge
CALM = ("--llm-lag-threshold-ms", "5000", "--llm-cpu-threshold", "100")  # a busy box is not what these test


@dataclass
class ExitPath:
    """One exit path: the run's arguments, what happens to it while it runs, the verdict and code expected."""

    name: str
    args: tuple[str, ...]
    status: str
    code: int
    words: str = ""  # in the verdict line
    during: Callable[[subprocess.Popen, Path], None] | None = None
    seconds: int = 4
    extra: dict[str, str] = field(default_factory=dict)


@pytest.fixture
def dead() -> Iterator[str]:
    """A loopback address where nothing listens: bound and never listening, held for the test so that no other
    process takes the port meanwhile (a connect there is refused)."""
    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def running(tmp: Path) -> None:
    """Wait (bounded) until the test runs: its records file is open."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not list(tmp.glob("records*.jsonl")):
        time.sleep(0.1)


def interrupt(proc: subprocess.Popen, tmp: Path) -> None:
    running(tmp)
    time.sleep(1)
    proc.send_signal(signal.SIGINT)


def summary_becomes_a_directory(_: subprocess.Popen, tmp: Path) -> None:
    """Once the test runs, the summary's path becomes a directory: it cannot be written at the end, after the
    start-up check passed."""
    running(tmp)
    (tmp / "summary.json").mkdir()


def paths(dead: str) -> list[ExitPath]:
    no_slo = ("--scenario-slo", "off")
    return [
        ExitPath("pass", ("--llm-threshold", "error_rate < 1%", *QUICK), "PASS", 0),
        ExitPath("no thresholds, no errors", (*no_slo, *QUICK), "PASS", 0, "Locust's rule"),
        ExitPath("no thresholds, errors", (*no_slo, "--llm-mock", "fault=http_500,fault_rate=0.5"), "ERRORS", 1),
        ExitPath("fail", ("--llm-threshold", "requests > 1000000", *QUICK), "FAIL", 99, "requests > 1000000"),
        ExitPath("invalid", ("--llm-threshold", f"{NOTHING} < 1s", *QUICK), "INVALID", 3, NOTHING),
        ExitPath("short run, defaults only", (*SLO_ON, *QUICK), "PASS", 0),
        ExitPath(
            "nothing succeeded, defaults too short to judge",
            (*SLO_ON, "--llm-mock", "fault=http_500", "--arrival-rate", "2", "--arrival-process", "constant"),
            "ERRORS",
            1,
            "no request succeeded",
        ),
        ExitPath("interrupted", (*QUICK, *RECORDS), "INTERRUPTED", 130, during=interrupt, seconds=30),
        ExitPath("dead endpoint", ("--host", dead, "--llm-api-key-env", "none"), "FATAL", 2, dead, seconds=20),
        ExitPath(
            "dead endpoint, kept going",
            ("--host", dead, "--llm-api-key-env", "none", "--llm-stop-on-fatal-s", "0", *SLO_ON),
            "FAIL",
            99,
            "no request succeeded",  # before its failed error_rate: the cause and what to set
        ),
        ExitPath(
            "output not written",
            (*QUICK, *RECORDS),
            "CONFIG ERROR",
            2,
            "LLM summary",
            during=summary_becomes_a_directory,
        ),
        ExitPath(
            "bad threshold",
            (
                "--llm-threshold",
                "ttft p95 < fast",
            ),
            "CONFIG ERROR",
            2,
            seconds=1,
        ),
    ]


def run_path(path: ExitPath, tmp: Path) -> tuple[ExitPath, int, str]:
    """Run one path in its own directory; (path, exit code, stdout + stderr)."""
    tmp.mkdir()
    given = (a.replace("{tmp}", str(tmp)) for a in path.args)
    args = ("--headless", "-u", "2", "-r", "2", "-t", f"{path.seconds}s", *CALM, *given)
    cmd = locust_cmd(*args, "--llm-summary", str(tmp / "summary.json"))
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        if path.during is not None:
            path.during(proc, tmp)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    (tmp / "output.txt").write_text(out)  # the whole of it, for a failure's post-mortem
    return path, proc.returncode, out


def verdict_of(out: str) -> tuple[str, int, str]:
    found = VERDICT.findall(out)
    assert len(found) == 1, f"exactly one verdict line, found {found}:\n{out[-2500:]}"
    status, code, reason = found[0]
    return status, int(code), reason


def test_every_exit_path_prints_the_code_it_exits_with(tmp_path: Path, dead: str) -> None:
    todo = paths(dead)
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda p: run_path(p, tmp_path / re.sub(r"\W+", "_", p.name)), todo))
    wrong = []
    for path, rc, out in done:
        status, code, reason = verdict_of(out)
        if (status, code, rc) != (path.status, path.code, path.code) or path.words not in reason:
            wrong.append(f"{path.name}: exit {rc}, printed {status} {code}: {reason}\n{out[:3000]}\n...\n{out[-3000:]}")
        assert "run longer" not in out, path.name
        summary = tmp_path / re.sub(r"\W+", "_", path.name) / "summary.json"
        if summary.is_file():  # docs/outputs.md: `integrity` is null on a local run, not absent
            assert load(summary).get("integrity", "absent") is None, path.name
    assert not wrong, "\n\n".join(wrong)


def test_a_dead_endpoint_stops_early_naming_the_address_and_the_cause(tmp_path: Path, dead: str) -> None:
    path = ExitPath("dead", ("--host", dead, "--llm-api-key-env", "none"), "FATAL", 2, seconds=30)
    started = time.monotonic()
    _, rc, out = run_path(path, tmp_path / "dead")
    assert rc == 2 and time.monotonic() - started < 15, "stopped after the 5 s window, not at -t 30s"
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and dead in errors[0] and "connection refused" in errors[0], out[-2000:]
    s = load(tmp_path / "dead" / "summary.json")
    assert s["verdict"]["status"] == "fatal" and dead in s["fatal"] and s["interrupted"] is False


def test_locust_ending_the_run_itself_is_not_called_a_signal(tmp_path: Path) -> None:
    """Locust's CPU monitor dies (an OSError reading /proc, as at EMFILE, at its first reading 10 s in): the local
    runner's main loop ends by itself. That was reported as `interrupted ... a signal stopped the run`, exit 130."""
    summary = tmp_path / "s.json"
    args = ("--headless", "-u", "2", "-r", "2", "-t", "40s", *CALM, *QUICK, "--llm-summary", str(summary))
    cmd = locust_cmd(*args, locustfile="tests/fixtures/locustfiles/monitor_dies.py")
    proc = subprocess.run(cmd, cwd=ROOT, env=env(), capture_output=True, text=True, timeout=90)
    status, code, reason = verdict_of(proc.stdout + proc.stderr)
    assert (status, code, proc.returncode) == ("FATAL", 2, 2), proc.stdout[-2000:]
    assert "Locust ended the run before its end" in reason and "no signal came" in reason
    s = load(summary)
    assert s["interrupted"] is False and s["verdict"]["status"] == "fatal"


def master(port: int, tmp: Path, *args: str) -> subprocess.Popen:
    outputs = ("--llm-summary", str(tmp / "s.json"), "--llm-junit", str(tmp / "j.xml"))
    outputs += ("--llm-records", str(tmp / "records-{worker}.jsonl"))  # its workers open theirs at the test's start
    cmd = locust_cmd(
        *("--master", "--headless", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port)),
        *(*outputs, "--llm-markdown", str(tmp / "m.md"), *CALM, *QUICK, *args),
    )
    return subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def outputs_say(tmp: Path, status: str, code: int) -> dict:
    """The summary, JUnit and Markdown were all written and carry the verdict."""
    s = load(tmp / "s.json")
    assert s["verdict"]["status"] == status and s["verdict"]["exit_code"] == code, s["verdict"]
    assert f'name="verdict" value="{status}"' in (tmp / "j.xml").read_text()
    assert f"(exit code {code})" in (tmp / "m.md").read_text().splitlines()[0]
    return s


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_distributed_master_stopped_by_a_signal_is_interrupted(
    tmp_path: Path, sig: signal.Signals, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside GitHub Actions (the example workflow's job: master and workers see $GITHUB_STEP_SUMMARY) the run's page
    gets the Markdown once, from the master."""
    step = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    port = free_port()
    proc = master(port, tmp_path, "-u", "4", "-r", "4", "-t", "60s", "--expect-workers", "2")
    workers = [worker(port, "locustfiles/chat.py") for _ in range(2)]
    try:
        running(tmp_path)  # workers boot in seconds, more on a busy machine
        time.sleep(3)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
        for w in workers:
            w.wait(timeout=30)  # told to quit: their records files are complete once they are gone
    finally:
        for p in [proc, *workers]:
            p.kill()
    assert proc.returncode == 130 and verdict_of(out)[:2] == ("INTERRUPTED", 130), out[-2500:]
    s = outputs_say(tmp_path, "interrupted", 130)
    assert s["interrupted"] is True and s["total"]["count"] > 0 and s["duration_s"] < 30
    records = [line for f in tmp_path.glob("records-*.jsonl") for line in f.read_text().splitlines()]
    cut = sum('"status":"cut_off"' in line for line in records)
    assert (s["total"]["count"], s["total"]["cut_off"]) == (len(records), cut), "the workers' attempts in flight count"
    assert step.read_text() == (tmp_path / "m.md").read_text(), "the step summary holds the Markdown exactly once"


def test_workers_that_never_come_end_not_started_with_every_output(tmp_path: Path) -> None:
    port = free_port()
    proc = master(port, tmp_path, "-u", "4", "-t", "20s", "--expect-workers", "2", "--expect-workers-max-wait", "3")
    one = worker(port, "locustfiles/chat.py")
    try:
        out, _ = proc.communicate(timeout=60)
        one.wait(timeout=30)  # the one that came was told to quit
    finally:
        proc.kill()
        one.kill()
    status, code, reason = verdict_of(out)
    assert proc.returncode == 2 and (status, code) == ("NOT STARTED", 2), out[-2500:]
    assert "only 1 of 2 workers connected within 3 s" in reason and str(port) in reason
    s = outputs_say(tmp_path, "not_started", 2)
    assert s["not_started"] == reason and s["total"]["count"] == 0


def test_a_lost_worker_prints_incomplete_with_its_code(tmp_path: Path) -> None:
    port = free_port()
    proc = master(port, tmp_path, "-u", "4", "-r", "4", "-t", "10s", "--expect-workers", "2")
    workers = [worker(port, "locustfiles/chat.py") for _ in range(2)]
    try:
        running(tmp_path)
        time.sleep(3)
        workers[0].send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=60)
    finally:
        for p in [proc, *workers]:
            p.kill()
    assert proc.returncode == 3 and verdict_of(out)[:2] == ("INCOMPLETE", 3), out[-2500:]
    outputs_say(tmp_path, "incomplete", 3)


def test_a_dead_endpoint_seen_by_a_worker_stops_the_distributed_run_as_fatal(tmp_path: Path, dead: str) -> None:
    """A worker hands its fatal line to the master (a custom message), which stops every worker and exits 2."""
    port = free_port()
    bind = ("--master-bind-host", "127.0.0.1", "--master-bind-port", str(port), "--expect-workers", "1")
    target = ("--host", dead, "--llm-api-key-env", "none", "--llm-stop-on-fatal-s", "1", *CALM)
    summary = ("--llm-summary", str(tmp_path / "s.json"))
    cmd = locust_cmd("--master", "--headless", "-u", "2", "-r", "2", "-t", "30s", *bind, *target, *summary)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    one = worker(port, "locustfiles/chat.py")
    started = time.monotonic()
    try:
        out, _ = proc.communicate(timeout=60)
        one.wait(timeout=30)
    finally:
        proc.kill()
        one.kill()
    assert proc.returncode == 2 and verdict_of(out)[:2] == ("FATAL", 2), out[-2500:]
    assert time.monotonic() - started < 20, "stopped after the 1 s window, not at -t 30s"
    errors = [line for line in out.splitlines() if line.startswith("error: ")]
    assert errors and dead in errors[0] and "connection refused" in errors[0], out[-2000:]
    s = load(tmp_path / "s.json")
    assert s["verdict"]["status"] == "fatal" and dead in s["fatal"]
