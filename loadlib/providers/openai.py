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
from loadlib.providers import errors_body
from loadlib.providers.base import (
    ERROR,
    OUTPUT,
    TERMINAL,
    VISIBLE,
    ChatRequest,
    HttpRequest,
    ProviderError,
    StreamResult,
    ToolCall,
    Usage,
)

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


def join_path(base_path: str, suffix: str) -> str:
    """`/v1` + `/chat/completions` without doubled or missing slashes; an empty base gives the bare suffix."""
    base = base_path.strip().rstrip("/")
    if base and not base.startswith("/"):
        base = "/" + base
    return base + suffix


def merge_body(body: dict[str, Any], extra: dict[str, Any]) -> None:
    """Shallow-merge `extra` last; a None value removes the key (e.g. max_tokens for models that reject it)."""
    for key, value in extra.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value


def merge_headers(headers: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """Add `extra`, replacing same-named headers whatever their case, so no header is ever sent twice."""
    if extra:
        lowered = {k.lower() for k in extra}
        headers = {k: v for k, v in headers.items() if k.lower() not in lowered}
        headers.update(extra)
    return headers


def int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def openai_usage(raw: dict[str, Any]) -> Usage:
    """Map an OpenAI-style usage object (also DeepSeek's cache-hit field and Groq's x_groq.usage)."""
    prompt_details = raw.get("prompt_tokens_details") or {}
    completion_details = raw.get("completion_tokens_details") or {}
    cached = prompt_details.get("cached_tokens") if isinstance(prompt_details, dict) else None
    if cached is None:
        cached = raw.get("prompt_cache_hit_tokens")
    reasoning = completion_details.get("reasoning_tokens") if isinstance(completion_details, dict) else None
    return Usage(
        prompt_tokens=int_or_none(raw.get("prompt_tokens")),
        completion_tokens=int_or_none(raw.get("completion_tokens")),
        cached_prompt_tokens=int_or_none(cached),
        reasoning_tokens=int_or_none(reasoning),
    )


class _Tool:
    __slots__ = ("args", "id", "name")

    def __init__(self) -> None:
        self.id: str | None = None
        self.name: str | None = None
        self.args: list[str] = []


class OpenAIChatParser:
    """One streamed Chat Completions response. `feed` only appends fragments; `result` joins them."""

    __slots__ = (
        "_error",
        "_finish",
        "_id",
        "_last_tool",
        "_model",
        "_outputs",
        "_reasoning",
        "_refusal",
        "_terminal",
        "_text",
        "_tools",
        "_usage",
    )

    def __init__(self) -> None:
        self._text: dict[int, list[str]] = {}
        self._reasoning: dict[int, list[str]] = {}
        self._refusal: dict[int, list[str]] = {}
        self._tools: dict[tuple[int, int], _Tool] = {}
        self._last_tool: dict[int, int] = {}
        self._finish: dict[int, str] = {}
        self._usage: dict[str, Any] | None = None
        self._error: ProviderError | None = None
        self._id: str | None = None
        self._model: str | None = None
        self._outputs = 0
        self._terminal = False

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
            raise MalformedEventError(f"chat completion event is not JSON ({len(data)} bytes)") from None
        if type(obj) is not dict:
            raise MalformedEventError("chat completion event is not a JSON object")
        get = obj.get
        flags = 0
        try:
            if self._id is None or self._model is None:
                self._identify(obj)
            choices = get("choices")
            if choices:
                for ch in choices:
                    idx = ch.get("index") or 0
                    delta = ch.get("delta")
                    if delta:
                        content = delta.get("content")
                        if content:
                            if type(content) is str:
                                try:
                                    self._text[idx].append(content)
                                except KeyError:
                                    self._text[idx] = [content]
                                flags |= _SHOWN
                            else:
                                flags |= self._content_parts(idx, content)
                        elif content is None and "content" not in delta:
                            flags |= self._legacy_text(idx, ch.get("text"))
                        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                        if reasoning and type(reasoning) is str:
                            self._append(self._reasoning, idx, reasoning)
                            flags |= OUTPUT
                        refusal = delta.get("refusal")
                        if refusal:
                            self._append(self._refusal, idx, refusal)
                            flags |= _SHOWN
                        tool_calls = delta.get("tool_calls")
                        if tool_calls:
                            flags |= self._tool_calls(idx, tool_calls)
                    else:
                        flags |= self._legacy_text(idx, ch.get("text"))
                    finish = ch.get("finish_reason")
                    if finish:
                        self._finish[idx] = finish
            elif choices is None:
                flags |= self._without_choices(obj)
            usage = get("usage")
            if usage:
                self._usage = usage
            x_groq = get("x_groq")
            if x_groq and x_groq.get("usage"):
                self._usage = x_groq["usage"]
            if get("error") is not None:
                flags |= self._record_error(obj)
        except (AttributeError, TypeError) as exc:
            raise MalformedEventError(f"chat completion chunk of an unexpected shape ({exc})") from None
        if flags & OUTPUT:
            self._outputs += 1
        return flags

    def _identify(self, obj: dict[str, Any]) -> None:
        rid = obj.get("id")
        if rid and self._id is None:
            self._id = str(rid)
        model = obj.get("model")
        if model and self._model is None:
            self._model = str(model)

    @staticmethod
    def _append(store: dict[int, list[str]], idx: int, fragment: str) -> None:
        try:
            store[idx].append(fragment)
        except KeyError:
            store[idx] = [fragment]

    def _legacy_text(self, idx: int, text: Any) -> int:
        """Legacy Completions put text in choices[].text; read only when the chunk has no delta.content."""
        if text and type(text) is str:
            self._append(self._text, idx, text)
            return _SHOWN
        return 0

    def _content_parts(self, idx: int, parts: Any) -> int:
        """Content as a list of parts (Mistral's reasoning models): text parts are text, thinking parts reasoning."""
        flags = 0
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, str):
                text, kind = part, "text"
            elif isinstance(part, dict):
                kind = part.get("type")
                text = part.get("text") if kind == "text" else None
                if kind == "thinking":
                    inner = part.get("thinking")
                    pieces = inner if isinstance(inner, list) else [{"text": inner}]
                    text = "".join(p.get("text") or "" for p in pieces if isinstance(p, dict))
            else:
                continue
            if text and isinstance(text, str):
                if kind == "thinking":
                    self._append(self._reasoning, idx, text)
                    flags |= OUTPUT
                else:
                    self._append(self._text, idx, text)
                    flags |= _SHOWN
        return flags

    def _tool_calls(self, idx: int, tool_calls: list[dict[str, Any]]) -> int:
        flags = 0
        for tc in tool_calls:
            tid = tc.get("id")
            ti = tc.get("index")
            if ti is None:  # some servers omit the index: a new id starts a new call
                last = self._last_tool.get(idx)
                same = last is not None and (not tid or self._tools[(idx, last)].id == tid)
                ti = last if same else sum(1 for c, _ in self._tools if c == idx)
            self._last_tool[idx] = ti
            call = self._tools.get((idx, ti))
            if call is None:
                call = self._tools[(idx, ti)] = _Tool()
            if tid:
                call.id = tid
            fn = tc.get("function") or {}
            name = fn.get("name")
            if name:
                call.name = name
                flags = _SHOWN
            args = fn.get("arguments")
            if args:
                call.args.append(args if type(args) is str else orjson.dumps(args).decode())
                flags = _SHOWN
        return flags

    def _without_choices(self, obj: dict[str, Any]) -> int:
        """A chunk with no `choices` key: usage-only or error chunks are fine; another API's event is refused."""
        foreign = errors_body.foreign_api(obj)
        if foreign:
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
            ToolCall(index=ti, id=call.id, name=call.name, arguments="".join(call.args))
            for (_, ti), call in sorted(self._tools.items())
        ]
        return StreamResult(
            text_by_choice={i: "".join(parts) for i, parts in sorted(self._text.items())},
            reasoning="".join(self._reasoning.get(0, ())),
            refusal="".join(self._refusal.get(0, ())),
            tool_calls=tools,
            usage=openai_usage(self._usage) if self._usage is not None else None,
            finish_reason=self._finish.get(0),
            finish_by_choice=dict(sorted(self._finish.items())),
            error=self._error,
            response_id=self._id,
            model=self._model,
            output_events=self._outputs,
            terminal=self._terminal,
        )


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
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text") or "" for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


