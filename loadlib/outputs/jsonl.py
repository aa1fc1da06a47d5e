"""One buffered, append-only JSONL writer for every per-request file (records, audit trail): lines are serialised
on the caller's greenlet and appended by a background greenlet once a second, off the request path; `close()` (at test
stop and at quit) writes whatever is left, so no line is lost when the run ends."""

from __future__ import annotations

import gevent

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from loadlib.records.record import RequestRecord

FLUSH_INTERVAL_S = 1.0


def iso_time(unix_ns: int) -> str:
    return datetime.fromtimestamp(unix_ns / 1e9, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def resolve_path(template: str, run_id: str, worker: str) -> Path:
    """`{run_id}` and `{worker}` in the configured path are filled in (workers may share one file: lines are
    appended whole, one write per batch)."""
    return Path(template.replace("{run_id}", run_id or "run").replace("{worker}", worker)).expanduser()


class JsonlWriter:
    """Buffered append-only JSONL writer. `lines` counts every line accepted (written or still buffered).

    `line` turns a record (and keyword extras) into the dict written."""

    def __init__(
        self,
        path: Path,
        line: Callable[..., dict[str, Any]],
        flush_interval_s: float = FLUSH_INTERVAL_S,
    ) -> None:
        self.path = path
        self._line = line
        self.flush_interval_s = flush_interval_s
        self.lines = 0
        self._buffer: list[bytes] = []
        self._greenlet: gevent.Greenlet | None = None
        path.parent.mkdir(parents=True, exist_ok=True)

    def add(self, record: RequestRecord, **extra: Any) -> None:
        self._buffer.append(orjson.dumps(self._line(record, **extra)) + b"\n")
        self.lines += 1

    def flush(self) -> None:
        if not self._buffer:
            return
        data = b"".join(self._buffer)
        self._buffer.clear()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def start(self) -> None:
        if self._greenlet is None:
            self._greenlet = gevent.spawn(self._run)

    def _run(self) -> None:
        while True:
            gevent.sleep(self.flush_interval_s)
            self.flush()

    def close(self) -> None:
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
            self._greenlet = None
        self.flush()
