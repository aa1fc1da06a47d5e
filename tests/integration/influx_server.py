"""A real InfluxDB 1.x (`influxd`, Debian package `influxdb`) on free loopback ports with its own config and data
directory, for integration tests. It can be stopped and restarted on the same port (outage tests); data survive.

The binary is `$INFLUXD` if set, else `influxd` on PATH; only 1.x is accepted (2.x has another config format).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

CONFIG_TEMPLATE = """\
reporting-disabled = true
bind-address = "127.0.0.1:{rpc_port}"

[meta]
  dir = "{root}/meta"
  logging-enabled = false

[data]
  dir = "{root}/data"
  wal-dir = "{root}/wal"
  query-log-enabled = false
  index-version = "inmem"

[monitor]
  store-enabled = false

[subscriber]
  enabled = false

[continuous_queries]
  enabled = false

[http]
  enabled = true
  bind-address = "127.0.0.1:{http_port}"
  auth-enabled = false
  log-enabled = false
  pprof-enabled = false

[logging]
  level = "warn"
  suppress-logo = true
"""


def find_influxd() -> tuple[str | None, str]:
    """(path of a usable InfluxDB 1.x `influxd`, or None, and why not)."""
    binary = os.environ.get("INFLUXD") or shutil.which("influxd")
    if not binary:
        return None, "influxd not found (install the Debian package: apt-get install influxdb, or set INFLUXD)"
    try:
        out = subprocess.run([binary, "version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{binary} does not run: {exc}"
    if "v1." not in out:
        return None, f"{binary} is not InfluxDB 1.x: {out.strip()!r}"
    return binary, out.strip()


STABLE_PORTS = range(20_000, 32_000)  # below Linux's ephemeral range (32768-60999)


def free_port() -> int:
    """A free port below the ephemeral range: influxd is stopped and started again on it (outage tests), and a port
    the kernel hands out as a client's source port could be taken meanwhile by any outgoing connection (seen: `bind:
    address already in use` at the restart)."""
    for port in random.sample(STABLE_PORTS, 200):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {STABLE_PORTS}")


class InfluxServer:
    """One influxd process; `start()`/`stop()` may be called repeatedly, keeping ports and data."""

    def __init__(self, binary: str, root: Path) -> None:
        self.binary = binary
        self.root = Path(root)
        self.http_port = free_port()
        self.rpc_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.config_path = self.root / "influxdb.conf"
        self.log_path = self.root / "influxd.log"
        self.root.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(
            CONFIG_TEMPLATE.format(root=self.root, rpc_port=self.rpc_port, http_port=self.http_port)
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout_s: float = 20.0) -> None:
        """Start influxd and wait until /ping answers 204."""
        if self.running:
            return
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child process
        try:
            self.proc = subprocess.Popen(
                [self.binary, "run", "-config", str(self.config_path)], stdout=log, stderr=subprocess.STDOUT
            )
        finally:
            log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"influxd exited with {self.proc.returncode}: {self.log_tail()}")
            if self.ping():
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"influxd did not answer /ping within {timeout_s}s: {self.log_tail()}")

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGTERM (a clean shutdown keeps the data), SIGKILL if it does not exit in time."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    def ping(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/ping", timeout=1) as resp:
                return resp.status == 204
        except (urllib.error.URLError, OSError):
            return False

    def log_tail(self, n: int = 2000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def query(self, q: str, db: str | None = None, *, post: bool = False) -> dict[str, Any]:
        """Run InfluxQL; returns the decoded JSON (timestamps as ns epoch). Raises on an HTTP error."""
        params = {"q": q, "epoch": "ns"}
        if db:
            params["db"] = db
        data = urllib.parse.urlencode(params).encode()
        if post:
            req = urllib.request.Request(f"{self.url}/query", data=data, method="POST")
        else:
            req = urllib.request.Request(f"{self.url}/query?{data.decode()}")
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    def create_database(self, name: str) -> None:
        self.query(f'CREATE DATABASE "{name}"', post=True)

    def write(self, db: str, lines: list[str]) -> None:
        req = urllib.request.Request(
            f"{self.url}/write?db={urllib.parse.quote(db)}&precision=ns", data="\n".join(lines).encode(), method="POST"
        )
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert resp.status == 204, resp.status

    def count(self, db: str, measurement: str, field: str, where: str = "") -> int:
        """COUNT of a field (0 when there are no points)."""
        clause = f" WHERE {where}" if where else ""
        result = self.query(f'SELECT count("{field}") FROM "{measurement}"{clause}', db)["results"][0]
        if "error" in result:
            raise RuntimeError(result["error"])
        series = result.get("series") or []
        return int(series[0]["values"][0][1]) if series else 0
