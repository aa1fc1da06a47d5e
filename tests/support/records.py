"""One record factory for tests: every identity field filled in, everything else as the test says."""

from __future__ import annotations

from typing import Any

from loadlib.records.record import RequestRecord

IDENTITY: dict[str, Any] = {
    "run_id": "r",
    "scenario": "chat",
    "endpoint": "mock",
    "provider": "openai",
    "model": "mock-llm",
    "worker_id": "w",
    "request_id": "w-1",
    "start_unix_ns": 1,
}


def make_record(**fields: Any) -> RequestRecord:
    """A RequestRecord with the identity above, overridden and completed by `fields`."""
    return RequestRecord(**{**IDENTITY, **fields})
