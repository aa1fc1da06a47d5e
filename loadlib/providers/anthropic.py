"""Anthropic Messages adapter: POST {base}/v1/messages and its named-event stream.

The stream is message_start (id, model, provisional usage) -> content blocks (text, thinking, tool_use) ->
message_delta (stop_reason, cumulative usage: final values win) -> message_stop. `ping` and unknown event types are
tolerated; an `error` event inside the HTTP 200 stream (overloaded_error...) is a provider error.

Usage: `input_tokens` excludes the cache reads and writes, which are counted beside it; the whole prompt is their sum
(providers.usage). Each count is the last one sent, whichever event sent it: Anthropic sends input_tokens and the
cache counts in message_start and output_tokens in message_delta (which may repeat the others, cumulative); vLLM's
/v1/messages sends the whole prompt as message_start's input_tokens, then in message_delta the uncached part as
input_tokens beside its cache counts. Both give input + cache read + cache write = the whole prompt.

message_start's `output_tokens` is provisional (Anthropic sends 1, vLLM 0): the output count is the server's only once
a message_delta arrived. A stream that ended before one (broken, cut off, an error event) keeps message_start's prompt
counts, which are final there, and leaves the completion to our estimate (usage_source `stream_start`).
"""

from __future__ import annotations

from typing import Any

import orjson

from loadlib.errors import MalformedEventError, UnsupportedAPIError
from loadlib.providers import errors_body, fields, jsonread
from loadlib.providers.base import (
    ERROR,
    OUTPUT,
    TERMINAL,
    USAGE_BODY,
    USAGE_STREAM,
    USAGE_STREAM_START,
    VISIBLE,
    ChatRequest,
    HttpRequest,
    ProviderError,
    StreamResult,
    ToolCall,
)
from loadlib.providers.http import join_path, json_body_mended, post_json
from loadlib.providers.kept import DEFAULT_MAX_TEXT, Budget, Kept
from loadlib.providers.usage import ANTHROPIC_KEYS, anthropic_usage

ANTHROPIC_VERSION = "2023-06-01"
_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError
_SHOWN = OUTPUT | VISIBLE
_TOOL_BLOCKS = frozenset({"tool_use", "server_tool_use"})


class _Tool:
    __slots__ = ("args", "id", "name")

    def __init__(self, tid: str | None, name: str | None, budget: Budget) -> None:
        self.id = tid
        self.name = name
        self.args = Kept(budget)


def _merge_usage(into: dict[str, Any], raw: Any, where: str) -> None:
    """Later non-null counts replace earlier ones, each on its own (message_delta's usage is cumulative)."""
    for key in ANTHROPIC_KEYS:
        value = (fields.mapping(raw, where) or {}).get(key)
        if value is not None:
            into[key] = value


