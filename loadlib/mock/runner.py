"""Run the mock from another program: in a subprocess (what Locust and the integration tests use) or in a thread.

A Locust process is gevent-monkey-patched, and an asyncio loop must not share it: `start_subprocess` launches
`python -m loadlib.mock --port 0`, reads the printed port with a deadline, and stops it with SIGTERM then SIGKILL.
`start_in_thread` runs the loop in a real OS thread and is meant for unpatched processes (unit tools, scripts).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

from loadlib.errors import LoadlibError
from loadlib.mock.cli import READY_PREFIX
from loadlib.mock.eventloop import new_event_loop
from loadlib.mock.server import MockServer
from loadlib.mockapi.config import MockConfig

_READY = re.compile(re.escape(READY_PREFIX) + r"(http://\S+?):(\d+) ")
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


class MockStartError(LoadlibError):
    """The mock did not come up: bad flags, port in use, or no listening line in time."""


def _gevent_patched() -> bool:
    gevent_monkey = sys.modules.get("gevent.monkey")
    return bool(gevent_monkey and gevent_monkey.is_module_patched("threading"))


class MockHandle:
    """A mock running on its own loop in a daemon thread of this process."""

    def __init__(self, server: MockServer, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        self.server = server
        self.loop = loop
        self._thread = thread

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def port(self) -> int:
        return self.server.port

    def stop(self, timeout: float = 5.0) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout)

    def __enter__(self) -> MockHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_in_thread(
    config: MockConfig | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    timeout: float = 15.0,
    **server_kwargs: Any,
) -> MockHandle:
    """Start a MockServer in a daemon OS thread; returns once it listens. Not for gevent-patched processes."""
    if _gevent_patched():
        raise MockStartError("start_in_thread needs real threads; in a gevent-patched process use start_subprocess")
    ready = threading.Event()
    box: dict[str, Any] = {}

    def run() -> None:
        loop = new_event_loop()
        asyncio.set_event_loop(loop)
        server = MockServer(config, host=host, port=port, **server_kwargs)
        try:
            loop.run_until_complete(server.start())
        except BaseException as exc:
            box["error"] = exc
            ready.set()
            loop.close()
            return
        box["server"], box["loop"] = server, loop
        ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(server.close())
            loop.close()

    thread = threading.Thread(target=run, name="loadlib-mock", daemon=True)
    thread.start()
    if not ready.wait(timeout):
        raise MockStartError(f"mock did not start within {timeout:g}s")
    if "error" in box:
        raise MockStartError(f"mock could not start on {host}:{port}: {box['error']}")
    return MockHandle(box["server"], box["loop"], thread)


StderrMode = Literal["capture", "inherit", "devnull"]


class MockProcess:
    """A `python -m loadlib.mock` child process. `url` has no path (append /v1 for OpenAI SDKs)."""

    def __init__(self, proc: subprocess.Popen[bytes], url: str, port: int, stderr_file: IO[bytes] | None) -> None:
        self.proc = proc
        self.url = url
        self.port = port
        self._stderr = stderr_file
        atexit.register(self.stop)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr_text(self) -> str:
        """What the mock wrote to stderr (capture mode only)."""
        if self._stderr is None or self._stderr.closed:
            return ""
        self._stderr.flush()
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def stop(self, timeout: float = 5.0) -> int | None:
        """SIGTERM, wait up to `timeout`, then SIGKILL. Returns the exit code. Idempotent."""
        atexit.unregister(self.stop)
        proc = self.proc
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout)
            except ProcessLookupError:
                pass
        if proc.stdout is not None and not proc.stdout.closed:
            proc.stdout.close()
        if self._stderr is not None and not self._stderr.closed:
            text = self.stderr_text()
            if text.strip():
                sys.stderr.write("".join(f"loadlib mock: {line}\n" for line in text.splitlines()))
            self._stderr.close()
        return proc.returncode

    def __enter__(self) -> MockProcess:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _read_ready_line(proc: subprocess.Popen[bytes], timeout: float) -> str:
    """Read stdout up to the first newline, with a deadline; '' if the process ended or time ran out."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    buf = b""
    deadline = time.monotonic() + timeout
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            return ""
        readable, _, _ = select.select([fd], [], [], min(left, 0.5))
        if not readable:
            if proc.poll() is not None:
                return ""
            continue
        data = os.read(fd, 4096)
        if not data:
            return ""
        buf += data
    return buf.split(b"\n", 1)[0].decode(errors="replace")


def start_subprocess(
    config: MockConfig | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    seed: int | None = None,
    cpu: int | None = None,
    extra_args: Sequence[str] = (),
    timeout: float = 30.0,
    stderr: StderrMode = "capture",
    python: str | None = None,
) -> MockProcess:
    """Launch the mock as a child process and wait until it listens. Raises MockStartError with its stderr."""
    cmd = [python or sys.executable, "-m", "loadlib.mock", "--host", host, "--port", str(port), "--watch-parent"]
    if seed is not None:
        cmd += ["--seed", str(seed)]
    if cpu is not None:
        cmd += ["--cpu", str(cpu)]
    cmd += (config.to_args() if config else []) + list(extra_args)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
    err_file: IO[bytes] | None = tempfile.TemporaryFile() if stderr == "capture" else None  # noqa: SIM115 - outlives this call
    err_target: Any = err_file if stderr == "capture" else (subprocess.DEVNULL if stderr == "devnull" else None)
    # Own session: a Ctrl-C in the terminal reaches Locust, which then stops the mock after its last request.
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err_target, env=env, start_new_session=True
    )
    line = _read_ready_line(proc, timeout)
    match = _READY.search(line)
    if match is None:
        handle = MockProcess(proc, "", 0, err_file)
        detail = handle.stderr_text().strip().splitlines()
        handle._stderr = None
        handle.stop(timeout=2.0)
        if err_file is not None:
            err_file.close()
        why = detail[-1] if detail else (line or f"no listening line within {timeout:g}s")
        raise MockStartError(f"mock LLM server did not start: {why}")
    return MockProcess(proc, match.group(1) + ":" + match.group(2), int(match.group(2)), err_file)
