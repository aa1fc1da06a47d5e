"""OpenAI Chat Completions adapter, and with it every server that speaks that dialect.

vLLM, TGI's Messages API, Ollama's /v1, Azure, Groq, DeepSeek, Mistral, Together, Fireworks, Cerebras, OpenRouter,
SambaNova, NIM, llama.cpp and Z.ai differ only in where they put usage, errors and reasoning; the parser reads all of
those places. Streams of other APIs (Responses, Assistants, Gemini native, TGI native, Anthropic) are refused with
UnsupportedAPIError rather than parsed wrong. Legacy Completions (`choices[].text`) are read as text.
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
    USAGE_FINAL_CHUNK,
    USAGE_STREAM,
    VISIBLE,
    ChatRequest,
    HttpRequest,
    ProviderError,
    StreamResult,
    ToolCall,
)
from loadlib.providers.http import join_path, json_body_mended, post_json
from loadlib.providers.kept import DEFAULT_MAX_TEXT, Budget, Kept
from loadlib.providers.usage import openai_usage

_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError
_SHOWN = OUTPUT | VISIBLE
_ANTHROPIC_EVENTS = frozenset(
    {
        b"message_start",
        b"content_block_start",
        b"content_block_delta",
        b"content_block_stop",
        b"message_delta",
        b"message_stop",
    }
)


class _Tool:
    __slots__ = ("args", "id", "name")

    def __init__(self, budget: Budget) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.args = Kept(budget)


def _usage_source(choices: Any, flags: int) -> str:
    """`final_chunk` if usage shares its chunk with output or a finish reason, else its own (LiteLLM's empty delta)."""
    return USAGE_FINAL_CHUNK if flags & OUTPUT or any(c.get("finish_reason") for c in choices or ()) else USAGE_STREAM


class OpenAIChatParser:
    """One streamed Chat Completions response. `feed` only appends fragments; `result` joins them.

    Every field read is type-checked (loadlib.providers.fields): only strings are kept as text, only integers as
    indexes, so `result` cannot fail whatever JSON the server sent."""

    __slots__ = (
        "_budget",
        "_error",
        "_finish",
        "_id",
        "_last_tool",
        "_mended",
        "_model",
        "_outputs",
        "_reasoning",
        "_refusal",
        "_terminal",
        "_text",
        "_tools",
        "_usage",
        "_usage_source",
        "_usage_where",
    )

    def __init__(self, max_text: int = DEFAULT_MAX_TEXT) -> None:
        self._budget = Budget(max_text)
        self._text: dict[int, Kept] = {}
        self._reasoning: dict[int, Kept] = {}
        self._refusal: dict[int, Kept] = {}
        self._tools: dict[tuple[int, int], _Tool] = {}
        self._last_tool: dict[int, int] = {}
        self._finish: dict[int, str] = {}
        self._usage: dict[str, Any] | None = None
        self._usage_where = "usage"
        self._usage_source = USAGE_STREAM
        self._error: ProviderError | None = None
        self._id: str | None = None
        self._model: str | None = None
        self._outputs = 0
        self._terminal = False
        self._mended = 0

    def feed(self, event: bytes, data: bytes) -> int:
        if data == b"[DONE]":
            self._terminal = True
            return TERMINAL
        if event and event != b"message":
            if event == b"error":
                return self._error_event(data)
            if event == b"ping":
                return 0
            _refuse_named(event)
        try:
            obj = _loads(data)
        except _JSONDecodeError:
            obj, mended = jsonread.reread(data, "chat completion event")  # a lone surrogate, or why it is not JSON
            self._mended += mended
        if type(obj) is not dict:
            raise MalformedEventError("chat completion event is not a JSON object")
        if self._id is None or self._model is None:
            self._identify(obj)
        get = obj.get
        choices = get("choices")
        flags = 0
        if choices:
            if type(choices) is not list:
                raise fields.wrong("choices", choices, "array")
            for ch in choices:
                flags |= self._choice(ch)
        elif choices is None:
            flags = self._without_choices(obj)
        usage = get("usage")
        if usage:
            self._keep_usage(usage, "usage", _usage_source(choices, flags))
        x_groq = get("x_groq")
        if x_groq:
            groq_usage = (fields.mapping(x_groq, "x_groq") or {}).get("usage")
            if groq_usage:
                self._keep_usage(groq_usage, "x_groq.usage", _usage_source(choices, flags))
        if get("error") is not None:
            flags |= self._record_error(obj)
        if flags & OUTPUT:
            self._outputs += 1
        return flags

    def _choice(self, ch: Any) -> int:
        """One entry of `choices`: its delta (or legacy text) and finish reason."""
        if type(ch) is not dict:
            raise fields.wrong("choices[]", ch, "object")
        idx = ch.get("index")
        if type(idx) is not int or idx < 0:
            idx = fields.index(idx, "choices[].index")
        delta = ch.get("delta")
        if not delta:
            flags = self._legacy_text(idx, ch.get("text"))
        elif type(delta) is not dict:
            raise fields.wrong(f"choices[{idx}].delta", delta, "object")
        else:
            flags = self._delta(idx, delta, ch)
        finish = ch.get("finish_reason")
        if finish:
            self._finish[idx] = fields.text(finish, f"choices[{idx}].finish_reason") or ""
        return flags

    def _delta(self, idx: int, delta: dict[str, Any], ch: dict[str, Any]) -> int:
        flags = 0
        content = delta.get("content")
        if content:
            if type(content) is str:
                kept = self._text.get(idx)
                if kept is None:
                    kept = self._text[idx] = Kept(self._budget)
                kept.append(content)  # _append inline: once per output event
                flags = _SHOWN
            elif type(content) is list:
                flags = self._content_parts(idx, content)
            else:
                raise fields.wrong(f"choices[{idx}].delta.content", content, "string")
        elif content is None and "content" not in delta:
            flags = self._legacy_text(idx, ch.get("text"))
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if reasoning:
            self._append(self._reasoning, idx, _text(reasoning, idx, "reasoning_content"))
            flags |= OUTPUT
        refusal = delta.get("refusal")
        if refusal:
            self._append(self._refusal, idx, _text(refusal, idx, "refusal"))
            flags |= _SHOWN
        tool_calls = delta.get("tool_calls")
        if tool_calls:
            flags |= self._tool_calls(idx, fields.array(tool_calls, f"choices[{idx}].delta.tool_calls") or [])
        return flags

    def _keep_usage(self, usage: Any, where: str, source: str) -> None:
        self._usage = fields.mapping(usage, where)
        self._usage_where = where
        self._usage_source = source

    def _identify(self, obj: dict[str, Any]) -> None:
        if self._id is None:
            self._id = fields.identifier(obj.get("id"))
        if self._model is None:
            self._model = fields.identifier(obj.get("model"))

    def _append(self, store: dict[int, Kept], idx: int, fragment: str) -> None:
        kept = store.get(idx)
        if kept is None:
            kept = store[idx] = Kept(self._budget)
        kept.append(fragment)

    def _legacy_text(self, idx: int, text: Any) -> int:
        """Legacy Completions put text in choices[].text; read only when the chunk has no delta.content."""
        if text:
            self._append(self._text, idx, _text(text, idx, "text", "choices[{}].{}"))
            return _SHOWN
        return 0

    def _content_parts(self, idx: int, parts: list[Any]) -> int:
        """Content as a list of parts (Mistral's reasoning models): text parts are text, thinking parts reasoning."""
        flags = 0
        for part in parts:
            text: str | None
            kind: Any
            if isinstance(part, str):
                text, kind = part, "text"
            elif isinstance(part, dict):
                kind = part.get("type")
                text = _part_text(part, kind)
            else:
                continue
            if text:
                if kind == "thinking":
                    self._append(self._reasoning, idx, text)
                    flags |= OUTPUT
                else:
                    self._append(self._text, idx, text)
                    flags |= _SHOWN
        return flags

    def _tool_calls(self, idx: int, tool_calls: list[Any]) -> int:
        flags = 0
        for tc in tool_calls:
            if type(tc) is not dict:
                raise fields.wrong(f"choices[{idx}].delta.tool_calls[]", tc, "object")
            call = self._tool(idx, tc)
            fn = fields.mapping(tc.get("function"), "tool_calls[].function") or {}
            name = fn.get("name")
            if name:
                call.name = fields.identifier(name)
                flags = _SHOWN
            args = fn.get("arguments")
            if args:
                call.args.append(args if type(args) is str else orjson.dumps(args).decode())
                flags = _SHOWN
        return flags

    def _tool(self, idx: int, tc: dict[str, Any]) -> _Tool:
        """The call a tool-call delta continues; some servers omit the index, then a new id starts a new call."""
        tid = fields.identifier(tc.get("id"))
        given = tc.get("index")
        ti: int
        if given is None:
            last = self._last_tool.get(idx)
            same = last is not None and (not tid or self._tools[(idx, last)].id == tid)
            ti = last if last is not None and same else sum(1 for c, _ in self._tools if c == idx)
        else:
            ti = fields.index(given, "tool_calls[].index")
        self._last_tool[idx] = ti
        call = self._tools.get((idx, ti))
        if call is None:
            call = self._tools[(idx, ti)] = _Tool(self._budget)
        if tid:
            call.id = tid
        return call

    def _without_choices(self, obj: dict[str, Any]) -> int:
        """A chunk with no (or null) `choices`: usage-only or error chunks are fine; another API's event is refused."""
        foreign = errors_body.foreign_api(obj)
        if foreign and foreign is not errors_body.OPENAI_CHAT:
            raise UnsupportedAPIError(foreign)
        if obj.get("usage") or obj.get("x_groq") or obj.get("error") is not None:
            return 0
        if obj.get("object") == "error":  # vLLM's ErrorResponse envelope
            return self._record_error(obj)
        if obj.get("type") == "ping":
            return 0
        raise MalformedEventError("chat completion chunk without 'choices'")

    def _record_error(self, obj: Any) -> int:
        if self._error is None:
            self._error = errors_body.stream_error(obj)
        return ERROR

    def _error_event(self, data: bytes) -> int:
        """Groq (and others) send a named `error` event inside an HTTP 200 stream."""
        try:
            obj = _loads(data)
        except _JSONDecodeError:
            obj = data.decode("utf-8", "replace")
        return self._record_error(obj)

    def result(self) -> StreamResult:
        tools = [
            ToolCall(index=ti, id=call.id, name=call.name, arguments=call.args.value())
            for (_, ti), call in sorted(self._tools.items())
        ]
        return StreamResult(
            text_by_choice={i: kept.value() for i, kept in sorted(self._text.items())},
            reasoning=_value(self._reasoning.get(0)),
            refusal=_value(self._refusal.get(0)),
            tool_calls=tools,
            usage=openai_usage(self._usage, self._usage_where) if self._usage is not None else None,
            usage_source=self._usage_source if self._usage is not None else None,
            finish_reason=self._finish.get(0),
            finish_by_choice=dict(sorted(self._finish.items())),
            error=self._error,
            response_id=self._id,
            model=self._model,
            output_events=self._outputs,
            terminal=self._terminal,
            text_dropped=self._budget.dropped,
            mended=self._mended,
        )


def _value(kept: Kept | None) -> str:
    return kept.value() if kept is not None else ""


def _text(value: Any, idx: int, name: str, template: str = "choices[{}].delta.{}") -> str:
    """A non-empty text fragment of choice `idx`, or MalformedEventError naming the field."""
    if type(value) is str:
        return value
    raise fields.wrong(template.format(idx, name), value, "string")


def _part_text(part: dict[str, Any], kind: Any) -> str | None:
    """The text of one content part: `text` of a text part, the joined texts of a thinking part."""
    if kind == "text":
        return fields.text(part.get("text"), "content[].text")
    if kind != "thinking":
        return None
    inner = part.get("thinking")
    pieces = inner if isinstance(inner, list) else [{"text": inner}]
    return "".join(fields.text(p.get("text"), "content[].thinking[].text") or "" for p in pieces if isinstance(p, dict))


def _refuse_named(event: bytes) -> None:
    """Event names that belong to another API; unknown names are parsed as chat chunks."""
    if event.startswith(b"response."):
        raise UnsupportedAPIError(errors_body.RESPONSES)
    if event.startswith(b"thread.") or event == b"done":
        raise UnsupportedAPIError(errors_body.ASSISTANTS)
    if event in _ANTHROPIC_EVENTS:
        raise UnsupportedAPIError(errors_body.ANTHROPIC_MESSAGES)
    if event == b"completion":
        raise UnsupportedAPIError(errors_body.ANTHROPIC_LEGACY)


def _message_text(content: Any) -> str:
    if content is None or type(content) is str:
        return content or ""
    parts = fields.array(content, "choices[].message.content") or []
    return "".join(_part_text(p, p.get("type")) or "" for p in parts if isinstance(p, dict))


class OpenAIAdapter:
    """Builds POST {base}/chat/completions and reads its stream, JSON body or error body."""

    name = "openai"
    summary = "Chat Completions; also vLLM, TGI, Ollama /v1, Azure, Groq..."
    key_env = "OPENAI_API_KEY"
    root_path = "/v1"

    def build(self, base_path: str, model: str, api_key: str | None, req: ChatRequest) -> HttpRequest:
        body: dict[str, Any] = {
            "model": model,
            "messages": req.messages,
            "max_tokens": req.max_tokens,
            "stream": req.stream,
        }
        if req.stream and req.include_usage:
            body["stream_options"] = {"include_usage": True}
        if req.temperature is not None:
            body["temperature"] = req.temperature
        if req.json_schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": req.json_schema_name, "schema": req.json_schema, "strict": True},
            }
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if req.stream else "application/json",
            "Accept-Encoding": "identity",
        }
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        return post_json(join_path(base_path, "/chat/completions"), body, headers, req)

    def new_parser(self, max_text: int = DEFAULT_MAX_TEXT) -> OpenAIChatParser:
        return OpenAIChatParser(max_text)

    def parse_response(self, body: bytes) -> StreamResult:
        obj, mended = json_body_mended(body, "chat completion body")
        choices = obj.get("choices")
        if choices is not None:
            fields.array(choices, "choices")
        if not isinstance(choices, list):
            if obj.get("error") is not None or obj.get("object") == "error":
                return StreamResult(error=errors_body.stream_error(obj), terminal=True)
            foreign = errors_body.foreign_api(obj)
            if foreign is None or foreign is errors_body.OPENAI_CHAT:
                raise MalformedEventError("chat completion body without 'choices'")
            raise UnsupportedAPIError(foreign)
        result = StreamResult(terminal=True, mended=mended)
        for ch in choices:
            _read_choice(result, ch)
        usage = obj.get("usage")
        if usage:
            result.usage = openai_usage(fields.mapping(usage, "usage") or {})
            result.usage_source = USAGE_BODY
        result.finish_reason = result.finish_by_choice.get(0)
        result.response_id = fields.identifier(obj.get("id"))
        result.model = fields.identifier(obj.get("model"))
        if obj.get("error") is not None:
            result.error = errors_body.stream_error(obj)
        has_output = result.text_by_choice or result.tool_calls or result.refusal or result.reasoning
        result.output_events = 1 if has_output else 0
        return result

    def classify_error(self, status: int, body: bytes) -> ProviderError:
        return errors_body.classify(status, body)


