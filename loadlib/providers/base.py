"""The provider-adapter contract: build one HTTP request, turn the event stream into normalised output.

An adapter is stateless; `new_parser()` gives a per-request `StreamParser`. `StreamParser.feed()` is on the hot
path (called once per SSE event while other streams are live), so it returns plain int flags and accumulates
fragments in lists; everything else is computed once in `result()` after the stream ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from loadlib.errors import ErrorClass

# Flags returned by StreamParser.feed() for one event.
OUTPUT = 1  # carried generated output: non-empty text, reasoning, refusal or tool-call-argument delta (clocks TTFT)
VISIBLE = 2  # carried visible output: text, refusal or tool-call delta, not reasoning (clocks TTFO)
TERMINAL = 4  # the protocol's terminal event: `data: [DONE]` or Anthropic `message_stop`
ERROR = 8  # an in-stream error event inside an HTTP 200 response (provider_error)

# Where a response's usage came from (RequestRecord.usage_source, docs/records.md).
USAGE_STREAM = "stream"  # events of their own: OpenAI's usage-only chunk, Anthropic's message_start/message_delta
# on the chunk with output or the finish reason (as some servers send it); a later usage-only chunk is USAGE_STREAM
USAGE_FINAL_CHUNK = "final_chunk"
USAGE_BODY = "body"  # a non-streamed response body
# Anthropic's message_start only: the stream ended (broken, cut off, an error) before message_delta, whose output count
# is the only final one; the prompt is the server's, the completion our estimate (message_start's is a placeholder)
USAGE_STREAM_START = "stream_start"
USAGE_ESTIMATED = "estimated"  # no usage from the server: our tiktoken counts


@dataclass(slots=True)
class ChatRequest:
    """What a scenario asks for, provider-neutral. `messages` use OpenAI roles; a `system` message is lifted into
    Anthropic's top-level `system` field by that adapter."""

    messages: list[dict[str, Any]]
    max_tokens: int = 256
    temperature: float | None = None
    stream: bool = True
    include_usage: bool = True  # OpenAI stream_options.include_usage
    json_schema: dict[str, Any] | None = None  # structured output: OpenAI response_format, Anthropic forced tool
    json_schema_name: str = "findings"
    extra_body: dict[str, Any] = field(default_factory=dict)  # merged last into the JSON body
    extra_headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HttpRequest:
    method: str
    path: str  # absolute path including the base URL's path prefix, e.g. "/v1/chat/completions"
    headers: dict[str, str]
    body: bytes


@dataclass(slots=True)
class Usage:
    """The token counts the server reported (None: not reported), one meaning whatever the API: `prompt_tokens` is the
    whole prompt; the cache read and written are parts of it, as reasoning is of the completion (providers.usage)."""

    prompt_tokens: int | None = None  # OpenAI prompt_tokens; Anthropic input_tokens + cache read + cache write
    completion_tokens: int | None = None
    cached_prompt_tokens: int | None = None  # read from the cache: OpenAI cached_tokens, Anthropic cache_read
    cache_write_tokens: int | None = None  # written to the cache: Anthropic cache_creation_input_tokens
    reasoning_tokens: int | None = None
    rejected: tuple[str, ...] = ()  # counts the server sent that were not sane counts (see providers.fields.count)


@dataclass(slots=True)
class ToolCall:
    """A tool (function) call the model made: its name and its arguments as the JSON text streamed."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@dataclass(slots=True)
class ProviderError:
    """An error the provider reported, in a non-2xx body or as an in-stream error event."""

    error_class: ErrorClass
    message: str
    type: str | None = None
    code: str | None = None


@dataclass(slots=True)
class StreamResult:
    """The parsed output of one response, provider-neutral: text per choice, reasoning, refusal, tool calls, usage,
    finish reason (`"length"`: cut by max_tokens) and an in-stream provider error."""

    text_by_choice: dict[int, str] = field(default_factory=dict)
    reasoning: str = ""
    refusal: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    usage_source: str | None = None  # USAGE_STREAM, USAGE_FINAL_CHUNK, USAGE_STREAM_START or USAGE_BODY
    finish_reason: str | None = None  # of choice 0 (the last non-null one seen)
    finish_by_choice: dict[int, str] = field(default_factory=dict)
    error: ProviderError | None = None
    response_id: str | None = None
    model: str | None = None
    output_events: int = 0
    terminal: bool = False
    text_dropped: int = 0  # output characters past --llm-max-text-kb, counted, not kept (loadlib.providers.kept)
    mended: int = 0  # lone UTF-16 surrogate escapes read as U+FFFD (loadlib.providers.jsonread)

    @property
    def text(self) -> str:
        """The text of choice 0."""
        return self.text_by_choice.get(0, "")


class StreamParser(Protocol):
    def feed(self, event: bytes, data: bytes) -> int:
        """Consume one dispatched SSE event (`event` is b"" for the default type) and return its flags.

        Raises MalformedEventError when the data is not valid JSON of the protocol, UnsupportedAPIError when the
        event belongs to another API (Responses, Gemini native, TGI native, Assistants...)."""
        ...

    def result(self) -> StreamResult: ...


class Adapter(Protocol):
    """One API dialect: its request, its stream and body parsers, and the facts the rest of the run asks of it
    (so a new provider is this one class, registered by name in loadlib.providers.registry)."""

    name: str
    summary: str  # what it speaks, for --llm-provider's help: "Messages"
    key_env: str  # the environment variable of its API key when none is named: "ANTHROPIC_API_KEY"
    root_path: str  # appended to a server's root URL to give the base URL its SDK expects ("/v1" or "")

    def build(self, base_path: str, model: str, api_key: str | None, req: ChatRequest) -> HttpRequest: ...

    def new_parser(self, max_text: int = ...) -> StreamParser:
        """A parser keeping at most `max_text` characters of output (loadlib.providers.kept)."""
        ...

    def parse_response(self, body: bytes) -> StreamResult:
        """A non-streaming (`stream: false`) response body."""
        ...

    def classify_error(self, status: int, body: bytes) -> ProviderError:
        """A non-2xx response: rate_limited, context_length_exceeded, http_4xx or http_5xx, with a short message."""
        ...
