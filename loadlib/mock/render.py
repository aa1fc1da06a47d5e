"""Wire bytes of the mock's responses, pre-serialised so streaming costs a slice and a join per batch.

Output text is a window into a fixed pseudo-random cycle of common English words, each one o200k token with its
leading space, so usage, tiktoken and the word count agree. Per-token event bytes are built once at import; a
request only splices its own id/model prefix (OpenAI) or nothing at all (Anthropic text deltas).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from typing import Any

import orjson

_WORD_TEXT = """
    the of and to in is that for it as was with be by on not he this are or his from at which but have an they you
    were her she there been one all we their has would when if so no will can more about said into up out them then
    some could time these two may first see like only new other such very just any over now also after most make well
    back even where year way our down should because each those people how too much work good own many state life
    part here day system data world long use high used made still between under never last both while same school
    group number another great without small during company must large public place case since point little form
    right local order fact house service level power line might against full water often social money market today
    result end type model general based team value process quite better area field family open report best problem
    support control change rate test plan price
"""
WORDS: tuple[str, ...] = tuple(" " + w for w in _WORD_TEXT.split())
CYCLE_LEN = 4096
CYCLE: tuple[int, ...] = tuple(random.Random(0x5EED).choices(range(len(WORDS)), k=CYCLE_LEN))

_OA_TAIL = '"},"logprobs":null,"finish_reason":null}]}\n\n'
_OA_CONTENT = b',"choices":[{"index":0,"delta":{"content":'
_OA_ARGUMENTS = b',"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":'
_OA_ARGUMENTS_TAIL = b'}}]},"logprobs":null,"finish_reason":null}]}\n\n'
_AN_HEAD = (
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"'
)
_AN_TAIL = '"}}\n\n'


def _doubled(per_word: list[bytes]) -> tuple[bytes, ...]:
    """Event bytes along the cycle, twice over, so any window up to CYCLE_LEN long is one contiguous slice."""
    return tuple(per_word[CYCLE[i % CYCLE_LEN]] for i in range(2 * CYCLE_LEN))


_OA_SUFFIX = _doubled([(w + _OA_TAIL).encode() for w in WORDS])
_AN_EVENT = _doubled([(_AN_HEAD + w + _AN_TAIL).encode() for w in WORDS])
MAX_BATCH = CYCLE_LEN  # events per slice; the server batches far fewer


def content_hash(content_key: bytes) -> int:
    return zlib.crc32(content_key)


def offset_of(content_hash: int, seed: int = 0, variant: int = 0) -> int:
    """Where in the cycle a request's text starts; a nondeterministic variant shifts it."""
    return (content_hash + seed + variant) % CYCLE_LEN


def text_offset(content_key: bytes, seed: int = 0) -> int:
    """Where in the cycle a request's text starts: same prompt (and seed) -> same text."""
    return offset_of(content_hash(content_key), seed)


def words(offset: int, n: int) -> list[str]:
    return [WORDS[CYCLE[(offset + i) % CYCLE_LEN]] for i in range(n)]


def text(offset: int, n: int) -> str:
    """The exact output text of a request with this offset and n output tokens."""
    return "".join(words(offset, n))


def _dumps(obj: Any) -> bytes:
    return orjson.dumps(obj)


def _sse(obj: Any) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _named(event: str, obj: Any) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n"