class AnthropicParser:
    """One streamed Messages response. `feed` only appends fragments; `result` joins them."""

    __slots__ = (
        "_budget",
        "_error",
        "_final",
        "_finish",
        "_id",
        "_mended",
        "_model",
        "_outputs",
        "_reasoning",
        "_started",
        "_terminal",
        "_text",
        "_tools",
        "_usage",
    )

    def __init__(self, max_text: int = DEFAULT_MAX_TEXT) -> None:
        self._budget = Budget(max_text)
        self._text = Kept(self._budget)
        self._reasoning = Kept(self._budget)
        self._tools: dict[int, _Tool] = {}
        self._usage: dict[str, Any] = {}
        self._finish: str | None = None
        self._final = False  # a message_delta arrived: its usage is the final one
        self._error: ProviderError | None = None
        self._id: str | None = None
        self._model: str | None = None
        self._outputs = 0
        self._started = False
        self._terminal = False
        self._mended = 0

    def feed(self, event: bytes, data: bytes) -> int:
        try:
            obj = _loads(data)
        except _JSONDecodeError:
            if data == b"[DONE]" and self._started:
                return 0  # a proxy's OpenAI-style sentinel after a Messages stream: nothing to read
            if event == b"error":
                return self._record_error(data.decode("utf-8", "replace"))
            obj, mended = jsonread.reread(data, "messages event")  # a lone surrogate, or why it is not JSON
            self._mended += mended
        if type(obj) is not dict:
            raise MalformedEventError("messages event is not a JSON object")
        etype = obj.get("type") or event.decode("ascii", "replace")
        handler = self._HANDLERS.get(etype) if type(etype) is str else None
        if handler is not None:
            return handler(self, obj)
        foreign = errors_body.foreign_api(obj)
        if foreign and foreign is not errors_body.ANTHROPIC_MESSAGES:  # our own shape in the wrong place is tolerated
            raise UnsupportedAPIError(foreign)
        if not etype:
            raise MalformedEventError("messages event without a type")
        return 0  # unknown event types are tolerated, as Anthropic asks of clients

    def _delta(self, obj: dict[str, Any]) -> int:
        delta = obj.get("delta")
        if type(delta) is not dict:
            raise fields.wrong("content_block_delta.delta", delta, "object")
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            if text:
                self._text.append(_text(text, "text_delta.text"))
                self._outputs += 1
                return _SHOWN
        elif kind == "input_json_delta":
            partial = delta.get("partial_json")
            if partial:
                index = fields.index(obj.get("index"), "content_block_delta.index")
                tool = self._tools.get(index)
                if tool is None:
                    tool = self._tools[index] = _Tool(None, None, self._budget)
                tool.args.append(_text(partial, "input_json_delta.partial_json"))
                self._outputs += 1
                return _SHOWN
        elif kind == "thinking_delta":
            thinking = delta.get("thinking")
            if thinking:
                self._reasoning.append(_text(thinking, "thinking_delta.thinking"))
                self._outputs += 1
                return OUTPUT
        return 0  # signature_delta, citations_delta and empty fragments carry no output

    def _message_start(self, obj: dict[str, Any]) -> int:
        self._started = True
        message = fields.mapping(obj.get("message"), "message_start.message") or {}
        self._id = fields.identifier(message.get("id")) or self._id
        self._model = fields.identifier(message.get("model")) or self._model
        _merge_usage(self._usage, message.get("usage"), "message_start.message.usage")
        return 0

    def _message_delta(self, obj: dict[str, Any]) -> int:
        delta = fields.mapping(obj.get("delta"), "message_delta.delta") or {}
        stop = delta.get("stop_reason")
        if stop:
            self._finish = _text(stop, "message_delta.delta.stop_reason")
        _merge_usage(self._usage, obj.get("usage"), "message_delta.usage")
        self._final = True  # after the merge: a usage that could not be read is not the final one
        return 0

    def _message_stop(self, obj: dict[str, Any]) -> int:
        self._terminal = True
        return TERMINAL

    def _block_start(self, obj: dict[str, Any]) -> int:
        block = fields.mapping(obj.get("content_block"), "content_block_start.content_block") or {}
        kind = fields.text(block.get("type"), "content_block_start.content_block.type")
        if kind in _TOOL_BLOCKS:
            index = fields.index(obj.get("index"), "content_block_start.index")
            tool = _Tool(fields.identifier(block.get("id")), fields.identifier(block.get("name")), self._budget)
            self._tools[index] = tool
        elif kind == "text" and block.get("text"):  # always "" in practice; never drop text if it comes
            self._text.append(_text(block["text"], "content_block.text"))
            self._outputs += 1
            return _SHOWN
        elif kind == "thinking" and block.get("thinking"):
            self._reasoning.append(_text(block["thinking"], "content_block.thinking"))
            self._outputs += 1
            return OUTPUT
        return 0

    def _nothing(self, obj: dict[str, Any]) -> int:
        return 0

    def _record_error(self, obj: Any) -> int:
        if self._error is None:
            self._error = errors_body.stream_error(obj)
        return ERROR

    _HANDLERS: dict[str, Any] = {
        "content_block_delta": _delta,
        "message_start": _message_start,
        "content_block_start": _block_start,
        "message_delta": _message_delta,
        "message_stop": _message_stop,
        "error": _record_error,
        "content_block_stop": _nothing,
        "ping": _nothing,
    }

    def result(self) -> StreamResult:
        tools = [
            ToolCall(index=index, id=tool.id, name=tool.name, arguments=tool.args.value())
            for index, tool in sorted(self._tools.items())
        ]
        text = self._text.value()
        usage = self._usage if self._final else {k: v for k, v in self._usage.items() if k != "output_tokens"}
        return StreamResult(
            text_by_choice={0: text} if text else {},
            reasoning=self._reasoning.value(),
            tool_calls=tools,
            usage=anthropic_usage(usage) if usage else None,
            usage_source=(USAGE_STREAM if self._final else USAGE_STREAM_START) if usage else None,
            finish_reason=self._finish,
            finish_by_choice={0: self._finish} if self._finish else {},
            error=self._error,
            response_id=self._id,
            model=self._model,
            output_events=self._outputs,
            terminal=self._terminal,
            text_dropped=self._budget.dropped,
            mended=self._mended,
        )


