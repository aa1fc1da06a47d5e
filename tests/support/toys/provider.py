"""A toy provider, the one module docs/extending.md ("A new provider") asks for: an adapter for a made-up streaming
dialect, registered by name. A real provider's module calls `registry.register` when it is imported; this one waits
for `register()`, so the rest of the test suite sees only the built-in providers.

The dialect: POST {base}/generate with {"model", "prompt", "max_tokens", "stream"}; the stream is SSE events
`data: {"token": "..."}` ending with `data: {"end": "stop", "usage": {"input": n, "output": m}}`; an in-stream
`data: {"error": "..."}` is a provider error. A non-streamed body is {"text", "end", "usage"}."""

from __future__ import annotations

from typing import Any

import orjson

from loadlib.errors import MalformedEventError
from loadlib.providers import errors_body, registry
from loadlib.providers.base import (
    ERROR,
    OUTPUT,
    TERMINAL,
    USAGE_BODY,
    USAGE_STREAM,
    VISIBLE,
    ChatRequest,
    HttpRequest,
    ProviderError,
    StreamResult,
    Usage,
)
from loadlib.providers.http import join_path, json_body, post_json
from loadlib.providers.kept import DEFAULT_MAX_TEXT, Budget, Kept

NAME = "toy"


def _usage(raw: Any) -> Usage | None:
    """The dialect's usage object ({"input", "output"}) as loadlib's Usage."""
    if not isinstance(raw, dict):
        return None
    return Usage(prompt_tokens=raw.get("input"), completion_tokens=raw.get("output"))


class ToyParser:
    """One streamed response: tokens are appended, the end event carries the finish reason and usage."""

    def __init__(self, max_text: int) -> None:
        self.budget = Budget(max_text)
        self.text = Kept(self.budget)  # the output kept within --llm-max-text-kb (loadlib.providers.kept)
        self.events = 0
        self.end: str | None = None
        self.usage: Usage | None = None
        self.error: ProviderError | None = None

    def feed(self, event: bytes, data: bytes) -> int:
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise MalformedEventError(errors_body.not_json("toy event", data)) from None
        if not isinstance(obj, dict):
            raise MalformedEventError("toy event is not a JSON object")
        if isinstance(obj.get("token"), str):
            self.text.append(obj["token"])
            self.events += 1
            return OUTPUT | VISIBLE
        if "end" in obj:
            self.end, self.usage = str(obj["end"]), _usage(obj.get("usage"))
            return TERMINAL
        if "error" in obj:
            self.error = errors_body.stream_error({"error": {"message": str(obj["error"])}})
            return ERROR
        raise MalformedEventError("toy event without token, end or error")

    def result(self) -> StreamResult:
        text = self.text.value()
        return StreamResult(
            text_by_choice={0: text} if text else {},
            usage=self.usage,
            usage_source=USAGE_STREAM if self.usage else None,
            finish_reason=self.end,
            finish_by_choice={0: self.end} if self.end else {},
            error=self.error,
            output_events=self.events,
            terminal=self.end is not None,
            text_dropped=self.budget.dropped,
        )


class ToyAdapter:
    """The toy dialect's request, stream, body and error body, and the facts the run asks of a provider."""

    name = NAME
    summary = "a toy dialect, docs/extending.md"
    key_env = "TOY_API_KEY"
    root_path = "/toy"

    def build(self, base_path: str, model: str, api_key: str | None, req: ChatRequest) -> HttpRequest:
        prompt = "\n".join(str(m.get("content") or "") for m in req.messages)
        body: dict[str, Any] = {"model": model, "prompt": prompt, "max_tokens": req.max_tokens, "stream": req.stream}
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream", "Accept-Encoding": "identity"}
        if api_key:
            headers["Authorization"] = f"Token {api_key}"
        return post_json(join_path(base_path, "/generate"), body, headers, req)

    def new_parser(self, max_text: int = DEFAULT_MAX_TEXT) -> ToyParser:
        return ToyParser(max_text)

    def parse_response(self, body: bytes) -> StreamResult:
        obj = json_body(body, "toy body")
        text, end, usage = str(obj.get("text") or ""), obj.get("end"), _usage(obj.get("usage"))
        return StreamResult(
            text_by_choice={0: text} if text else {},
            usage=usage,
            usage_source=USAGE_BODY if usage else None,
            finish_reason=end,
            output_events=1 if text else 0,
            terminal=True,
        )

    def classify_error(self, status: int, body: bytes) -> ProviderError:
        return errors_body.classify(status, body)


def register() -> None:
    registry.register(ToyAdapter())


def unregister() -> None:
    registry.unregister(NAME)