class Stream:
    """Per-request renderer. `events(a, b)` renders output events a..b-1 as one bytes object.

    `pieces` replaces the word cycle with fixed output tokens (a structured JSON answer); `quote` puts text in front
    of the first event's (a long-document canary's code)."""

    __slots__ = ("_custom", "_cycle", "_first", "_prefix", "k", "n", "offset", "pieces")

    def __init__(self, offset: int, n_tokens: int, k: int, pieces: tuple[str, ...] | None = None) -> None:
        self.offset = offset
        self.n = n_tokens
        self.k = k
        self.pieces = pieces
        self._prefix = b""
        self._cycle: tuple[bytes, ...] = ()
        self._custom: list[bytes] | None = None
        self._first: bytes | None = None

    def quote(self, lead: str) -> None:
        """Begin the answer with `lead`: the first output event carries it before its words (its tokens stay)."""
        if self.n > 0:
            self._first = self._text_event(lead + self._event_words(0))

    def _text_event(self, text: str) -> bytes:
        """One whole output event carrying `text`."""
        raise NotImplementedError

    def _event_words(self, index: int) -> str:
        a = index * self.k
        if self.pieces is not None:
            return "".join(self.pieces[a : min(a + self.k, self.n)])
        return "".join(words(self.offset + a, min(self.k, self.n - a)))

    def events(self, a: int, b: int) -> bytes:
        if a >= b:
            return b""
        if a == 0 and self._first is not None:
            return self._first + self.events(1, b)
        parts: Sequence[bytes]
        if self._custom is not None:
            parts = self._custom[a:b]
        else:
            start = (self.offset + a) % CYCLE_LEN
            parts = self._cycle[start : start + (b - a)] if b - a <= CYCLE_LEN else self._slow(a, b)
        p = self._prefix
        return p + p.join(parts) if p else b"".join(parts)

    def _slow(self, a: int, b: int) -> list[bytes]:
        return [self._cycle[(self.offset + i) % CYCLE_LEN] for i in range(a, b)]

    def head(self) -> bytes:
        """Events before the first output: role chunk, or message_start/content_block_start/ping."""
        raise NotImplementedError

    def tail(self, finish_reason: str, completion_tokens: int, terminal: bool = True) -> bytes:
        """Events after the last output: finish/usage/[DONE], or content_block_stop/message_delta/message_stop."""
        raise NotImplementedError

    def malformed(self) -> bytes:
        raise NotImplementedError

    def error_event(self) -> bytes:
        raise NotImplementedError