def _read_choice(result: StreamResult, ch: Any) -> None:
    """One choice of a non-streaming response into `result` (choice 0 alone fills reasoning and refusal)."""
    if type(ch) is not dict:
        raise fields.wrong("choices[]", ch, "object")
    idx = fields.index(ch.get("index"), "choices[].index")
    message = fields.mapping(ch.get("message"), f"choices[{idx}].message") or {}
    text = _message_text(message.get("content")) or fields.text(ch.get("text"), f"choices[{idx}].text") or ""
    if text:
        result.text_by_choice[idx] = text
    if idx == 0:
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        result.reasoning = fields.text(reasoning or None, "choices[0].message.reasoning_content") or ""
        result.refusal = fields.text(message.get("refusal") or None, "choices[0].message.refusal") or ""
    calls = fields.array(message.get("tool_calls") or None, f"choices[{idx}].message.tool_calls") or []
    for i, tc in enumerate(calls):
        if type(tc) is not dict:
            raise fields.wrong(f"choices[{idx}].message.tool_calls[]", tc, "object")
        fn = fields.mapping(tc.get("function"), "tool_calls[].function") or {}
        args = fn.get("arguments")
        args = args if isinstance(args, str) else ("" if args is None else orjson.dumps(args).decode())
        name = fields.identifier(fn.get("name"))
        result.tool_calls.append(ToolCall(index=i, id=fields.identifier(tc.get("id")), name=name, arguments=args))
    finish = ch.get("finish_reason")
    if finish:
        result.finish_by_choice[idx] = fields.text(finish, f"choices[{idx}].finish_reason") or ""
