"""Helpers to run real Locust processes (headless, master, workers) from tests, bounded in time."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

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


def run_distributed(
    *args: str,
    workers: int = 2,
    timeout: float = 120,
    during: Callable[[], None] | None = None,
    locustfile: str = "locustfiles/chat.py",
) -> tuple[int, str, float]:
    """A real headless master plus `workers` real worker processes on loopback; `during()` runs in a thread while the
    test runs. Returns (master exit code, master stderr, wall seconds); every process is reaped or killed."""
    port = free_port()
    start = time.monotonic()
    master = subprocess.Popen(
        locust_cmd(
            "--master",
            "--headless",
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
    procs = [
        subprocess.Popen(
            locust_cmd("--worker", "--master-host", "127.0.0.1", "--master-port", str(port), locustfile=locustfile),
            cwd=ROOT,
            env=env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(workers)
    ]
    thread = threading.Thread(target=during, daemon=True) if during is not None else None
    if thread is not None:
        thread.start()
    err = ""
    try:
        _, err = master.communicate(timeout=timeout)
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
