"""Helpers to run real Locust processes (headless, master, workers) from tests, bounded in time."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import closing, suppress
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]


def env(**extra: str) -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    e.pop("OPENAI_API_KEY", None)
    e.pop("ANTHROPIC_API_KEY", None)
    e.update(extra)
    return e


def locust_cmd(*args: str, locustfile: str = "locustfiles/chat.py", pin: int | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "locust", "-f", locustfile, *args]
    if pin is not None:
        cmd = ["taskset", "-c", str(pin), *cmd]
    return cmd


def headless(users: int, seconds: int) -> list[str]:
    """Locust's arguments for a headless run of `users` users, all started at once, for `seconds`."""
    return ["--headless", "-u", str(users), "-r", str(users), "-t", f"{seconds}s"]


def run(cmd: list[str], timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    environ = kw.pop("env", None) or env()
    return subprocess.run(cmd, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=timeout, **kw)


def load(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def free_port() -> int:
    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(port: int, locustfile: str, prefix: Sequence[str] = ()) -> subprocess.Popen:
    """A real Locust worker connecting to a master on loopback `port`, its command behind `prefix`."""
    cmd = locust_cmd("--worker", "--master-host", "127.0.0.1", "--master-port", str(port), locustfile=locustfile)
    return subprocess.Popen([*prefix, *cmd], cwd=ROOT, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_distributed(
    *args: str,
    workers: int = 2,
    timeout: float = 120,
    during: Callable[[], None] | None = None,
    locustfile: str = "locustfiles/chat.py",
    worker_prefix: Sequence[Sequence[str]] | None = None,
    mode: Sequence[str] = ("--headless",),
    stdout: list[str] | None = None,
) -> tuple[int, str, float]:
    """A real headless master plus `workers` real worker processes on loopback; `during()` runs in a thread while the
    test runs; `worker_prefix[i]` (e.g. `taskset -c 0 nice -n 19`) goes before worker i's command; `mode` replaces
    `--headless` (e.g. `--autostart --autoquit 1 --web-port N`: a web UI run that starts and quits by itself);
    the master's stdout (the console summary) is appended to `stdout` when given.
    Returns (master exit code, master stderr, wall seconds); every process is reaped or killed."""
    port = free_port()
    start = time.monotonic()
    master = subprocess.Popen(
        locust_cmd(
            "--master",
            *mode,
            "--expect-workers",
            str(workers),
            "--expect-workers-max-wait",
            "30",
            "--master-bind-host",
            "127.0.0.1",
            "--master-bind-port",
            str(port),
            *args,
            locustfile=locustfile,
        ),
        cwd=ROOT,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    prefixes = list(worker_prefix or [])
    procs = [worker(port, locustfile, prefixes[i] if i < len(prefixes) else ()) for i in range(workers)]
    thread = threading.Thread(target=during, daemon=True) if during is not None else None
    if thread is not None:
        thread.start()
    err = ""
    try:
        out, err = master.communicate(timeout=timeout)
        if stdout is not None:
            stdout.append(out)
    finally:
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        if master.poll() is None:
            master.kill()
            master.wait()
        if thread is not None:
            thread.join(timeout=30)
    return master.returncode, err, time.monotonic() - start


# Burns while the system-wide monotonic clock is in the first `burn_s` of each period, so several burners stay in phase
# and share their rests (rest 0: burns without a break).
BURNER = """import time
end = time.monotonic() + {seconds}
while (now := time.monotonic()) < end:
    phase = now % ({burn_s} + {rest_s})
    if phase >= {burn_s}:
        time.sleep({burn_s} + {rest_s} - phase)
"""


class CpuHog:
    """`burners` busy-loop processes pinned to CPU `core` at normal priority, burning `burn_s` then resting `rest_s`
    in phase with each other, each ending by itself after `seconds` at the latest. `start()` may run in
    run_distributed's `during` thread; `stop()` (in a finally) kills them, and once stopped no later `start()` runs."""

    def __init__(self, core: int, seconds: float, burners: int = 1, burn_s: float = 1.0, rest_s: float = 0.0) -> None:
        code = BURNER.format(seconds=seconds, burn_s=burn_s, rest_s=rest_s)
        self.cmd = ["taskset", "-c", str(core), sys.executable, "-c", code]
        self.burners = burners
        self.procs: list[subprocess.Popen] = []
        self.lock = threading.Lock()
        self.stopped = False

    def start(self) -> None:
        with self.lock:
            if not self.stopped and not self.procs:
                self.procs = [subprocess.Popen(self.cmd) for _ in range(self.burners)]

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
            for p in self.procs:
                p.kill()
                p.wait()


def wait_for_connected_child(niceness: int, timeout: float) -> bool:
    """Wait until a child process of this one running at `niceness` has an established TCP connection (a worker
    that has booted and reached its master)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in psutil.Process().children():
            with suppress(psutil.Error):
                conns = child.net_connections("tcp") if child.nice() == niceness else []
                if any(c.status == psutil.CONN_ESTABLISHED for c in conns):
                    return True
        time.sleep(0.05)
    return False


def completed(recs: list[dict]) -> list[dict]:
    """The attempts that ended by themselves: every record but the ones the end of the run cut off (`cut_off`, still
    running when `-t`, a signal or a stop ended the test; docs/metrics.md, "Error classes")."""
    return [r for r in recs if r.get("status") != "cut_off"]
