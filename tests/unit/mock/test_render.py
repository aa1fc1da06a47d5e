"""Wire bytes of the mock: every chunk parses, shapes match OpenAI/Anthropic exactly, usage placement, faults."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loadlib.mock import render
from loadlib.mock.httpwire import chunk, response_head
from loadlib.mock.llm_request import forced_function
from loadlib.mock.structured import GENERIC_OBJECT, requested_schema
from loadlib.records.tokens import count_text

CHUNK_KEYS = ["id", "object", "created", "model", "choices"]
CHOICE_KEYS = ["index", "delta", "logprobs", "finish_reason"]


def sse_events(raw: bytes) -> list[tuple[str | None, str]]:
    """(event name, data) per event; the mock never splits data over lines."""
    out = []
    for block in raw.decode().split("\n\n"):
        if not block:
            continue
        name = None
        data = ""
        for line in block.split("\n"):
            field, _, value = line.partition(": ")
            if field == "event":
                name = value
            elif field == "data":
                data = value
        out.append((name, data))
    return out


def openai_stream(n: int = 5, k: int = 1, include_usage: bool = True, usage: str = "separate") -> render.OpenAIStream:
    return render.OpenAIStream("abc", "gpt-4o", 1700000000, 17, n, k, 11, include_usage, usage)


def test_words_are_single_o200k_tokens_and_add_up() -> None:
    assert len(set(render.WORDS)) == len(render.WORDS) >= 100
    for word in render.WORDS:
        assert word.startswith(" ") and count_text(word) == 1, word
    for offset in (0, 99, render.CYCLE_LEN - 3):
        assert count_text(render.text(offset, 300)) == 300


def test_text_offset_is_deterministic_per_content_and_seed() -> None:
    a = render.text_offset(b'[{"role":"user"}]')
    assert a == render.text_offset(b'[{"role":"user"}]')
    assert 0 <= a < render.CYCLE_LEN
    assert render.text_offset(b'[{"role":"user"}]', seed=1) == (a + 1) % render.CYCLE_LEN


def test_openai_chunks_have_openai_shape() -> None:
    s = openai_stream(n=3)
    events = sse_events(s.head() + s.events(0, 3) + s.tail("stop", 3))
    assert events[-1] == (None, "[DONE]")
    chunks = [json.loads(data) for _, data in events[:-1]]
    for c in chunks:
        assert list(c) == [*CHUNK_KEYS, *(["usage"] if "usage" in c else [])]
        assert (c["id"], c["object"], c["created"], c["model"]) == (
            "chatcmpl-abc",
            "chat.completion.chunk",
            1700000000,
            "gpt-4o",
        )
    assert chunks[0]["choices"] == [
        {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}
    ]
    for c in chunks[1:4]:
        assert list(c["choices"][0]) == CHOICE_KEYS
        assert c["choices"][0]["finish_reason"] is None
    assert "".join(c["choices"][0]["delta"]["content"] for c in chunks[1:4]) == render.text(17, 3)
    assert chunks[4]["choices"] == [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}]
    assert chunks[5]["choices"] == []
    usage = chunks[5]["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (11, 3, 14)


def test_openai_events_slices_match_whole_and_wrap_the_cycle() -> None:
    s = render.OpenAIStream("x", "m", 1, render.CYCLE_LEN - 2, 6, 1, 0, False, "none")
    assert s.events(0, 6) == s.events(0, 2) + s.events(2, 6)
    texts = [json.loads(d)["choices"][0]["delta"]["content"] for _, d in sse_events(s.events(0, 6))]
    assert "".join(texts) == render.text(render.CYCLE_LEN - 2, 6)
    assert s.events(3, 3) == b""


@pytest.mark.parametrize(
    ("usage", "include", "finish_has_usage", "separate_chunk"),
    [
        ("separate", True, False, True),
        ("separate", False, False, False),
        ("finish", True, True, False),
        ("finish", False, True, False),
        ("none", True, False, False),
    ],
)
def test_openai_usage_placement(usage: str, include: bool, finish_has_usage: bool, separate_chunk: bool) -> None:
    events = sse_events(openai_stream(n=2, include_usage=include, usage=usage).tail("length", 2))
    chunks = [json.loads(d) for _, d in events if d != "[DONE]"]
    assert chunks[0]["choices"][0]["finish_reason"] == "length"
    assert ("usage" in chunks[0]) is finish_has_usage
    assert (len(chunks) == 2 and chunks[1]["choices"] == [] and "usage" in chunks[1]) is separate_chunk
    assert events[-1] == (None, "[DONE]")


def test_openai_tokens_per_event() -> None:
    s = openai_stream(n=7, k=3)
    texts = [json.loads(d)["choices"][0]["delta"]["content"] for _, d in sse_events(s.events(0, 3))]
    assert len(texts) == 3
    assert [count_text(t) for t in texts] == [3, 3, 1]
    assert "".join(texts) == render.text(17, 7)


def test_openai_fault_events() -> None:
    s = openai_stream()
    ((_, bad),) = sse_events(s.malformed())
    with pytest.raises(json.JSONDecodeError):
        json.loads(bad)
    ((_, err),) = sse_events(s.error_event())
    assert json.loads(err) == {
        "error": {
            "message": "The server is overloaded, please try again later.",
            "type": "server_error",
            "code": "overloaded",
        }
    }
    assert b"[DONE]" not in s.tail("stop", 5, terminal=False)


def test_anthropic_stream_shape() -> None:
    s = render.AnthropicStream("r1", "claude-x", 5, 4, 1, 21, None)
    events = sse_events(s.head() + s.events(0, 4) + s.tail("stop", 4))
    names = [name for name, _ in events]
    assert names == [
        "message_start",
        "content_block_start",
        "ping",
        *["content_block_delta"] * 4,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    data = [json.loads(d) for _, d in events]
    assert all(d["type"] == name for d, name in zip(data, names, strict=True))
    msg = data[0]["message"]
    assert (msg["id"], msg["type"], msg["role"], msg["model"], msg["content"]) == (
        "msg_r1",
        "message",
        "assistant",
        "claude-x",
        [],
    )
    assert (msg["usage"]["input_tokens"], msg["usage"]["output_tokens"]) == (21, 1)
    assert data[1] == {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    deltas = [d["delta"] for d in data[3:7]]
    assert all(d["type"] == "text_delta" and set(d) == {"type", "text"} for d in deltas)
    assert "".join(d["text"] for d in deltas) == render.text(5, 4)
    assert data[8] == {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 4},
    }
    assert data[9] == {"type": "message_stop"}


def test_anthropic_stop_reasons_and_terminal() -> None:
    s = render.AnthropicStream("r", "m", 0, 2, 2, 1, None)
    assert s.stop_reason("length") == "max_tokens"
    names = [n for n, _ in sse_events(s.tail("stop", 2, terminal=False))]
    assert names == ["content_block_stop", "message_delta"]
    ((_, text),) = sse_events(s.events(0, 1))
    assert json.loads(text)["delta"]["text"] == render.text(0, 2)


def test_anthropic_forced_tool_streams_valid_json_input() -> None:
    s = render.AnthropicStream("r", "m", 3, 5, 2, 1, "record_findings")
    events = sse_events(s.head() + s.events(0, 3) + s.tail("stop", 5))
    data = [json.loads(d) for _, d in events]
    block = data[1]["content_block"]
    assert (block["type"], block["name"], block["input"]) == ("tool_use", "record_findings", {})
    pieces = [d["delta"]["partial_json"] for d in data if d["type"] == "content_block_delta"]
    assert all(d["delta"]["type"] == "input_json_delta" for d in data if d["type"] == "content_block_delta")
    assert len(pieces) == 3
    assert json.loads("".join(pieces)) == {"text": render.text(3, 5)}
    assert data[-2]["delta"]["stop_reason"] == "tool_use"


def test_openai_forced_function_streams_its_arguments_as_tool_call_deltas() -> None:
    pieces = ('{"', "city", '":', ' "', "Oslo", '"}')
    s = render.OpenAIStream("abc", "gpt-4o", 1700000000, 0, len(pieces), 2, 11, True, "separate", pieces, "get_weather")
    chunks = [json.loads(d) for _, d in sse_events(s.head() + s.events(0, 3) + s.tail("stop", 6)) if d != "[DONE]"]
    assert all(list(c) == CHUNK_KEYS for c in chunks[:-1])
    calls = [c["choices"][0]["delta"]["tool_calls"][0] for c in chunks[1:4]]
    assert (calls[0]["id"], calls[0]["type"], calls[0]["function"]["name"]) == ("call_abc", "function", "get_weather")
    assert all(set(call) == {"index", "function"} and call["index"] == 0 for call in calls[1:])  # named once
    assert json.loads("".join(call["function"]["arguments"] for call in calls)) == {"city": "Oslo"}
    assert chunks[4]["choices"][0]["finish_reason"] == "tool_calls"
    cut = [json.loads(d) for _, d in sse_events(s.tail("length", 6)) if d != "[DONE]"]
    assert cut[0]["choices"][0]["finish_reason"] == "length"


def test_openai_forced_function_body() -> None:
    body = json.loads(render.openai_body("id4", "gpt", 5, '{"a": 1}', "stop", 3, 4, True, tool="f"))
    message = body["choices"][0]["message"]
    assert message["content"] is None and body["choices"][0]["finish_reason"] == "tool_calls"
    assert message["tool_calls"] == [
        {"id": "call_id4", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    ]


@pytest.mark.parametrize(
    ("choice", "name"),
    [
        ({"type": "function", "function": {"name": "get_weather"}}, "get_weather"),
        ("required", "first"),
        ("auto", None),
        (None, None),
    ],
)
def test_which_function_an_openai_request_forces(choice: Any, name: str | None) -> None:
    tools = [{"type": "function", "function": {"name": "first"}}, {"type": "function", "function": {"name": "x"}}]
    assert forced_function({"tools": tools, "tool_choice": choice}) == name


def test_a_forced_function_answers_with_its_parameters_or_any_object() -> None:
    params = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    body = {"tools": [{"type": "function", "function": {"name": "w", "parameters": params}}]}
    assert requested_schema("openai", body, "w") is params
    assert requested_schema("openai", body, "other") == GENERIC_OBJECT


def test_anthropic_fault_events() -> None:
    s = render.AnthropicStream("r", "m", 0, 2, 1, 1, None)
    ((name, bad),) = sse_events(s.malformed())
    assert name == "content_block_delta"
    with pytest.raises(json.JSONDecodeError):
        json.loads(bad)
    ((name, err),) = sse_events(s.error_event())
    assert name == "error"
    assert json.loads(err) == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def test_non_streamed_bodies() -> None:
    oa: dict[str, Any] = json.loads(render.openai_body("id1", "gpt", 5, " a b", "length", 10, 2, True))
    assert (oa["id"], oa["object"], oa["model"]) == ("chatcmpl-id1", "chat.completion", "gpt")
    assert oa["choices"][0]["message"]["content"] == " a b"
    assert oa["choices"][0]["finish_reason"] == "length"
    assert oa["usage"]["total_tokens"] == 12
    assert "usage" not in json.loads(render.openai_body("i", "g", 5, "", "stop", 1, 0, False))
    an = json.loads(render.anthropic_body("id2", "claude", " x", "end_turn", None, 7, 1))
    assert (an["id"], an["type"], an["content"], an["stop_reason"]) == (
        "msg_id2",
        "message",
        [{"type": "text", "text": " x"}],
        "end_turn",
    )
    assert (an["usage"]["input_tokens"], an["usage"]["output_tokens"]) == (7, 1)
    tool = json.loads(render.anthropic_body("id3", "claude", " x", "tool_use", "f", 7, 1))
    assert tool["content"][0]["input"] == {"text": " x"}


def test_context_length_errors_match_the_providers() -> None:
    assert json.loads(render.context_error("openai", 4097, 4294)) == {
        "error": {
            "message": "This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 "
            "tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }
    assert json.loads(render.context_error("anthropic", 200000, 205351)) == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": "prompt is too long: 205351 tokens > 200000 maximum"},
    }


@pytest.mark.parametrize("status", [429, 500, 503, 529])
def test_status_errors(status: int) -> None:
    oa = json.loads(render.status_error("openai", status, 2))
    assert set(oa["error"]) == {"message", "type", "param", "code"}
    an = json.loads(render.status_error("anthropic", status, 2))
    assert an["type"] == "error" and set(an["error"]) == {"type", "message"}
    if status == 429:
        assert oa["error"]["code"] == "rate_limit_exceeded"
        assert an["error"]["type"] == "rate_limit_error"
        assert "2s" in oa["error"]["message"]


def test_http_framing() -> None:
    assert chunk(b"hello") == b"5\r\nhello\r\n"
    assert chunk(b"") == b""
    head = response_head(200, [("x-a", "1")], None, keep_alive=False).decode()
    assert head.startswith("HTTP/1.1 200 OK\r\n")
    assert "transfer-encoding: chunked\r\n" in head and "connection: close\r\n" in head
    assert head.endswith("\r\n\r\n")
    assert "content-length: 3\r\n" in response_head(404, [], 3).decode()