class OpenAIAdapter:
    """Builds POST {base}/chat/completions and reads its stream, JSON body or error body."""

    name = "openai"

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
        merge_body(body, req.extra_body)
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if req.stream else "application/json",
            "Accept-Encoding": "identity",
        }
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        headers = merge_headers(headers, req.extra_headers)
        return HttpRequest("POST", join_path(base_path, "/chat/completions"), headers, orjson.dumps(body))

    def new_parser(self) -> OpenAIChatParser:
        return OpenAIChatParser()

    def parse_response(self, body: bytes) -> StreamResult:
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise MalformedEventError(f"chat completion body is not JSON ({len(body)} bytes)") from None
        if not isinstance(obj, dict):
            raise MalformedEventError("chat completion body is not a JSON object")
        choices = obj.get("choices")
        if not isinstance(choices, list):
            if obj.get("error") is not None or obj.get("object") == "error":
                return StreamResult(error=errors_body.stream_error(obj), terminal=True)
            raise UnsupportedAPIError(errors_body.foreign_api(obj) or "response body has no 'choices'")
        result = StreamResult(terminal=True)
        try:
            for ch in choices:
                _read_choice(result, ch)
        except (AttributeError, TypeError) as exc:
            raise MalformedEventError(f"chat completion body of an unexpected shape ({exc})") from None
        usage = obj.get("usage")
        if isinstance(usage, dict):
            result.usage = openai_usage(usage)
        result.finish_reason = result.finish_by_choice.get(0)
        result.response_id = str(obj["id"]) if obj.get("id") else None
        result.model = str(obj["model"]) if obj.get("model") else None
        if obj.get("error") is not None:
            result.error = errors_body.stream_error(obj)
        has_output = result.text_by_choice or result.tool_calls or result.refusal or result.reasoning
        result.output_events = 1 if has_output else 0
        return result

    def classify_error(self, status: int, body: bytes) -> ProviderError:
        return errors_body.classify(status, body)


def _read_choice(result: StreamResult, ch: dict[str, Any]) -> None:
    """One choice of a non-streaming response into `result` (choice 0 alone fills reasoning and refusal)."""
    idx = ch.get("index") or 0
    message = ch.get("message") or {}
    text = _message_text(message.get("content")) or (ch.get("text") if isinstance(ch.get("text"), str) else "")
    if text:
        result.text_by_choice[idx] = text
    if idx == 0:
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        result.reasoning = reasoning if isinstance(reasoning, str) else ""
        result.refusal = message.get("refusal") or ""
    for i, tc in enumerate(message.get("tool_calls") or ()):
        fn = tc.get("function") or {}
        args = fn.get("arguments")
        args = args if isinstance(args, str) else ("" if args is None else orjson.dumps(args).decode())
        result.tool_calls.append(ToolCall(index=i, id=tc.get("id"), name=fn.get("name"), arguments=args))
    if ch.get("finish_reason"):
        result.finish_by_choice[idx] = ch["finish_reason"]
