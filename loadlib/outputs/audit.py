"""Audit trail: one JSONL line per request with who, what model, how many tokens, what it cost and how it ended.

A line never holds prompt or output text, error messages (they may echo either) or keys: only ids, counts, money,
status and a SHA-256 of the output so two runs can be compared without storing what was said. Lines are written by
loadlib.outputs.jsonl.
"""

from __future__ import annotations

import hashlib
from typing import Any

from loadlib.outputs.jsonl import iso_time
from loadlib.records.record import RequestRecord


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
