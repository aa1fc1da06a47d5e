"""Helpers for the hostile-server tests: the hostile server as a real subprocess, and a real Locust process whose output
lines are stamped as they arrive and whose memory is sampled, so a test can say when it ended and how big it got."""

from __future__ import annotations

import json
import select
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, TextIO

import psutil

from tests.integration.locust_runs import ROOT, env

START_TIMEOUT_S = 20.0


class Hostile:
    """`python -m loadlib.mock.hostile` on a free loopback port; `url` is what its first stdout line announced."""

    def __init__(self, behaviour: str, *args: str) -> None:
        cmd = [sys.executable, "-m", "loadlib.mock.hostile", "--behaviour", behaviour, "--port", "0", *args]
        self.behaviour = behaviour
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.PIPE, text=True)
        self.url = self._announced_url()

    def _announced_url(self) -> str:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], START_TIMEOUT_S)
        line = self.proc.stdout.readline() if ready else ""
        if " listening on " not in line:
            self.stop()
            raise RuntimeError(f"hostile server ({self.behaviour}) did not start: {line!r}")
        return line.strip().rsplit(" ", 1)[1]

    def stats(self) -> dict[str, Any]:
        """The server's own counts (`GET /hostile/stats`); TLS without verification, it is our own throwaway cert."""
        context = ssl._create_unverified_context() if self.url.startswith("https") else None
        with urllib.request.urlopen(self.url + "/hostile/stats", timeout=10, context=context) as resp:
            return json.loads(resp.read())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


class LiveRun:
    """A real process (Locust) with stdout and stderr read line by line as they come, each line stamped on the
    monotonic clock, the exit stamped by a thread blocked in wait(), and the RSS of its process tree sampled every
    `sample_s` seconds. Always `close()` it: that kills the process if it is still running."""

    def __init__(self, cmd: list[str], environ: dict[str, str] | None = None, sample_s: float = 0.2) -> None:
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=environ or env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.out: list[tuple[float, str]] = []
        self.err: list[tuple[float, str]] = []
        self.ended_at: float | None = None
        self.peak_rss = 0
        self.sample_s = sample_s
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.threads = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True),
            threading.Thread(target=self._wait, daemon=True),
            threading.Thread(target=self._sample, daemon=True),
        ]
        for t in self.threads:
            t.start()

    @staticmethod
    def _read(stream: TextIO, lines: list[tuple[float, str]]) -> None:
        for line in stream:
            lines.append((time.monotonic(), line))

    def _wait(self) -> None:
        self.proc.wait()
        self.ended_at = time.monotonic()

    def _sample(self) -> None:
        try:
            root = psutil.Process(self.proc.pid)
            while self.ended_at is None:
                tree = [root, *root.children(recursive=True)]
                self.peak_rss = max(self.peak_rss, sum(_rss(p) for p in tree))
                time.sleep(self.sample_s)
        except psutil.Error:
            return  # the process is gone

    def line_at(self, text: str, timeout: float) -> float:
        """Stamp of the first stderr line containing `text`, waiting up to `timeout` seconds for it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for stamp, line in list(self.err):
                if text in line:
                    return stamp
            if self.ended_at is not None and time.monotonic() - self.ended_at > 0.5:
                break
            time.sleep(0.02)
        raise AssertionError(f"no stderr line with {text!r} within {timeout}s:\n{self.stderr[-3000:]}")

    def wait(self, timeout: float) -> int:
        """Wait for the exit (killing the process past `timeout`) and for its output to be read; the exit code."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.close()
            raise AssertionError(f"still running after {timeout}s:\n{self.stderr[-3000:]}") from None
        for t in self.threads:
            t.join(timeout=10)
        return self.proc.returncode

    def terminate(self) -> float:
        """SIGTERM; returns when it was sent."""
        self.proc.send_signal(signal.SIGTERM)
        return time.monotonic()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    @property
    def stdout(self) -> str:
        return "".join(line for _, line in self.out)

    @property
    def stderr(self) -> str:
        return "".join(line for _, line in self.err)


def _rss(process: psutil.Process) -> int:
    try:
        return process.memory_info().rss
    except psutil.Error:
        return 0


def records(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of an `--llm-records` file ([] when it was never written)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
