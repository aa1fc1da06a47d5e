"""loadlib: the library under the locustfiles. Streams LLM APIs over SSE and measures every request truthfully.

The names below are the public API for writing a load test of one's own (docs/writing-load-tests.md); everything
else is private by convention and may change without notice. Only the errors and `RequestRecord` are imported with
the package: the rest is imported when first used (PEP 562), because importing Locust patches the standard library
with gevent, which `python -m loadlib report` and `loadlib.mock` must not get.

Writing a user:

- `LLMUser`: the Locust user class to subclass; its `chat(...)` streams one request and returns a `Reply`.
- `Reply`: the record of the attempt and its parsed output (`text`, `ok`, `result.tool_calls`...).
- `Check`, `OnRecord`: the signatures of `chat`'s `check=` (turn a success into a failure of your own) and
  `on_record=` (see every attempt's final record) hooks.
- `ScenarioSpec`: what a scenario declares: its name, its data (prepared before any request is timed), its SLOs.
- `RampShape`, `StepShape`: load shapes ready to use; subclass Locust's `LoadTestShape` for your own.
- `run_context`, `LLMEvents`: loadlib's events of a run (`run_context(environment).events.record`).

What a request is and returns: `ChatRequest` (the fields `chat(**request_options)` accepts), `StreamResult`,
`ToolCall`, `Usage`, `RequestRecord` (one attempt), `UserRequest` (one user-visible request), `ErrorClass`.

Data: `read_jsonl` (a JSONL file with errors naming file:line), `count_text` and `count_chat` (o200k token counts).

Errors: `LoadlibError` and its subclasses `ConfigError` (raise it for a user mistake), `UnsupportedAPIError`,
`MalformedEventError`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from loadlib.errors import ConfigError, ErrorClass, LoadlibError, MalformedEventError, UnsupportedAPIError
from loadlib.records.record import RequestRecord

if TYPE_CHECKING:  # what _LAZY imports on first use, seen by type checkers now (else every name would be Any)
    from loadlib.data.jsonl import read_jsonl
    from loadlib.locust.context import LLMEvents
    from loadlib.locust.context import context as run_context
    from loadlib.locust.scenario_part import ScenarioSpec
    from loadlib.locust.shapes import RampShape, StepShape
    from loadlib.locust.user import Check, LLMUser, OnRecord, Reply
    from loadlib.providers.base import ChatRequest, StreamResult, ToolCall, Usage
    from loadlib.records.tokens import count_chat, count_text
    from loadlib.records.user_request import UserRequest

# public name -> module it lives in (imported on first use)
_LAZY = {
    "LLMUser": "loadlib.locust.user",
    "Reply": "loadlib.locust.user",
    "Check": "loadlib.locust.user",
    "OnRecord": "loadlib.locust.user",
    "ScenarioSpec": "loadlib.locust.scenario_part",
    "RampShape": "loadlib.locust.shapes",
    "StepShape": "loadlib.locust.shapes",
    "LLMEvents": "loadlib.locust.context",
    "ChatRequest": "loadlib.providers.base",
    "StreamResult": "loadlib.providers.base",
    "ToolCall": "loadlib.providers.base",
    "Usage": "loadlib.providers.base",
    "UserRequest": "loadlib.records.user_request",
    "read_jsonl": "loadlib.data.jsonl",
    "count_text": "loadlib.records.tokens",
    "count_chat": "loadlib.records.tokens",
}
_RENAMED = {"run_context": ("loadlib.locust.context", "context")}

__all__ = [
    "ChatRequest",
    "Check",
    "ConfigError",
    "ErrorClass",
    "LLMEvents",
    "LLMUser",
    "LoadlibError",
    "MalformedEventError",
    "OnRecord",
    "RampShape",
    "Reply",
    "RequestRecord",
    "ScenarioSpec",
    "StepShape",
    "StreamResult",
    "ToolCall",
    "UnsupportedAPIError",
    "Usage",
    "UserRequest",
    "count_chat",
    "count_text",
    "read_jsonl",
    "run_context",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module when the name is first used, so `import loadlib` stays free of Locust."""
    module, attr = _RENAMED.get(name, (_LAZY.get(name), name))
    if module is None:
        raise AttributeError(f"module 'loadlib' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
