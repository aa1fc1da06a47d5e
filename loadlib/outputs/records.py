"""Per-request raw export (`--llm-records FILE`): every RequestRecord as one JSONL line, for analysis elsewhere.

Records hold no prompt or output text and no keys; error messages are the redacted one-line ones. Lines are
serialised and appended by loadlib.outputs.jsonl, off the request path.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from loadlib.outputs.jsonl import JsonlWriter, iso_time, resolve_path
from loadlib.records.record import RequestRecord

_FIELDS = tuple(f.name for f in fields(RequestRecord))


def record_line(record: RequestRecord, **_: Any) -> dict[str, Any]:
    """Every field of the record, JSON-ready (pure)."""
    line: dict[str, Any] = {name: getattr(record, name) for name in _FIELDS}
    line["status"] = record.status.value
    line["itl_ms"] = list(record.itl_ms)
    line["time"] = iso_time(record.start_unix_ns)
    return line


def open_export(template: str, run_id: str, worker: str) -> JsonlWriter:
    """A started writer for this node's records; `{run_id}` and `{worker}` in the path are filled in."""
    log = JsonlWriter(resolve_path(template, run_id, worker), line=record_line)
    log.start()
    return log
