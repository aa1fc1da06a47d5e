"""Pick an adapter by provider name, and refuse response bodies that are not event streams of an API we speak.

The stream layer (loadlib/stream.py) calls `check_content_type` on a 2xx response whose Content-Type is not
`text/event-stream`, before reading it: NDJSON streams (Ollama's native /api/chat) are refused in one line, while
`application/json` is left to the adapter's `parse_response` (a `stream: false` request, or a server that ignored
`stream: true`). When a body yields no SSE event at all, `sniff_unsupported` says what it looks like instead.
"""

from __future__ import annotations

import orjson

from loadlib.errors import ConfigError, UnsupportedAPIError
from loadlib.providers import errors_body
from loadlib.providers.anthropic import AnthropicAdapter
from loadlib.providers.base import Adapter
from loadlib.providers.openai import OpenAIAdapter

DEFAULT = "openai"
_ADAPTERS: dict[str, Adapter] = {}

_NDJSON_TYPES = frozenset(
    {
        "application/x-ndjson",
        "application/ndjson",
        "application/jsonl",
        "application/x-jsonlines",
        "application/jsonlines",
        "application/json-seq",
        "application/stream+json",
        "application/x-json-stream",
    }
)


def register(adapter: Adapter) -> None:
    """Make a provider known by its adapter's name: a new provider's module calls this once (docs/extending.md)."""
    _ADAPTERS[adapter.name.strip().lower()] = adapter


def unregister(name: str) -> None:
    """Forget a provider (a test's toy provider)."""
    _ADAPTERS.pop(name.strip().lower(), None)


def names() -> tuple[str, ...]:
    """The known providers, in the order they were registered."""
    return tuple(_ADAPTERS)


def get_adapter(name: str) -> Adapter:
    """The (stateless, shared) adapter of a provider name; ConfigError names the valid ones."""
    adapter = _ADAPTERS.get(name.strip().lower())
    if adapter is None:
        raise ConfigError(f"unknown provider {name!r}: use one of {', '.join(_ADAPTERS)}")
    return adapter


def _known(provider: str | None) -> Adapter | None:
    return _ADAPTERS.get((provider or "").strip().lower())


def key_env(provider: str | None) -> str | None:
    """The environment variable of a provider's API key when none is named; None for an unknown provider."""
    adapter = _known(provider)
    return adapter.key_env if adapter else None


def base_url_at(server_url: str, provider: str) -> str:
    """The base URL a client of `provider` uses for a server at `server_url` (the mock's root URL)."""
    return server_url + get_adapter(provider).root_path


def _either(words: list[str]) -> str:
    """ "a", "a or b", "a, b or c"."""
    return " or ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)


def providers_help() -> str:
    """Each provider with what it speaks, for --llm-provider's help."""
    return _either([f"{a.name} ({a.summary})" for a in _ADAPTERS.values()])


def key_envs_help() -> str:
    """Each provider's default key variable, for --llm-api-key-env's help."""
    return _either([a.key_env for a in _ADAPTERS.values()])


def check_content_type(content_type: str) -> None:
    """Raise UnsupportedAPIError for a newline-delimited JSON stream; anything else may be read on."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media in _NDJSON_TYPES:
        raise UnsupportedAPIError(f"the response is {media}, not an SSE stream. {errors_body.OLLAMA}")


def sniff_unsupported(body_prefix: bytes) -> str | None:
    """Explain a body that gave no SSE event: what it looks like and what to do; None if it is not recognised."""
    head = body_prefix.lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:1] == b"[":
        return "the body is a JSON array, not an SSE stream (Gemini streamGenerateContent without alt=sse?)"
    if head[:1] == b"<":
        return "the body is HTML, not an SSE stream (a proxy, login or error page?)"
    if head[:1] != b"{":
        return None
    first_line = head.split(b"\n", 1)[0]
    try:
        obj = orjson.loads(first_line)
    except orjson.JSONDecodeError:
        return "the body is JSON, not an SSE stream (the server ignored stream: true?)"
    if isinstance(obj, dict):
        if obj.get("error") is not None:
            return "the body is a JSON error, not an SSE stream: " + errors_body.stream_error(obj).message
        foreign = errors_body.foreign_api(obj)
        if foreign and foreign is not errors_body.OPENAI_CHAT:
            return foreign
    return "the body is JSON, not an SSE stream (the server ignored stream: true?)"


register(OpenAIAdapter())
register(AnthropicAdapter())
