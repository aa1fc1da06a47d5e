"""The official openai and anthropic SDKs consume the mock's streamed and non-streamed responses without error and
see the expected words and usage: the mock speaks the real wire formats, not just what our parser tolerates."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from loadlib.mock import MockConfig, MockProcess, expected_text, start_subprocess
from loadlib.records.tokens import count_chat

pytestmark = pytest.mark.integration

MESSAGES: list[Any] = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Say something."}]
N = 12


@pytest.fixture(scope="module")
def mock() -> Iterator[MockProcess]:
    with start_subprocess(MockConfig(ttft_ms=5, itl_ms=1, output_tokens=N), seed=3) as proc:
        yield proc


@pytest.fixture
def oa(mock: MockProcess) -> Iterator[openai.OpenAI]:
    client = openai.OpenAI(base_url=mock.url + "/v1", api_key="test", max_retries=0, timeout=10)
    yield client
    client.close()


@pytest.fixture
def an(mock: MockProcess) -> Iterator[anthropic.Anthropic]:
    client = anthropic.Anthropic(base_url=mock.url, api_key="test", max_retries=0, timeout=10)
    yield client
    client.close()


def _expected(mock: MockProcess, request_id: str) -> str:
    """The words the mock sent for this request, from its ground truth."""
    with urllib.request.urlopen(f"{mock.url}/mock/truth?request_id={request_id}", timeout=10) as resp:
        return expected_text(json.load(resp)["text_offset"], N)


def test_openai_stream_with_usage(oa: openai.OpenAI, mock: MockProcess) -> None:
    stream = oa.chat.completions.create(
        model="gpt-4o", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    pieces, finish, usage, ids = [], None, None, set()
    for chunk in stream:
        ids.add(chunk.id)
        if chunk.choices:
            pieces.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
        if chunk.usage is not None:
            usage = chunk.usage
    (chunk_id,) = ids
    text = "".join(pieces)
    assert text == _expected(mock, chunk_id)
    assert finish == "stop"
    assert usage is not None
    assert usage.completion_tokens == N == len(text.split())
    assert usage.prompt_tokens == count_chat(MESSAGES)


def test_openai_non_streaming(oa: openai.OpenAI, mock: MockProcess) -> None:
    resp = oa.chat.completions.create(model="gpt-4o", messages=MESSAGES)
    assert resp.choices[0].message.content == _expected(mock, resp.id)
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage is not None and resp.usage.completion_tokens == N
    assert resp.model == "gpt-4o"


def test_openai_model_suffix_and_max_tokens(oa: openai.OpenAI) -> None:
    stream = oa.chat.completions.create(
        model="gpt-4o::ttft_ms=1,tokens_per_event=4", messages=MESSAGES, stream=True, max_tokens=6
    )
    chunks = list(stream)
    contents = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(contents) == 2
    assert chunks[-1].choices[0].finish_reason == "length"


def test_openai_sdk_raises_on_injected_errors(oa: openai.OpenAI) -> None:
    with pytest.raises(openai.RateLimitError):
        oa.chat.completions.create(model="m::fault=rate_limit", messages=MESSAGES)
    with pytest.raises(openai.BadRequestError, match="maximum context length is 5 tokens") as info:
        oa.chat.completions.create(model="m::context_limit=5", messages=MESSAGES)
    assert info.value.code == "context_length_exceeded"


def test_anthropic_stream_final_usage(an: anthropic.Anthropic, mock: MockProcess) -> None:
    system, messages = MESSAGES[0]["content"], MESSAGES[1:]
    with an.messages.stream(model="claude-x", max_tokens=100, system=system, messages=messages) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == _expected(mock, final.id)
    assert final.content[0].type == "text" and final.content[0].text == text
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens == N
    assert final.usage.input_tokens == count_chat(MESSAGES)


def test_anthropic_non_streaming(an: anthropic.Anthropic, mock: MockProcess) -> None:
    msg = an.messages.create(model="claude-x", max_tokens=5, messages=MESSAGES[1:])
    assert msg.stop_reason == "max_tokens"
    assert msg.usage.output_tokens == 5
    assert msg.content[0].type == "text"
    assert msg.content[0].text == _expected(mock, msg.id)[: len(msg.content[0].text)]


def test_anthropic_forced_tool_stream(an: anthropic.Anthropic) -> None:
    tool = {"name": "record", "description": "Record findings.", "input_schema": {"type": "object"}}
    with an.messages.stream(
        model="claude-x",
        max_tokens=100,
        messages=MESSAGES[1:],
        tools=[tool],  # type: ignore[list-item]
        tool_choice={"type": "tool", "name": "record"},
    ) as stream:
        final = stream.get_final_message()
    block = final.content[0]
    assert block.type == "tool_use" and block.name == "record"
    assert isinstance(block.input, dict) and len(block.input["text"].split()) == N
    assert final.stop_reason == "tool_use"


def test_openai_forced_function_stream(oa: openai.OpenAI) -> None:
    params = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": params}}
    chunks = oa.chat.completions.create(
        model="gpt-4o",
        messages=MESSAGES,
        stream=True,
        tools=[tool],  # type: ignore[list-item]
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
    )
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert calls[0].id and calls[0].function and calls[0].function.name == "get_weather"
    arguments = "".join(tc.function.arguments or "" for tc in calls if tc.function)
    assert isinstance(json.loads(arguments)["city"], str)


def test_openai_forced_function_body(oa: openai.OpenAI) -> None:
    tools: Any = [{"type": "function", "function": {"name": "record"}}]
    done = oa.chat.completions.create(model="gpt-4o", messages=MESSAGES, tools=tools, tool_choice="required")
    calls: Any = done.choices[0].message.tool_calls or []
    [call] = calls
    assert call.function.name == "record" and isinstance(json.loads(call.function.arguments), dict)
    assert done.choices[0].finish_reason == "tool_calls"


def test_anthropic_sdk_sees_in_stream_error(an: anthropic.Anthropic) -> None:
    with (
        pytest.raises(anthropic.APIStatusError, match="Overloaded"),
        an.messages.stream(model="c::fault=error_event,fault_at=2", max_tokens=100, messages=MESSAGES[1:]) as stream,
    ):
        for _ in stream.text_stream:
            pass