def _usage_openai(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


class OpenAIStream(Stream):
    """OpenAI Chat Completions chunks. Usage: "separate" sends a usage-only chunk when the request asked for
    include_usage (OpenAI's behaviour); "finish" puts usage on the finish chunk always (as some compatible
    servers do); "none" never sends it. With a forced function (`tool`), the answer's pieces stream as that
    function call's arguments, and the finish reason is `tool_calls`."""

    __slots__ = ("_base", "cached_tokens", "include_usage", "prompt_tokens", "tool", "usage_mode")

    def __init__(
        self,
        rid: str,
        model: str,
        created: int,
        offset: int,
        n_tokens: int,
        k: int,
        prompt_tokens: int,
        include_usage: bool,
        usage_mode: str,
        pieces: tuple[str, ...] | None = None,
        tool: str | None = None,
    ) -> None:
        super().__init__(offset, n_tokens, k, pieces)
        self._base = {"id": "chatcmpl-" + rid, "object": "chat.completion.chunk", "created": created, "model": model}
        self._prefix = b"data: " + _dumps(self._base)[:-1] + _OA_CONTENT
        self.prompt_tokens = prompt_tokens
        self.cached_tokens = 0  # part of the prompt found in the prefix cache (the batching engine)
        self.include_usage = include_usage
        self.usage_mode = usage_mode
        self.tool = tool
        if tool is not None:
            self._function_call(rid, tool)
        elif k == 1 and pieces is None:
            self._prefix += b'"'
            self._cycle = _OA_SUFFIX
        else:
            tail = _OA_TAIL.encode()
            n_events = -(-n_tokens // k)
            self._custom = [_dumps(self._event_words(i))[:-1] + tail for i in range(n_events)]

    def _function_call(self, rid: str, tool: str) -> None:
        """Argument deltas; the first also names the call (its id, type and function name), as OpenAI's does."""
        self._prefix = b"data: " + _dumps(self._base)[:-1] + _OA_ARGUMENTS
        n_events = -(-self.n // self.k)
        self._custom = [_dumps(self._event_words(i)) + _OA_ARGUMENTS_TAIL for i in range(n_events)]
        if n_events:
            function = {"name": tool, "arguments": self._event_words(0)}
            call = {"index": 0, "id": "call_" + rid, "type": "function", "function": function}
            self._first = self._chunk(
                [{"index": 0, "delta": {"tool_calls": [call]}, "logprobs": None, "finish_reason": None}]
            )

    def _text_event(self, text: str) -> bytes:
        return b"data: " + _dumps(self._base)[:-1] + _OA_CONTENT + _dumps(text)[:-1] + _OA_TAIL.encode()

    def _chunk(self, choices: list[dict[str, Any]], **extra: Any) -> bytes:
        return _sse({**self._base, "choices": choices, **extra})

    def head(self) -> bytes:
        return self._chunk(
            [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}]
        )

    def tail(self, finish_reason: str, completion_tokens: int, terminal: bool = True) -> bytes:
        if self.tool is not None and finish_reason == "stop":
            finish_reason = "tool_calls"
        finish = [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish_reason}]
        usage = _usage_openai(self.prompt_tokens, completion_tokens, self.cached_tokens)
        if self.usage_mode == "finish":
            out = self._chunk(finish, usage=usage)
        else:
            out = self._chunk(finish)
            if self.usage_mode == "separate" and self.include_usage:
                out += self._chunk([], usage=usage)
        return out + b"data: [DONE]\n\n" if terminal else out

    def malformed(self) -> bytes:
        """One event whose data is cut mid-JSON."""
        return b"data: " + _dumps(self._base)[:-1] + b',"choices":[{"index":0,"delta":{"content":\n\n'

    def error_event(self) -> bytes:
        err = {"message": "The server is overloaded, please try again later.", "type": "server_error"}
        return _sse({"error": {**err, "code": "overloaded"}})


class AnthropicStream(Stream):
    """Anthropic Messages events; with a forced tool, a tool_use block whose input_json_delta pieces spell
    `{"text": "<the words>"}`, or the structured answer given as `pieces`."""

    __slots__ = ("_message", "prompt_tokens", "tool")

    def __init__(
        self,
        rid: str,
        model: str,
        offset: int,
        n_tokens: int,
        k: int,
        prompt_tokens: int,
        tool: str | None,
        pieces: tuple[str, ...] | None = None,
    ) -> None:
        super().__init__(offset, n_tokens, k, pieces)
        self.prompt_tokens = prompt_tokens
        self.tool = tool
        self._message: dict[str, Any] = {
            "id": "msg_" + rid,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": prompt_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 1,
            },
        }
        if tool is not None:
            n_events = -(-n_tokens // k)
            self._custom = [self._tool_event(i, n_events) for i in range(n_events)]
        elif k == 1 and pieces is None:
            self._cycle = _AN_EVENT
        else:
            n_events = -(-n_tokens // k)
            self._custom = [self._text_event(self._event_words(i)) for i in range(n_events)]

    def set_cached(self, cached: int) -> None:
        """Part of the prompt read from the prefix cache: Anthropic's input_tokens leaves it out."""
        usage = self._message["usage"]
        usage["input_tokens"] = self.prompt_tokens - cached
        usage["cache_read_input_tokens"] = cached

    def _text_event(self, text: str) -> bytes:
        return _AN_HEAD.encode() + _dumps(text)[1:-1] + _AN_TAIL.encode()

    def _tool_event(self, index: int, n_events: int) -> bytes:
        if self.pieces is not None:
            piece = self._event_words(index)
        else:
            head = '{"text": "' if index == 0 else ""
            piece = head + self._event_words(index) + ('"}' if index == n_events - 1 else "")
        delta = {"type": "input_json_delta", "partial_json": piece}
        return _named("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})

    def _block(self) -> dict[str, Any]:
        if self.tool is not None:
            return {"type": "tool_use", "id": "toolu_" + self._message["id"][4:], "name": self.tool, "input": {}}
        return {"type": "text", "text": ""}

    def head(self) -> bytes:
        return (
            _named("message_start", {"type": "message_start", "message": self._message})
            + _named("content_block_start", {"type": "content_block_start", "index": 0, "content_block": self._block()})
            + _named("ping", {"type": "ping"})
        )

    def stop_reason(self, finish_reason: str) -> str:
        if finish_reason == "length":
            return "max_tokens"
        return "tool_use" if self.tool is not None else "end_turn"

    def tail(self, finish_reason: str, completion_tokens: int, terminal: bool = True) -> bytes:
        delta = {"stop_reason": self.stop_reason(finish_reason), "stop_sequence": None}
        out = _named("content_block_stop", {"type": "content_block_stop", "index": 0}) + _named(
            "message_delta", {"type": "message_delta", "delta": delta, "usage": {"output_tokens": completion_tokens}}
        )
        return out + _named("message_stop", {"type": "message_stop"}) if terminal else out

    def malformed(self) -> bytes:
        return (
            b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_del\n\n'
        )

    def error_event(self) -> bytes:
        return _named("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})


def openai_body(
    rid: str,
    model: str,
    created: int,
    content: str,
    finish_reason: str,
    prompt: int,
    completion: int,
    usage: bool,
    tool: str | None = None,
    cached: int = 0,
) -> bytes:
    """Non-streamed chat.completion; with a forced function (`tool`), `content` is the call's arguments."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None, "annotations": []}
    if tool is not None:
        function = {"name": tool, "arguments": content}
        message.update(content=None, tool_calls=[{"id": "call_" + rid, "type": "function", "function": function}])
        finish_reason = "tool_calls" if finish_reason == "stop" else finish_reason
    body: dict[str, Any] = {
        "id": "chatcmpl-" + rid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
    }
    if usage:
        body["usage"] = _usage_openai(prompt, completion, cached)
    body["service_tier"] = "default"
    return _dumps(body)


def anthropic_body(
    rid: str,
    model: str,
    content: str,
    stop_reason: str,
    tool: str | None,
    prompt: int,
    completion: int,
    tool_input: Any = None,
    cached: int = 0,
) -> bytes:
    """Non-streamed message. A forced tool's input is `tool_input` (a structured answer) or `{"text": content}`."""
    block: dict[str, Any]
    if tool is not None:
        value = {"text": content} if tool_input is None else tool_input
        block = {"type": "tool_use", "id": "toolu_" + rid, "name": tool, "input": value}
    else:
        block = {"type": "text", "text": content}
    usage = {
        "input_tokens": prompt - cached,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
        "output_tokens": completion,
    }
    return _dumps(
        {
            "id": "msg_" + rid,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }
    )


def openai_error(message: str, type_: str, code: str | None = None, param: str | None = None) -> bytes:
    return _dumps({"error": {"message": message, "type": type_, "param": param, "code": code}})


def anthropic_error(type_: str, message: str, request_id: str | None = None) -> bytes:
    body: dict[str, Any] = {"type": "error", "error": {"type": type_, "message": message}}
    if request_id:
        body["request_id"] = request_id
    return _dumps(body)


def context_error(api: str, limit: int, prompt: int) -> bytes:
    """The provider's real context-length error body (HTTP 400)."""
    if api == "anthropic":
        return anthropic_error("invalid_request_error", f"prompt is too long: {prompt} tokens > {limit} maximum")
    return openai_error(
        f"This model's maximum context length is {limit} tokens. However, your messages resulted in {prompt} tokens. "
        "Please reduce the length of the messages.",
        "invalid_request_error",
        code="context_length_exceeded",
        param="messages",
    )


_STATUS_ERRORS = {
    ("openai", 429): ("Rate limit reached for requests. Please try again in {s}s.", "requests", "rate_limit_exceeded"),
    ("openai", 500): ("The server had an error while processing your request. Sorry about that!", "server_error", None),
    ("openai", 503): ("The server is overloaded or not ready yet.", "server_error", "service_unavailable"),
    ("openai", 529): ("The server is overloaded, please try again later.", "server_error", "overloaded"),
    ("anthropic", 429): (
        "Number of requests has exceeded your rate limit. Please try again in {s}s.",
        "rate_limit_error",
        None,
    ),
    ("anthropic", 500): ("Internal server error", "api_error", None),
    ("anthropic", 503): ("Service unavailable", "api_error", None),
    ("anthropic", 529): ("Overloaded", "overloaded_error", None),
}


def status_error(api: str, status: int, retry_after_s: float = 1.0) -> bytes:
    """Error body of an injected 429 / 500 / 503 / 529 in the provider's shape."""
    message, type_, code = _STATUS_ERRORS[(api, status)]
    message = message.format(s=f"{retry_after_s:g}")
    if api == "anthropic":
        return anthropic_error(type_, message)
    return openai_error(message, type_, code=code)


def bad_request(api: str, message: str) -> bytes:
    if api == "anthropic":
        return anthropic_error("invalid_request_error", message)
    return openai_error(message, "invalid_request_error")
