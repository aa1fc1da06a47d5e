"""The record factories of the tests: every identity field filled in, everything else as the test says."""

from __future__ import annotations

from typing import Any

from loadlib.errors import ErrorClass
from loadlib.records.record import RequestRecord
from loadlib.records.user_request import UserRequest

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


def make_user_request(**fields: Any) -> UserRequest:
    """A UserRequest answered by its preferred endpoint at the first attempt, overridden by `fields`."""
    base: dict[str, Any] = {"run_id": "r", "scenario": "chat", "worker_id": "w", "request_id": "w-1"}
    base |= {"start_unix_ns": 1, "preferred": "primary", "endpoint": "primary", "status": ErrorClass.OK}
    return UserRequest(**{**base, "attempts": 1, "e2e_ms": 100.0, "ttft_ms": 10.0, **fields})
