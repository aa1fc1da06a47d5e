"""Anthropic Messages adapter: request building, stream-parsing edge cases, JSON bodies and error bodies."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from loadlib.errors import ErrorClass, MalformedEventError, UnsupportedAPIError
from loadlib.providers.anthropic import ANTHROPIC_VERSION, AnthropicAdapter, AnthropicParser
from loadlib.providers.base import ERROR, OUTPUT, TERMINAL, VISIBLE, ChatRequest

ADAPTER = AnthropicAdapter()
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]


def ev(kind: str, **fields: Any) -> tuple[bytes, bytes]:
    return kind.encode(), orjson.dumps({"type": kind, **fields})


def block_delta(index: int, **d: Any) -> tuple[bytes, bytes]:
    return ev("content_block_delta", index=index, delta=d)


def feed_all(events: list[tuple[bytes, bytes]]) -> tuple[AnthropicParser, list[int]]:
    parser = ADAPTER.new_parser()
    return parser, [parser.feed(event, data) for event, data in events]


# --- build ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("base", "path"),
    [("", "/v1/messages"), ("/", "/v1/messages"), ("/v1", "/v1/messages"), ("/proxy/", "/proxy/v1/messages")],
)
def test_build_path(base: str, path: str) -> None:
    assert ADAPTER.build(base, "claude", None, ChatRequest(MESSAGES)).path == path


def test_build_lifts_system_and_sets_headers() -> None:
    http = ADAPTER.build("", "claude-x", "sk-ant-test", ChatRequest(MESSAGES, max_tokens=50, temperature=0.0))
    body = json.loads(http.body)
    assert body == {
        "model": "claude-x",
        "max_tokens": 50,
        "messages": [{"role": "user", "content": "Hi"}],
        "system": "Be brief.",
        "stream": True,
        "temperature": 0.0,
    }
    assert http.headers == {
        "anthropic-version": ANTHROPIC_VERSION,
        "content-type": "application/json",
        "accept": "text/event-stream",
        "accept-encoding": "identity",
        "x-api-key": "sk-ant-test",
    }


def test_build_without_key_or_system() -> None:
    http = ADAPTER.build("", "c", None, ChatRequest([{"role": "user", "content": "Hi"}], stream=False))
    body = json.loads(http.body)
    assert "system" not in body and "temperature" not in body and body["stream"] is False
    assert "x-api-key" not in http.headers and "authorization" not in {k.lower() for k in http.headers}
    assert http.headers["accept"] == "application/json"


def test_build_joins_several_system_messages_and_parts() -> None:
    messages = [
        {"role": "system", "content": "A"},
        {"role": "developer", "content": [{"type": "text", "text": "B"}, {"type": "text", "text": "C"}]},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
    ]
    body = json.loads(ADAPTER.build("", "c", None, ChatRequest(messages)).body)
    assert body["system"] == "A\n\nBC"
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"]


def test_build_json_schema_is_a_forced_tool() -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    req = ChatRequest(MESSAGES, json_schema=schema, json_schema_name="verdict", extra_body={"top_k": 5})
    body = json.loads(ADAPTER.build("", "c", None, req).body)
    assert body["tools"] == [{"name": "verdict", "input_schema": schema}]
    assert body["tool_choice"] == {"type": "tool", "name": "verdict"}
    assert body["top_k"] == 5


def test_build_extra_headers_replace_ours_case_insensitively() -> None:
    req = ChatRequest(MESSAGES, extra_headers={"Anthropic-Version": "2099-01-01", "anthropic-beta": "x"})
    headers = ADAPTER.build("", "c", "k", req).headers
    assert [k for k in headers if k.lower() == "anthropic-version"] == ["Anthropic-Version"]
    assert headers["Anthropic-Version"] == "2099-01-01" and headers["anthropic-beta"] == "x"


# --- stream parsing ------------------------------------------------------------------------------------------------


def test_full_stream_flags_and_result() -> None:
    start_usage = {
        "input_tokens": 10,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 5,
        "output_tokens": 1,
    }
    parser, flags = feed_all(
        [
            ev("message_start", message={"id": "msg_1", "model": "claude-x", "usage": start_usage}),
            ev("content_block_start", index=0, content_block={"type": "thinking", "thinking": ""}),
            block_delta(0, type="thinking_delta", thinking="hmm"),
            block_delta(0, type="signature_delta", signature="sig"),
            ev("content_block_stop", index=0),
            ev("ping"),
            ev("content_block_start", index=1, content_block={"type": "text", "text": ""}),
            block_delta(1, type="text_delta", text="Hi"),
            block_delta(1, type="text_delta", text=""),
            ev("content_block_start", index=2, content_block={"type": "tool_use", "id": "toolu_1", "name": "f"}),
            block_delta(2, type="input_json_delta", partial_json=""),
            block_delta(2, type="input_json_delta", partial_json='{"a":'),
            block_delta(2, type="input_json_delta", partial_json="1}"),
            ev("message_delta", delta={"stop_reason": "tool_use"}, usage={"output_tokens": 30}),
            ev("message_stop"),
        ]
    )
    shown = OUTPUT | VISIBLE
    assert flags == [0, 0, OUTPUT, 0, 0, 0, 0, shown, 0, 0, 0, shown, shown, 0, TERMINAL]
    result = parser.result()
    assert (result.text, result.reasoning, result.finish_reason, result.terminal) == ("Hi", "hmm", "tool_use", True)
    assert [(t.index, t.id, t.name, t.arguments) for t in result.tool_calls] == [(2, "toolu_1", "f", '{"a":1}')]
    assert (result.response_id, result.model, result.output_events) == ("msg_1", "claude-x", 4)
    u = result.usage
    assert u is not None
    # the whole prompt: input_tokens leaves out the 100 read from the cache and the 5 written to it
    assert (u.prompt_tokens, u.completion_tokens, u.cached_prompt_tokens, u.cache_write_tokens) == (115, 30, 100, 5)


def test_cumulative_usage_final_values_win() -> None:
    parser, _ = feed_all(
        [
            ev("message_start", message={"id": "m", "usage": {"input_tokens": 11, "output_tokens": 2}}),
            ev("message_delta", delta={"stop_reason": None}, usage={"input_tokens": 12, "output_tokens": 6}),
            ev("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 7, "input_tokens": None}),
        ]
    )
    result = parser.result()
    assert result.usage is not None and (result.usage.prompt_tokens, result.usage.completion_tokens) == (12, 7)
    assert result.finish_reason == "end_turn" and not result.terminal


START_USAGE = {"input_tokens": 4, "cache_read_input_tokens": 6, "output_tokens": 1}  # output: a placeholder
FIVE = [block_delta(0, type="text_delta", text=t) for t in ("One", " two", " three", " four", " five")]
OPENING = [
    ev("message_start", message={"id": "m", "usage": START_USAGE}),
    ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
]


@pytest.mark.parametrize(
    "ending",
    [
        [],  # the connection lost after five deltas
        [ev("content_block_stop", index=0)],  # cut off by the run's end between events
        [ev("error", error={"type": "overloaded_error", "message": "Overloaded"})],
    ],
    ids=["broken", "cut-off", "error-event"],
)
def test_message_starts_output_count_is_provisional(ending: list[tuple[bytes, bytes]]) -> None:
    """Without message_delta the output count is message_start's placeholder (1): no completion count, so the record
    takes the estimate; the prompt (input 4 + cache read 6) is kept, and the source says only the start came."""
    parser, _ = feed_all([*OPENING, *FIVE, *ending])
    result = parser.result()
    u = result.usage
    assert u is not None and (u.prompt_tokens, u.cached_prompt_tokens, u.completion_tokens) == (10, 6, None)
    assert u.rejected == () and result.usage_source == "stream_start" and result.output_events == 5


@pytest.mark.parametrize(
    ("final_usage", "completion"),
    [({"output_tokens": 5}, 5), ({"input_tokens": 4}, 1), ({}, 1)],
    ids=["output", "without-output", "empty"],
)
def test_a_message_delta_makes_the_output_count_final(final_usage: dict[str, Any], completion: int) -> None:
    """Once the final usage arrived each count is the last one sent, message_start's output count too if the
    message_delta did not repeat it."""
    end = ev("message_delta", delta={"stop_reason": "end_turn"}, usage=final_usage)
    result = feed_all([*OPENING, *FIVE, end])[0].result()
    assert result.usage is not None and result.usage.completion_tokens == completion
    assert result.usage_source == "stream"


def test_a_start_with_only_its_output_count_is_no_usage() -> None:
    parser, _ = feed_all([ev("message_start", message={"id": "m", "usage": {"output_tokens": 1}}), *FIVE])
    result = parser.result()
    assert (result.usage, result.usage_source) == (None, None)


def test_error_event() -> None:
    parser, flags = feed_all(
        [
            ev("message_start", message={"id": "m"}),
            block_delta(0, type="text_delta", text="a"),
            ev("error", error={"type": "overloaded_error", "message": "Overloaded"}),
        ]
    )
    assert flags == [0, OUTPUT | VISIBLE, ERROR]
    err = parser.result().error
    assert err is not None and err.error_class is ErrorClass.PROVIDER_ERROR
    assert (err.type, err.message) == ("overloaded_error", "Overloaded")
    assert feed_all([(b"error", b"not json")])[1] == [ERROR]


def test_unknown_events_are_tolerated() -> None:
    _, flags = feed_all(
        [
            ev("message_start", message={"id": "m"}),
            ev("brand_new_event", payload=1),
            block_delta(0, type="citations_delta", citation={}),
            block_delta(0, type="future_delta", x=1),
            (b"", b"[DONE]"),  # a proxy's sentinel after a Messages stream
        ]
    )
    assert flags == [0, 0, 0, 0, 0]


def test_event_type_from_the_event_name_when_json_has_none() -> None:
    _, flags = feed_all([(b"message_stop", b"{}")])
    assert flags == [TERMINAL]


@pytest.mark.parametrize(
    ("event", "data", "error"),
    [
        (b"message_start", b"{oops", MalformedEventError),
        (b"", b"[1]", MalformedEventError),
        (b"", b"{}", MalformedEventError),
        (b"", b"[DONE]", MalformedEventError),
        (b"content_block_delta", b'{"type": "content_block_delta"}', MalformedEventError),
        (b"", b'{"choices": [{"delta": {"content": "x"}}]}', UnsupportedAPIError),
        (b"completion", b'{"type": "completion", "completion": " x", "stop_reason": null}', UnsupportedAPIError),
        (b"response.created", b'{"type": "response.created"}', UnsupportedAPIError),
    ],
)
def test_bad_or_foreign_events_raise(event: bytes, data: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        ADAPTER.new_parser().feed(event, data)


# --- non-streaming bodies ------------------------------------------------------------------------------------------


def test_parse_response() -> None:
    body = {
        "id": "msg_9",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "text", "text": "Hello"},
            {"type": "tool_use", "id": "toolu_1", "name": "verdict", "input": {"ok": True}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 3, "output_tokens": 9, "cache_read_input_tokens": 0},
    }
    result = ADAPTER.parse_response(orjson.dumps(body))
    assert (result.text, result.reasoning, result.finish_reason) == ("Hello", "hmm", "tool_use")
    assert [(t.index, t.id, t.name, t.arguments) for t in result.tool_calls] == [
        (2, "toolu_1", "verdict", '{"ok":true}')
    ]
    assert result.usage is not None and (result.usage.prompt_tokens, result.usage.completion_tokens) == (3, 9)
    assert (result.response_id, result.output_events, result.terminal) == ("msg_9", 1, True)


def test_parse_response_error_and_foreign() -> None:
    result = ADAPTER.parse_response(
        b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'
    )
    assert result.error is not None and result.error.message == "Overloaded"
    with pytest.raises(UnsupportedAPIError, match="provider 'openai'"):
        ADAPTER.parse_response(b'{"id": "x", "choices": []}')
    with pytest.raises(MalformedEventError):
        ADAPTER.parse_response(b"nope")


# --- error bodies --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "error_class"),
    [
        (429, b'{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}', ErrorClass.RATE_LIMITED),
        (529, b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', ErrorClass.HTTP_5XX),
        (500, b'{"type":"error","error":{"type":"api_error","message":"Internal"}}', ErrorClass.HTTP_5XX),
        (
            400,
            b'{"type":"error","error":{"message":"prompt is too long: 9 tokens > 8 maximum"}}',
            ErrorClass.CONTEXT_LENGTH_EXCEEDED,
        ),
        (
            400,
            b'{"type":"error","error":{"message":"input length and `max_tokens` exceed context limit: 1 + 2 > 2"}}',
            ErrorClass.CONTEXT_LENGTH_EXCEEDED,
        ),
        (
            401,
            b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
            ErrorClass.HTTP_4XX,
        ),
        (413, b"request too large", ErrorClass.HTTP_4XX),
    ],
)
def test_classify_error(status: int, body: bytes, error_class: ErrorClass) -> None:
    err = ADAPTER.classify_error(status, body)
    assert err.error_class is error_class
    assert err.message and len(err.message) <= 200
    if body.startswith(b"{"):
        assert err.message == json.loads(body)["error"]["message"]