def _text(value: Any, where: str) -> str:
    """A non-empty text fragment, or MalformedEventError naming the field."""
    if type(value) is str:
        return value
    raise fields.wrong(where, value, "string")


def _system_text(content: Any) -> str:
    """A system message's text, from a string or a list of text parts (OpenAI or Anthropic shape)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict) and p.get("type", "text") == "text")
    return ""


class AnthropicAdapter:
    """Builds POST {base}/v1/messages (the base URL has no /v1, as in the SDK) and reads its stream or body."""

    name = "anthropic"
    summary = "Messages"
    key_env = "ANTHROPIC_API_KEY"
    root_path = ""  # the SDK's base URL has no /v1: build() adds /v1/messages

    def build(self, base_path: str, model: str, api_key: str | None, req: ChatRequest) -> HttpRequest:
        system: list[str] = []
        messages: list[dict[str, Any]] = []
        for message in req.messages:
            if message.get("role") in ("system", "developer"):
                system.append(_system_text(message.get("content")))
            else:
                messages.append(message)
        body: dict[str, Any] = {"model": model, "max_tokens": req.max_tokens, "messages": messages}
        if system:
            body["system"] = "\n\n".join(system)
        body["stream"] = req.stream
        if req.temperature is not None:
            body["temperature"] = req.temperature
        if req.json_schema is not None:
            body["tools"] = [{"name": req.json_schema_name, "input_schema": req.json_schema}]
            body["tool_choice"] = {"type": "tool", "name": req.json_schema_name}
        headers = {
            "anthropic-version": ANTHROPIC_VERSION,
            "content-type": "application/json",
            "accept": "text/event-stream" if req.stream else "application/json",
            "accept-encoding": "identity",
        }
        if api_key:
            headers["x-api-key"] = api_key
        base = base_path.strip().rstrip("/")
        path = join_path(base, "/messages" if base.endswith("/v1") else "/v1/messages")
        return post_json(path, body, headers, req)

    def new_parser(self, max_text: int = DEFAULT_MAX_TEXT) -> AnthropicParser:
        return AnthropicParser(max_text)

    def parse_response(self, body: bytes) -> StreamResult:
        obj, mended = json_body_mended(body, "messages body")
        if obj.get("type") == "error":
            return StreamResult(error=errors_body.stream_error(obj), terminal=True)
        if obj.get("type") == "message" and type(obj.get("content")) is not list:
            raise fields.wrong("content", obj.get("content"), "array")
        if obj.get("type") != "message":
            foreign = errors_body.foreign_api(obj)
            if foreign is None or foreign is errors_body.ANTHROPIC_MESSAGES:  # one of our stream's events as a body
                raise MalformedEventError(f"messages body of type {str(obj.get('type'))[:40]!r}, not 'message'")
            raise UnsupportedAPIError(foreign)
        text: list[str] = []
        reasoning: list[str] = []
        tools: list[ToolCall] = []
        for index, block in enumerate(obj["content"]):
            kind = fields.text(block.get("type"), "content[].type") if isinstance(block, dict) else None
            if kind == "text":
                text.append(fields.text(block.get("text"), "content[].text") or "")
            elif kind == "thinking":
                reasoning.append(fields.text(block.get("thinking"), "content[].thinking") or "")
            elif kind in _TOOL_BLOCKS:
                args = orjson.dumps(block.get("input") or {}).decode()
                tid, name = fields.identifier(block.get("id")), fields.identifier(block.get("name"))
                tools.append(ToolCall(index=index, id=tid, name=name, arguments=args))
        usage: dict[str, Any] = {}
        _merge_usage(usage, obj.get("usage"), "usage")
        joined = "".join(text)
        stop = fields.text(obj.get("stop_reason"), "stop_reason")
        return StreamResult(
            text_by_choice={0: joined} if joined else {},
            reasoning="".join(reasoning),
            tool_calls=tools,
            usage=anthropic_usage(usage) if usage else None,
            usage_source=USAGE_BODY if usage else None,
            finish_reason=stop,
            finish_by_choice={0: stop} if stop else {},
            response_id=fields.identifier(obj.get("id")),
            model=fields.identifier(obj.get("model")),
            output_events=1 if (joined or tools or reasoning) else 0,
            terminal=True,
            mended=mended,
        )

    def classify_error(self, status: int, body: bytes) -> ProviderError:
        """429 rate_limited; 529 overloaded and other 5xx http_5xx; "prompt is too long" context_length_exceeded."""
        return errors_body.classify(status, body)
