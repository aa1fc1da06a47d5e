"""Helpers to run real Locust processes (headless, master, workers) from tests, bounded in time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


def run(cmd: list[str], timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    environ = kw.pop("env", None) or env()
    return subprocess.run(cmd, cwd=ROOT, env=environ, capture_output=True, text=True, timeout=timeout, **kw)


def load(path: Path) -> dict:
    return json.loads(Path(path).read_text())
