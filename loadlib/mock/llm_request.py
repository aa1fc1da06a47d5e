"""What an LLM request asks for: the API its path names, and its body checked and resolved against the mock config.

Pure parsing: a malformed request raises ValueError, TypeError or MockConfigError, which the server answers with a
400 in the request's own API dialect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from loadlib.mock.prompt import chat_messages
from loadlib.mockapi.config import MockConfig, resolve

if TYPE_CHECKING:
    from loadlib.mock.response_cache import Stored


@dataclass(frozen=True, slots=True)
class LlmCall:
    """A parsed chat request: its body, the config it resolves to (server defaults, X-Mock, model suffix); with a
    response cache, its key there and the stored answer a hit replays."""

    api: str
    body: dict[str, Any]
    cfg: MockConfig
    model: str
    messages: list[dict[str, Any]]
    max_tokens: int | None
    cache_key: bytes | None = None
    replay: Stored | None = None

    @property
    def stream(self) -> bool:
        return self.body.get("stream") is True


def api_for(path: str) -> str | None:
    """`openai` for .../chat/completions, `anthropic` for .../messages, None for any other path."""
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/messages"):
        return "anthropic"
    return None


def parse_call(api: str, raw: bytes, config: MockConfig, x_mock: str | None) -> LlmCall:
    """The request body checked in the order a provider checks it, so the first problem is the one reported."""
    body = orjson.loads(raw)
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise ValueError("model is required")
    cfg, bare_model = resolve(config, x_mock, model)
    if not isinstance(body.get("messages"), list) or not all(isinstance(m, dict) for m in body["messages"]):
        raise ValueError("messages must be a list of objects")
    messages = chat_messages(api, body)
    return LlmCall(api, body, cfg, bare_model, messages, max_tokens(api, body))


def max_tokens(api: str, body: dict[str, Any]) -> int | None:
    """The output cap the request sets (Anthropic's max_tokens; OpenAI's max_completion_tokens, else max_tokens)."""
    value = body.get("max_tokens") if api == "anthropic" else body.get("max_completion_tokens", body.get("max_tokens"))
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"max_tokens must be a non-negative integer, got {value!r}")
    return value


def forced_function(body: dict[str, Any]) -> str | None:
    """Name of the function an OpenAI request forces with tool_choice (a named function, or "required": the first
    tool's), else None."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function":
        function = choice.get("function")
        return str(function.get("name") or "function") if isinstance(function, dict) else "function"
    if choice == "required":
        tools = body.get("tools") or []
        first = tools[0].get("function") if tools and isinstance(tools[0], dict) else None
        return str(first.get("name") or "function") if isinstance(first, dict) else "function"
    return None


def forced_tool(body: dict[str, Any]) -> str | None:
    """Name of the tool an Anthropic request forces with tool_choice (type "tool" or "any"), else None."""
    choice = body.get("tool_choice")
    if not isinstance(choice, dict):
        return None
    if choice.get("type") == "tool":
        return str(choice.get("name") or "tool")
    if choice.get("type") == "any":
        tools = body.get("tools") or []
        first = tools[0] if tools and isinstance(tools[0], dict) else {}
        return str(first.get("name") or "tool")
    return None
