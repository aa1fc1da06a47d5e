"""OpenAI Chat Completions adapter: request building, stream-parsing edge cases, JSON bodies and error bodies."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from loadlib.errors import ErrorClass, MalformedEventError, UnsupportedAPIError
from loadlib.providers.base import ERROR, OUTPUT, TERMINAL, VISIBLE, ChatRequest
from loadlib.providers.http import join_path
from loadlib.providers.openai import OpenAIAdapter, OpenAIChatParser

ADAPTER = OpenAIAdapter()
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]


def chunk(**fields: Any) -> bytes:
    return orjson.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", **fields})


def delta(idx: int = 0, finish: str | None = None, **d: Any) -> dict[str, Any]:
    return {"index": idx, "delta": d, "finish_reason": finish}


def feed_all(events: list[bytes | tuple[bytes, bytes]]) -> tuple[OpenAIChatParser, list[int]]:
    parser = ADAPTER.new_parser()
    flags = []
    for item in events:
        event, data = item if isinstance(item, tuple) else (b"", item)
        flags.append(parser.feed(event, data))
    return parser, flags


# --- build ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "path"),
    [
        ("/v1", "/v1/chat/completions"),
        ("/v1/", "/v1/chat/completions"),
        ("", "/chat/completions"),
        ("/", "/chat/completions"),
        ("v1", "/v1/chat/completions"),
        ("/openai/deployments/gpt/", "/openai/deployments/gpt/chat/completions"),
    ],
)
def test_build_joins_the_path(base: str, path: str) -> None:
    assert ADAPTER.build(base, "m", None, ChatRequest(MESSAGES)).path == path
    assert join_path(base, "/x") == path.replace("/chat/completions", "/x")


def test_build_streaming_body_and_headers() -> None:
    req = ChatRequest(MESSAGES, max_tokens=64, temperature=0.0)
    http = ADAPTER.build("/v1", "gpt-4o", "sk-test", req)
    assert http.method == "POST"
    body = json.loads(http.body)
    assert body == {
        "model": "gpt-4o",
        "messages": MESSAGES,
        "max_tokens": 64,
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.0,
    }
    assert http.headers == {
        "Content-Type": "application/json",
        "Accept": "text/event-stream",
        "Accept-Encoding": "identity",
        "Authorization": "Bearer sk-test",
    }


def test_build_without_key_sends_no_auth_header() -> None:
    http = ADAPTER.build("/v1", "m", None, ChatRequest(MESSAGES))
    assert not any(k.lower() == "authorization" for k in http.headers)
    assert ADAPTER.build("/v1", "m", "", ChatRequest(MESSAGES)).headers == http.headers


def test_build_non_streaming_and_no_usage_option() -> None:
    body = json.loads(ADAPTER.build("/v1", "m", None, ChatRequest(MESSAGES, stream=False)).body)
    assert body["stream"] is False and "stream_options" not in body and "temperature" not in body
    assert ADAPTER.build("/v1", "m", None, ChatRequest(MESSAGES, stream=False)).headers["Accept"] == "application/json"
    body = json.loads(ADAPTER.build("/v1", "m", None, ChatRequest(MESSAGES, include_usage=False)).body)
    assert "stream_options" not in body


def test_build_json_schema_and_extras() -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    req = ChatRequest(
        MESSAGES,
        json_schema=schema,
        json_schema_name="verdict",
        extra_body={"max_tokens": None, "max_completion_tokens": 32, "seed": 7},
        extra_headers={"authorization": "Bearer other", "X-Trace": "1"},
    )
    http = ADAPTER.build("/v1", "m", "sk-test", req)
    body = json.loads(http.body)
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": schema, "strict": True},
    }
    assert "max_tokens" not in body and body["max_completion_tokens"] == 32 and body["seed"] == 7
    assert [k for k in http.headers if k.lower() == "authorization"] == ["authorization"]
    assert http.headers["authorization"] == "Bearer other" and http.headers["X-Trace"] == "1"


# --- stream parsing ------------------------------------------------------------------------------------------------


def test_role_only_empty_and_usage_chunks_carry_no_output() -> None:
    parser, flags = feed_all(
        [
            chunk(choices=[delta(role="assistant", content="")]),
            chunk(choices=[delta(role="assistant", content=None, refusal=None)]),
            chunk(choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]),
            chunk(choices=[], usage={"prompt_tokens": 3, "completion_tokens": 0}),
            b"[DONE]",
        ]
    )
    assert flags == [0, 0, 0, 0, TERMINAL]
    result = parser.result()
    assert result.output_events == 0 and result.terminal and result.finish_reason == "stop"
    assert result.usage is not None and result.usage.prompt_tokens == 3


def test_text_reasoning_refusal_flags() -> None:
    parser, flags = feed_all(
        [
            chunk(choices=[delta(reasoning_content="think")]),
            chunk(choices=[delta(reasoning="more")]),
            chunk(choices=[delta(content="Hi")]),
            chunk(choices=[delta(refusal="No")]),
        ]
    )
    assert flags == [OUTPUT, OUTPUT, OUTPUT | VISIBLE, OUTPUT | VISIBLE]
    result = parser.result()
    assert (result.reasoning, result.text, result.refusal, result.output_events) == ("thinkmore", "Hi", "No", 4)


def test_reasoning_content_and_reasoning_together_count_once() -> None:
    parser, _ = feed_all([chunk(choices=[delta(reasoning_content="a", reasoning="a")])])
    assert parser.result().reasoning == "a"


def test_together_text_and_delta_content_are_not_double_counted() -> None:
    parser, flags = feed_all(
        [chunk(choices=[{"index": 0, "text": "Deep", "delta": {"role": "assistant", "content": "Deep"}}])] * 2
    )
    assert parser.result().text == "DeepDeep"
    assert flags == [OUTPUT | VISIBLE] * 2


def test_legacy_completions_text() -> None:
    parser, flags = feed_all(
        [
            orjson.dumps({"object": "text_completion", "choices": [{"index": 0, "text": " a", "finish_reason": None}]}),
            orjson.dumps(
                {"object": "text_completion", "choices": [{"index": 0, "text": "", "finish_reason": "length"}]}
            ),
        ]
    )
    assert flags == [OUTPUT | VISIBLE, 0]
    assert (parser.result().text, parser.result().finish_reason) == (" a", "length")


def test_tool_calls_by_index_with_fragments() -> None:
    first = {"index": 0, "id": "call_a", "type": "function", "function": {"name": "f", "arguments": ""}}
    second = {"index": 1, "id": "call_b", "type": "function", "function": {"name": "g", "arguments": ""}}
    parser, flags = feed_all(
        [
            chunk(choices=[delta(role="assistant", content=None, tool_calls=[first])]),
            chunk(choices=[delta(tool_calls=[{"index": 0, "function": {"arguments": '{"x":'}}])]),
            chunk(choices=[delta(tool_calls=[{"index": 0, "function": {"arguments": ""}}])]),
            chunk(choices=[delta(tool_calls=[second])]),
            chunk(choices=[delta(tool_calls=[{"index": 1, "function": {"arguments": "{}"}}])]),
            chunk(choices=[delta(tool_calls=[{"index": 0, "function": {"arguments": "1}"}}])]),
        ]
    )
    assert flags == [OUTPUT | VISIBLE, OUTPUT | VISIBLE, 0, OUTPUT | VISIBLE, OUTPUT | VISIBLE, OUTPUT | VISIBLE]
    calls = [(t.index, t.id, t.name, t.arguments) for t in parser.result().tool_calls]
    assert calls == [(0, "call_a", "f", '{"x":1}'), (1, "call_b", "g", "{}")]


def test_tool_calls_without_index_are_told_apart_by_id() -> None:
    whole = {"id": "c1", "function": {"name": "f", "arguments": {"a": 1}}}
    parser, _ = feed_all(
        [
            chunk(choices=[delta(tool_calls=[whole])]),
            chunk(choices=[delta(tool_calls=[{"id": "c2", "function": {"name": "g", "arguments": "{"}}])]),
            chunk(choices=[delta(tool_calls=[{"function": {"arguments": "}"}}])]),
        ]
    )
    calls = [(t.index, t.id, t.name, t.arguments) for t in parser.result().tool_calls]
    assert calls == [(0, "c1", "f", '{"a":1}'), (1, "c2", "g", "{}")]


def test_content_as_parts() -> None:
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]}
    parser, flags = feed_all(
        [chunk(choices=[delta(content=[thinking])]), chunk(choices=[delta(content=[{"type": "text", "text": "A"}])])]
    )
    assert flags == [OUTPUT, OUTPUT | VISIBLE]
    assert (parser.result().reasoning, parser.result().text) == ("hmm", "A")


def test_usage_last_non_null_wins_and_groq_usage() -> None:
    parser, _ = feed_all(
        [
            chunk(choices=[delta(content="a")], usage={"prompt_tokens": 1, "completion_tokens": 1}),
            chunk(choices=[delta(content="b")], usage=None),
            chunk(
                choices=[],
                usage={
                    "prompt_tokens": 5,
                    "completion_tokens": 2,
                    "prompt_tokens_details": {"cached_tokens": 4},
                    "completion_tokens_details": {"reasoning_tokens": 1},
                },
            ),
        ]
    )
    usage = parser.result().usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_prompt_tokens, usage.reasoning_tokens) == (
        5,
        2,
        4,
        1,
    )
    parser, _ = feed_all([chunk(choices=[delta(content="a")], x_groq={"usage": {"prompt_tokens": 9}})])
    assert parser.result().usage is not None and parser.result().usage.prompt_tokens == 9  # type: ignore[union-attr]


def test_in_stream_errors() -> None:
    groq = (b"error", b'{"error":{"message":"boom","type":"invalid_request_error","code":"tool_use_failed"}}')
    parser, flags = feed_all([chunk(choices=[delta(content="a")]), groq])
    assert flags == [OUTPUT | VISIBLE, ERROR]
    err = parser.result().error
    assert err is not None and err.error_class is ErrorClass.PROVIDER_ERROR
    assert (err.message, err.type, err.code) == ("boom", "invalid_request_error", "tool_use_failed")

    parser, flags = feed_all([(b"error", b"upstream went away")])
    assert flags == [ERROR] and parser.result().error.message == "upstream went away"  # type: ignore[union-attr]

    vllm = (
        b'{"object":"error","message":"This model\'s maximum context length is 10","type":"BadRequestError","code":400}'
    )
    parser, flags = feed_all([vllm])
    assert flags == [ERROR] and parser.result().error.code == "400"  # type: ignore[union-attr]

    parser, flags = feed_all([orjson.dumps({"error": {"message": "first"}}), orjson.dumps({"error": "second"})])
    assert flags == [ERROR, ERROR] and parser.result().error.message == "first"  # type: ignore[union-attr]


def test_identity_from_the_first_non_empty_values() -> None:
    parser, _ = feed_all(
        [orjson.dumps({"id": "", "model": "", "choices": []}), chunk(choices=[delta(content="x")]), b"[DONE]"]
    )
    assert (parser.result().response_id, parser.result().model) == ("chatcmpl-1", "m")


def test_multiple_choices() -> None:
    parser, _ = feed_all(
        [
            chunk(choices=[delta(0, content="a")]),
            chunk(choices=[delta(1, content="b")]),
            chunk(choices=[delta(1, finish="length"), delta(0, finish="stop")]),
        ]
    )
    result = parser.result()
    assert result.text_by_choice == {0: "a", 1: "b"}
    assert result.finish_by_choice == {0: "stop", 1: "length"} and result.finish_reason == "stop"


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"{not json", MalformedEventError),
        (b"[1, 2]", MalformedEventError),
        (b'{"id": "x"}', MalformedEventError),
        (b'{"choices": [1]}', MalformedEventError),
        (b'{"choices": [{"delta": "text"}]}', MalformedEventError),
        (b'{"type": "response.output_text.delta", "delta": "x"}', UnsupportedAPIError),
        (b'{"type": "content_block_delta", "delta": {"type": "text_delta", "text": "x"}}', UnsupportedAPIError),
        (b'{"candidates": [{"content": {"parts": [{"text": "x"}]}}]}', UnsupportedAPIError),
        (b'{"token": {"text": "x"}, "generated_text": null}', UnsupportedAPIError),
        (b'{"type": "completion", "completion": "x", "stop_reason": null}', UnsupportedAPIError),
        (b'{"model": "llama3", "message": {"content": "x"}, "done": false}', UnsupportedAPIError),
    ],
)
def test_bad_or_foreign_events_raise(data: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        ADAPTER.new_parser().feed(b"", data)


@pytest.mark.parametrize("event", [b"response.created", b"thread.run.created", b"message_start", b"completion"])
def test_foreign_event_names_raise(event: bytes) -> None:
    with pytest.raises(UnsupportedAPIError):
        ADAPTER.new_parser().feed(event, b"{}")


def test_ping_and_message_event_names() -> None:
    _, flags = feed_all([(b"ping", b"{}"), (b"message", chunk(choices=[delta(content="x")]))])
    assert flags == [0, OUTPUT | VISIBLE]


# --- non-streaming bodies ------------------------------------------------------------------------------------------


def test_parse_response_full_body() -> None:
    body = {
        "id": "chatcmpl-9",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "Hello",
                    "reasoning_content": "why",
                    "refusal": None,
                    "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
                },
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 0}},
    }
    result = ADAPTER.parse_response(orjson.dumps(body))
    assert (result.text, result.reasoning, result.refusal, result.finish_reason) == ("Hello", "why", "", "stop")
    assert [(t.index, t.id, t.name, t.arguments) for t in result.tool_calls] == [(0, "c", "f", "{}")]
    assert result.usage is not None and (result.usage.prompt_tokens, result.usage.cached_prompt_tokens) == (7, 0)
    assert (result.response_id, result.model, result.output_events, result.terminal) == (
        "chatcmpl-9",
        "gpt-4o",
        1,
        True,
    )


def test_parse_response_empty_refusal_and_legacy() -> None:
    empty = {"choices": [{"index": 0, "message": {"content": ""}, "finish_reason": "length"}]}
    result = ADAPTER.parse_response(orjson.dumps(empty))
    assert result.output_events == 0 and result.text_by_choice == {} and result.finish_reason == "length"
    refusal = {"choices": [{"index": 0, "message": {"content": None, "refusal": "No"}}]}
    assert ADAPTER.parse_response(orjson.dumps(refusal)).refusal == "No"
    legacy = {"object": "text_completion", "choices": [{"index": 0, "text": "abc", "finish_reason": "stop"}]}
    assert ADAPTER.parse_response(orjson.dumps(legacy)).text == "abc"


def test_parse_response_errors_and_foreign_bodies() -> None:
    result = ADAPTER.parse_response(b'{"error": {"message": "bad", "code": "x"}}')
    assert result.error is not None and result.error.message == "bad"
    with pytest.raises(UnsupportedAPIError, match="Responses"):
        ADAPTER.parse_response(b'{"object": "response", "output": [], "status": "completed"}')
    with pytest.raises(UnsupportedAPIError, match="Anthropic"):
        ADAPTER.parse_response(b'{"type": "message", "content": [], "role": "assistant"}')
    with pytest.raises(MalformedEventError):
        ADAPTER.parse_response(b"<html>oops</html>")
    with pytest.raises(MalformedEventError):
        ADAPTER.parse_response(b'{"choices": [{"message": "x"}]}')


# --- error bodies --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "error_class"),
    [
        (429, b"", ErrorClass.RATE_LIMITED),
        (400, b'{"error": {"message": "x", "code": "context_length_exceeded"}}', ErrorClass.CONTEXT_LENGTH_EXCEEDED),
        (400, b'{"detail": "maximum context length is 4096 tokens"}', ErrorClass.CONTEXT_LENGTH_EXCEEDED),
        (
            400,
            b'{"error": {"type": "exceed_context_size_error", "message": "too big"}}',
            ErrorClass.CONTEXT_LENGTH_EXCEEDED,
        ),
        (401, b'{"error": {"message": "Incorrect API key provided: sk-proj-abcdefghijkl"}}', ErrorClass.HTTP_4XX),
        (404, b"Not Found", ErrorClass.HTTP_4XX),
        (500, b"", ErrorClass.HTTP_5XX),
        (502, b"<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>", ErrorClass.HTTP_5XX),
        (503, b'{"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}', ErrorClass.HTTP_5XX),
    ],
)
def test_classify_error(status: int, body: bytes, error_class: ErrorClass) -> None:
    err = ADAPTER.classify_error(status, body)
    assert err.error_class is error_class
    assert 0 < len(err.message) <= 200


def test_classify_error_messages() -> None:
    assert ADAPTER.classify_error(502, b"<html><title>502 Bad Gateway</title></html>").message == "502 Bad Gateway"
    assert ADAPTER.classify_error(500, b"").message == "HTTP 500"
    assert ADAPTER.classify_error(404, b"  Not\n Found ").message == "Not Found"
    leaked = ADAPTER.classify_error(401, b'{"error": {"message": "bad key sk-proj-abcdefghijkl and Bearer abc.def"}}')
    assert "abcdefghijkl" not in leaked.message and "abc.def" not in leaked.message
    long = ADAPTER.classify_error(400, orjson.dumps({"error": {"message": "x" * 500}}))
    assert len(long.message) == 200 and long.message.endswith("…")
    gemini = ADAPTER.classify_error(503, b'{"error": {"code": 503, "message": "m", "status": "UNAVAILABLE"}}')
    assert (gemini.type, gemini.code) == ("UNAVAILABLE", "503")
