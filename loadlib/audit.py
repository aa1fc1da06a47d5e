"""Audit trail: one JSONL line per request with who, what model, how many tokens, what it cost and how it ended.

A line never holds prompt or output text, error messages (they may echo either) or keys: only ids, counts, money,
status and a SHA-256 of the output so two runs can be compared without storing what was said. Lines are buffered
in memory and appended by a background greenlet once a second, off the request path; `close()` (at test stop and
at quit) writes whatever is left, so no line is lost when the run ends.
"""

from __future__ import annotations

import gevent

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from loadlib.record import RequestRecord

FLUSH_INTERVAL_S = 1.0


def iso_time(unix_ns: int) -> str:
    return datetime.fromtimestamp(unix_ns / 1e9, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def output_digest(text: str) -> str | None:
    return hashlib.sha256(text.encode()).hexdigest() if text else None


def audit_line(record: RequestRecord, **extra: Any) -> dict[str, Any]:
    """The audit entry of one request (pure). `extra` adds scenario fields such as a case id; never text."""
    line: dict[str, Any] = {
        "time": iso_time(record.start_unix_ns),
        "run_id": record.run_id,
        "request_id": record.request_id,
        "server_request_id": record.server_request_id,
        "scenario": record.scenario,
        "endpoint": record.endpoint,
        "provider": record.provider,
        "model": record.model,
        "worker": record.worker_id,
        "attempt": record.attempt,
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": record.completion_tokens,
        "prompt_tokens_est": record.prompt_tokens_est,
        "completion_tokens_est": record.completion_tokens_est,
        "cost_usd": record.cost_usd,
        "status": record.status.value,
        "http_status": record.http_status,
        "finish_reason": record.finish_reason,
        "e2e_ms": round(record.e2e_ms, 3) if record.e2e_ms is not None else None,
    }
    line.update(extra)
    return line


def resolve_path(template: str, run_id: str, worker: str) -> Path:
    """`{run_id}` and `{worker}` in the configured path are filled in (workers may share one file: lines are
    appended whole, one write per batch)."""
    return Path(template.replace("{run_id}", run_id or "run").replace("{worker}", worker)).expanduser()


class AuditLog:
    """Buffered append-only JSONL writer. `lines` counts every line accepted (written or still buffered).

    `line` turns a record into the dict written (default: the audit entry; the per-request export passes its own)."""

    def __init__(self, path: Path, flush_interval_s: float = FLUSH_INTERVAL_S, line: Any = audit_line) -> None:
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
