"""The headless Kubernetes Job's own command line, run on this machine: the master's and the workers' args as the
rendered headless-job overlay has them, with only what a laptop needs changed (loopback ports, paths under a tmp
directory, a short -t, two workers, the embedded mock instead of the mock's Service). Stopped by SIGTERM, as the
kubelet stops a Job's pod that is deleted or past its deadline, the run must end INTERRUPTED with exit code 130,
every report written, and the workers must end with it (they are a Job that completes when they exit)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.locust_runs import ROOT, env, free_port, load
from tests.unit.test_kubernetes import KUSTOMIZATIONS, by_component, main_container, one, render

pytestmark = pytest.mark.integration
VERDICT = re.compile(r"^Verdict: ([A-Z ]+) \(exit code (\d+)\)", re.M)
RESULTS = "/results/"  # the Job's PVC mount
STARTED = "Sending spawn jobs"  # the master's log line once its workers are in and the load starts
START_WITHIN_S = 15.0  # processes boot in ~2 s, in ~5 s on a busy 2-core box
LOAD_S = 7.0  # then load for two of a worker's 3 s reports before SIGTERM: the master has counted some
WORKERS = 2


def set_option(args: list[str], flag: str, value: str) -> list[str]:
    """`args` with `flag`'s value replaced (the flag must be there: the test follows the manifest, never adds to it)."""
    assert flag in args, f"the Job's command has no {flag}"
    out = list(args)
    out[out.index(flag) + 1] = value
    return out


def job_commands() -> tuple[list[str], list[str], dict[str, str]]:
    """The master's and a worker's args from the rendered headless-job overlay, and the ConfigMap's settings."""
    resources = render(KUSTOMIZATIONS["headless-job"])
    master = main_container(by_component(resources, "master"))
    worker = main_container(by_component(resources, "worker"))
    assert "command" not in master and "command" not in worker, "the image's entrypoint is `locust`"
    settings = one(resources, "ConfigMap", "loadlib-settings")["data"]
    return master["args"], worker["args"], settings


def laptop_master(args: list[str], port: int, tmp: Path) -> list[str]:
    """The Job's master args with only the laptop's differences: the reports under `tmp`, a free loopback port for
    the workers, a 30 s run, the two workers this test starts, a bounded wait for them."""
    out = [a.replace(RESULTS, f"{tmp}/") if a.startswith(RESULTS) else a for a in args]
    out = set_option(out, "-f", str(ROOT / option_value(args, "-f")))
    out = set_option(set_option(out, "-t", "30s"), "--expect-workers", str(WORKERS))
    out = set_option(out, "--expect-workers-max-wait", "20")
    return [*out, "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port)]


def laptop_worker(args: list[str], port: int) -> list[str]:
    """A worker's args from the Job with the master on loopback instead of the Service loadlib-master."""
    out = set_option(set_option(args, "--master-host", "127.0.0.1"), "-f", str(ROOT / option_value(args, "-f")))
    return [*out, "--master-port", str(port)]


def option_value(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def settings_env(settings: dict[str, str]) -> dict[str, str]:
    """The ConfigMap as the pods get it, without LLM_BASE_URL: no mock Service here, so the master starts the
    embedded mock (the workers follow it)."""
    return env(**{k: v for k, v in settings.items() if k != "LLM_BASE_URL"})


def start(args: list[str], environ: dict[str, str], cwd: Path, out: Any) -> subprocess.Popen:
    """`locust ARGS` (the image's entrypoint), run from `cwd` as from the image's working directory."""
    return subprocess.Popen(
        [sys.executable, "-m", "locust", *args], cwd=cwd, env=environ, stdout=out, stderr=subprocess.STDOUT, text=True
    )


def wait_for_line(log: Path, text: str, proc: subprocess.Popen, timeout: float) -> None:
    """Until `text` is in `log` (the load started), failing when `proc` ends or `timeout` passes first: a fixed sleep
    would SIGTERM a master still importing on a busy machine, which dies by the signal before it has a verdict."""
    deadline = time.monotonic() + timeout
    while text not in log.read_text():
        assert proc.poll() is None, f"the master ended (exit {proc.returncode}) before the load:\n{log.read_text()}"
        assert time.monotonic() < deadline, f"no {text!r} within {timeout} s:\n{log.read_text()[-2500:]}"
        time.sleep(0.1)


def test_the_job_s_master_stopped_by_sigterm_exits_130_with_every_report(tmp_path: Path) -> None:
    master_args, worker_args, settings = job_commands()
    port, results, workdir = free_port(), tmp_path / "results", tmp_path / "workdir"
    results.mkdir()
    (workdir / "results").mkdir(parents=True)  # the image's WORKDIR with its results/ (the default audit trail)
    environ = settings_env(settings)
    cmd = laptop_master(master_args, port, results)
    log = tmp_path / "master.log"
    with log.open("w") as master_out:
        master = start(cmd, environ, workdir, master_out)
    workers = [start(laptop_worker(worker_args, port), environ, workdir, subprocess.DEVNULL) for _ in range(WORKERS)]
    try:
        wait_for_line(log, STARTED, master, START_WITHIN_S)
        time.sleep(LOAD_S)
        master.send_signal(signal.SIGTERM)
        master.wait(timeout=15)
        worker_codes = [w.wait(timeout=10) for w in workers]  # told to quit by the master: they end with it
    finally:
        for p in [master, *workers]:
            p.kill()
            p.wait(timeout=10)
    out = log.read_text()
    verdicts = VERDICT.findall(out)
    assert master.returncode == 130, f"exit {master.returncode}; {verdicts}\n{out[-2500:]}"
    assert verdicts and verdicts[-1] == ("INTERRUPTED", "130"), out[-2500:]
    summary = load(Path(option_value(cmd, "--llm-summary")))
    assert summary["interrupted"] is True and summary["total"]["count"] > 0
    for flag in ("--llm-summary", "--llm-junit", "--llm-markdown", "--html"):
        assert Path(option_value(cmd, flag)).is_file(), f"{flag} {option_value(cmd, flag)} was not written"
    assert worker_codes == [0] * WORKERS, "a worker the master told to quit exits 0 (the workers Job completes)"
