"""One regression test per kind of malformed field: a field of the wrong type is `MalformedEventError` naming the
field, a usage count that is not a sane count is rejected and listed, and `result()` works afterwards. Where it
matters, the same event also goes end to end through `stream_call` over loopback TCP (tests/support/wire.py): the
outcome is classified (never internal_error) and its record serialises.

Tests marked xfail(strict=True) assert the correct behaviour for bugs found by the fuzzer
(tests/unit/fuzz/test_fuzz_adapters.py) that are not fixed yet; fixing one turns its test into a failure that
asks for the mark to go.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from loadlib.errors import ErrorClass, MalformedEventError, UnsupportedAPIError
from loadlib.outputs.records import record_line
from loadlib.providers import errors_body
from loadlib.providers.anthropic import AnthropicAdapter
from loadlib.providers.base import StreamResult
from loadlib.providers.openai import OpenAIAdapter
from loadlib.records.build import build_record
from loadlib.records.pricing import PriceTable
from loadlib.records.record import RequestRecord
from loadlib.transport.stream import StreamOutcome
from tests.support.records import IDENTITY
from tests.support.wire import call, chunked, http_head

OPENAI = OpenAIAdapter()
ANTHROPIC = AnthropicAdapter()
PRICES = PriceTable.load(None)
MODELS = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4"}  # both priced in the bundled table
NOT_AN_INDEX = "not an index (a non-negative integer)"

# --- helpers -------------------------------------------------------------------------------------------------------


def data(event: Any) -> bytes:
    return event if isinstance(event, bytes) else orjson.dumps(event)


def feed_one(adapter: OpenAIAdapter | AnthropicAdapter, event: Any, name: bytes = b"") -> tuple[StreamResult, int]:
    """Feed one event that must be accepted; the parser's result and the event's flags."""
    parser = adapter.new_parser()
    flags = parser.feed(name, data(event))
    return parser.result(), flags


def refused(adapter: OpenAIAdapter | AnthropicAdapter, event: Any, name: bytes = b"") -> tuple[str, StreamResult]:
    """Feed one event that must be MalformedEventError; its message and the result() afterwards."""
    parser = adapter.new_parser()
    with pytest.raises(MalformedEventError) as caught:
        parser.feed(name, data(event))
    return str(caught.value), parser.result()


def chunk(**fields: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4o", **fields}


def delta(**d: Any) -> dict[str, Any]:
    return chunk(choices=[{"index": 0, "delta": d, "finish_reason": None}])


def usage_chunk(**usage: Any) -> bytes:
    return orjson.dumps(chunk(choices=[], usage=usage))


def text_delta(text: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}


def sse(provider: str, *events: Any) -> bytes:
    """An event stream; Anthropic events are named by their type, as Anthropic sends them."""
    out = bytearray()
    for event in events:
        if provider == "anthropic" and isinstance(event, dict):
            out += b"event: " + event["type"].encode() + b"\n"
        out += b"data: " + data(event) + b"\n\n"
    return bytes(out)


def over_the_wire(provider: str, *events: Any) -> StreamOutcome:
    """`events` as an SSE response (chunked, one chunk per event) through the real stream path."""
    body = [sse(provider, event) for event in events]
    return call([http_head(transfer_encoding="chunked"), *chunked(*body)], provider=provider)


def json_over_the_wire(provider: str, body: Any) -> StreamOutcome:
    raw = data(body)
    return call([http_head(content_type="application/json", content_length=str(len(raw))), raw], provider=provider)


def record_of(outcome: StreamOutcome, provider: str, **estimates: int) -> RequestRecord:
    """The priced record of an outcome, which must serialise."""
    record = build_record(
        outcome,
        **{**IDENTITY, "provider": provider, "model": MODELS[provider]},
        prices=PRICES,
        **estimates,
    )
    orjson.dumps(record_line(record))
    return record


def outcome_of(result: StreamResult) -> StreamOutcome:
    return StreamOutcome(ttft_ms=10.0, e2e_ms=50.0, output_stamps_ms=[10.0, 50.0], result=result)


OPENAI_DONE = b"[DONE]"
ANTHROPIC_START = {
    "type": "message_start",
    "message": {"id": "msg_1", "type": "message", "model": "claude-sonnet-4", "usage": {"input_tokens": 10}},
}
ANTHROPIC_STOP = {"type": "message_stop"}

# --- OpenAI: usage of the wrong type -------------------------------------------------------------------------------


def test_openai_usage_as_a_list() -> None:
    message, result = refused(OPENAI, chunk(choices=[], usage=[1, 2]))
    assert message == "usage is an array, not an object"
    assert result.usage is None
    out = over_the_wire("openai", delta(content="hi"), chunk(choices=[], usage=[1, 2]), OPENAI_DONE)
    assert (out.status, out.message) == (ErrorClass.MALFORMED_EVENT, "usage is an array, not an object")
    assert out.result.text == "hi" and out.result.usage is None
    record_of(out, "openai")


def test_openai_usage_as_a_string() -> None:
    message, result = refused(OPENAI, chunk(choices=[], usage="12 tokens"))
    assert message == "usage is a string, not an object"
    assert result.usage is None


def test_openai_usage_as_a_number() -> None:
    message, result = refused(OPENAI, chunk(choices=[], usage=42))
    assert message == "usage is a number, not an object"
    assert result.usage is None


# --- OpenAI: chunk fields of the wrong type ------------------------------------------------------------------------


def test_openai_delta_content_a_number() -> None:
    message, result = refused(OPENAI, delta(content=5))
    assert message == "choices[0].delta.content is a number, not a string"
    assert result.text_by_choice == {}
    out = over_the_wire("openai", delta(content="hi"), delta(content=5), OPENAI_DONE)
    assert (out.status, out.message) == (ErrorClass.MALFORMED_EVENT, message)
    assert out.result.text == "hi"
    record_of(out, "openai")


def test_openai_delta_refusal_a_number() -> None:
    message, result = refused(OPENAI, delta(refusal=5))
    assert message == "choices[0].delta.refusal is a number, not a string"
    assert result.refusal == ""


def test_openai_delta_reasoning_content_a_number() -> None:
    message, result = refused(OPENAI, delta(reasoning_content=5))
    assert message == "choices[0].delta.reasoning_content is a number, not a string"
    assert result.reasoning == ""


def test_openai_choice_index_a_string() -> None:
    message, result = refused(OPENAI, chunk(choices=[{"index": "0", "delta": {"content": "x"}}]))
    assert message == f"choices[].index is a string, {NOT_AN_INDEX}"
    assert result.text_by_choice == {}


def test_openai_finish_reason_a_number() -> None:
    message, result = refused(OPENAI, chunk(choices=[{"index": 0, "delta": {}, "finish_reason": 7}]))
    assert message == "choices[0].finish_reason is a number, not a string"
    assert result.finish_reason is None and result.finish_by_choice == {}


def test_openai_tool_calls_an_object() -> None:
    message, result = refused(OPENAI, delta(tool_calls={"index": 0, "function": {"name": "f"}}))
    assert message == "choices[0].delta.tool_calls is an object, not an array"
    assert result.tool_calls == []


def test_openai_tool_call_function_a_string() -> None:
    message, result = refused(OPENAI, delta(tool_calls=[{"index": 0, "id": "call_1", "function": "f"}]))
    assert message == "tool_calls[].function is a string, not an object"
    assert [(t.id, t.name, t.arguments) for t in result.tool_calls] == [("call_1", None, "")]


# --- OpenAI: usage counts that are not sane counts ------------------------------------------------------------------


def test_openai_usage_count_1e20_is_rejected_and_listed() -> None:
    raw = b'{"choices": [], "usage": {"prompt_tokens": 1e20, "completion_tokens": 5}}'
    result, flags = feed_one(OPENAI, raw)
    assert flags == 0
    assert result.usage.prompt_tokens is None and result.usage.completion_tokens == 5
    assert result.usage.rejected == ("usage.prompt_tokens=1e+20",)
    out = over_the_wire("openai", delta(content="hi"), raw, OPENAI_DONE)
    assert out.status is ErrorClass.OK
    record = record_of(out, "openai", prompt_tokens_est=7)
    assert record.prompt_tokens is None and record.prompt_tokens_est == 7
    assert record.usage_rejected == "usage.prompt_tokens=1e+20"
    assert orjson.loads(orjson.dumps(record_line(record)))["usage_rejected"] == "usage.prompt_tokens=1e+20"


@pytest.mark.parametrize(
    ("usage", "rejected"),
    [
        ({"prompt_tokens": 10, "completion_tokens": -5}, "usage.completion_tokens=-5"),
        ({"prompt_tokens": -5, "completion_tokens": 10}, "usage.prompt_tokens=-5"),
        (
            {"prompt_tokens": 10, "completion_tokens": 10, "prompt_tokens_details": {"cached_tokens": -5}},
            "usage.prompt_tokens_details.cached_tokens=-5",
        ),
    ],
)
def test_openai_usage_count_negative_is_rejected_and_cost_never_negative(usage: dict, rejected: str) -> None:
    result, _ = feed_one(OPENAI, usage_chunk(**usage))
    assert result.usage.rejected == (rejected,)
    counts = (result.usage.prompt_tokens, result.usage.completion_tokens, result.usage.cached_prompt_tokens)
    assert all(c is None or c >= 0 for c in counts), counts
    for estimates in ({}, {"prompt_tokens_est": 10, "completion_tokens_est": 10}):
        record = record_of(outcome_of(result), "openai", **estimates)
        assert record.cost_usd is None or record.cost_usd >= 0, record.cost_usd
    out = over_the_wire("openai", delta(content="hi"), usage_chunk(**usage), OPENAI_DONE)
    assert out.status is ErrorClass.OK and out.result.usage.rejected == (rejected,)
    record = record_of(out, "openai", prompt_tokens_est=10, completion_tokens_est=10)
    assert record.cost_usd is not None and record.cost_usd >= 0


def test_openai_usage_count_fractional_is_rejected() -> None:
    result, _ = feed_one(OPENAI, usage_chunk(prompt_tokens=10, completion_tokens=3.5))
    assert result.usage.completion_tokens is None and result.usage.prompt_tokens == 10
    assert result.usage.rejected == ("usage.completion_tokens=3.5",)


def test_openai_usage_count_integral_float_is_accepted_as_int() -> None:
    result, _ = feed_one(OPENAI, b'{"choices": [], "usage": {"prompt_tokens": 12.0, "completion_tokens": 3}}')
    assert result.usage.prompt_tokens == 12 and type(result.usage.prompt_tokens) is int
    assert result.usage.rejected == ()
    record = record_of(outcome_of(result), "openai")
    assert orjson.loads(orjson.dumps(record_line(record)))["prompt_tokens"] == 12


def test_openai_usage_count_boolean_is_rejected() -> None:
    result, _ = feed_one(OPENAI, usage_chunk(prompt_tokens=True, completion_tokens=3))
    assert result.usage.prompt_tokens is None and result.usage.completion_tokens == 3
    assert result.usage.rejected == ("usage.prompt_tokens=True",)


# --- OpenAI: non-streamed bodies ----------------------------------------------------------------------------------


def test_openai_body_message_content_a_number() -> None:
    body = {"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": {"content": 5}}]}
    with pytest.raises(MalformedEventError) as caught:
        OPENAI.parse_response(data(body))
    # the field is named; "array" because a string (or null) is read first and anything else must be parts
    assert str(caught.value) == "choices[].message.content is a number, not an array"
    out = json_over_the_wire("openai", body)
    assert (out.status, out.message) == (ErrorClass.MALFORMED_EVENT, str(caught.value))
    record_of(out, "openai")


def test_openai_body_choices_items_strings() -> None:
    body = {"id": "c", "object": "chat.completion", "choices": ["hello", "world"]}
    with pytest.raises(MalformedEventError) as caught:
        OPENAI.parse_response(data(body))
    assert str(caught.value) == "choices[] is a string, not an object"
    out = json_over_the_wire("openai", body)
    assert (out.status, out.message) == (ErrorClass.MALFORMED_EVENT, str(caught.value))


# --- Anthropic -----------------------------------------------------------------------------------------------------


def test_anthropic_text_delta_text_a_number() -> None:
    message, result = refused(ANTHROPIC, text_delta(5), b"content_block_delta")
    assert message == "text_delta.text is a number, not a string"
    assert result.text == ""
    out = over_the_wire("anthropic", ANTHROPIC_START, text_delta("hi"), text_delta(5), ANTHROPIC_STOP)
    assert (out.status, out.message) == (ErrorClass.MALFORMED_EVENT, message)
    assert out.result.text == "hi"
    record_of(out, "anthropic")


def test_anthropic_content_block_delta_delta_a_string() -> None:
    event = {"type": "content_block_delta", "index": 0, "delta": "hi"}
    message, result = refused(ANTHROPIC, event, b"content_block_delta")
    assert message == "content_block_delta.delta is a string, not an object"
    assert result.text == ""


def test_anthropic_message_start_message_a_list() -> None:
    message, result = refused(ANTHROPIC, {"type": "message_start", "message": [1, 2]}, b"message_start")
    assert message == "message_start.message is an array, not an object"
    assert result.response_id is None and result.usage is None


def test_anthropic_message_delta_usage_a_string() -> None:
    event = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": "5"}
    message, result = refused(ANTHROPIC, event, b"message_delta")
    assert message == "message_delta.usage is a string, not an object"
    assert result.usage is None
    assert result.finish_reason == "end_turn"  # read before the usage


def test_anthropic_content_block_start_index_a_string() -> None:
    tool = {"type": "content_block_start", "index": "1", "content_block": {"type": "tool_use", "id": "t", "name": "f"}}
    message, result = refused(ANTHROPIC, tool, b"content_block_start")
    assert message == f"content_block_start.index is a string, {NOT_AN_INDEX}"
    assert result.tool_calls == []
    # a text block's index is never read, so there it is ignored
    text = {"type": "content_block_start", "index": "1", "content_block": {"type": "text", "text": ""}}
    assert feed_one(ANTHROPIC, text, b"content_block_start")[1] == 0
    out = over_the_wire("anthropic", ANTHROPIC_START, tool, text_delta("hi"), ANTHROPIC_STOP)
    assert (out.status, out.message) == (ErrorClass.MALFORMED_EVENT, message)
    record_of(out, "anthropic")


def test_anthropic_body_content_text_a_number() -> None:
    body = {"type": "message", "id": "m", "content": [{"type": "text", "text": 5}], "stop_reason": "end_turn"}
    with pytest.raises(MalformedEventError) as caught:
        ANTHROPIC.parse_response(data(body))
    assert str(caught.value) == "content[].text is a number, not a string"
    out = json_over_the_wire("anthropic", body)
    assert (out.status, out.message) == (ErrorClass.MALFORMED_EVENT, str(caught.value))


def test_anthropic_usage_output_tokens_negative_is_rejected() -> None:
    event = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": -1}}
    result, _ = feed_one(ANTHROPIC, event, b"message_delta")
    assert result.usage.completion_tokens is None
    assert result.usage.rejected == ("usage.output_tokens=-1",)
    out = over_the_wire("anthropic", ANTHROPIC_START, text_delta("hi"), event, ANTHROPIC_STOP)
    assert out.status is ErrorClass.OK
    assert out.result.usage.prompt_tokens == 10 and out.result.usage.completion_tokens is None
    for estimates in ({}, {"completion_tokens_est": 3}):
        record = record_of(out, "anthropic", **estimates)
        assert record.usage_rejected == "usage.output_tokens=-1"
        assert record.cost_usd is None or record.cost_usd >= 0, record.cost_usd


# --- bugs the fuzzer found (fixed; kept as regression tests) ---------------------------------------------------------

UNHASHABLE_BLOCK_TYPE = (
    "a content block whose `type` is an array or object raises TypeError (`kind in _TOOL_BLOCKS` hashes it) "
    "instead of MalformedEventError or being ignored as an unknown block type"
)


@pytest.mark.parametrize("kind", [["text"], {"type": "text"}])
def test_anthropic_content_block_type_unhashable(kind: Any) -> None:
    parser = ANTHROPIC.new_parser()
    event = {"type": "content_block_start", "index": 0, "content_block": {"type": kind, "text": ""}}
    try:
        parser.feed(b"content_block_start", data(event))
    except MalformedEventError as exc:
        assert "content_block" in str(exc)
    parser.result()


def test_anthropic_content_block_type_unhashable_end_to_end() -> None:
    event = {"type": "content_block_start", "index": 0, "content_block": {"type": ["text"]}}
    out = over_the_wire("anthropic", ANTHROPIC_START, event, text_delta("hi"), ANTHROPIC_STOP)
    assert out.status is not ErrorClass.INTERNAL_ERROR, out.message
    record_of(out, "anthropic")


def test_anthropic_body_content_type_unhashable() -> None:
    body = {"type": "message", "content": [{"type": {"a": 1}}, {"type": "text", "text": "hi"}]}
    try:
        result = ANTHROPIC.parse_response(data(body))
    except MalformedEventError as exc:
        assert "content[]" in str(exc)
    else:
        assert result.text == "hi"


SELF_REFUSAL = (
    "the adapter refuses its own protocol's shape with UnsupportedAPIError telling the user to use the provider "
    "they already use (`this is an OpenAI-style Chat Completions stream: use provider 'openai'`, or the Anthropic "
    "twin) instead of reading it or naming the malformed field"
)


def test_openai_choices_null_in_a_usage_chunk() -> None:
    result, flags = feed_one(OPENAI, chunk(choices=None, usage={"prompt_tokens": 10, "completion_tokens": 2}))
    assert flags == 0
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (10, 2)


def test_openai_choices_null_in_a_usage_chunk_end_to_end() -> None:
    usage = chunk(choices=None, usage={"prompt_tokens": 10, "completion_tokens": 2})
    out = over_the_wire("openai", delta(content="hi"), usage, OPENAI_DONE)
    assert out.status is ErrorClass.OK, (out.status, out.message)
    assert out.result.usage.completion_tokens == 2


def test_openai_body_choices_a_string() -> None:
    with pytest.raises(MalformedEventError, match="choices"):
        OPENAI.parse_response(b'{"id": "c", "object": "chat.completion", "choices": "hello"}')


def test_anthropic_body_content_a_string() -> None:
    with pytest.raises(MalformedEventError, match="content"):
        ANTHROPIC.parse_response(b'{"type": "message", "id": "m", "content": "hello", "stop_reason": "end_turn"}')


def test_anthropic_message_object_as_a_stream_event() -> None:
    """A whole Messages body sent as one event is our own shape in the wrong place: tolerated as an unknown event
    type (as Anthropic asks of clients), so it carries no output and does not end the stream."""
    parser = ANTHROPIC.new_parser()
    flags = parser.feed(b"message", b'{"type": "message", "content": [{"type": "text", "text": "hi"}]}')
    result = parser.result()
    assert flags == 0
    assert (result.text, result.output_events, result.terminal) == ("", 0, False)


@pytest.mark.parametrize(
    "body",
    [b'{"type": "message_start"}', b'{"type": "content_block_delta", "delta": {}}', b'{"type": "message_stop"}'],
    ids=["message_start", "content_block_delta", "message_stop"],
)
def test_anthropic_body_that_is_one_stream_event(body: bytes) -> None:
    try:
        ANTHROPIC.parse_response(body)
    except UnsupportedAPIError as exc:
        assert str(exc) != errors_body.ANTHROPIC_MESSAGES, str(exc)
    except MalformedEventError:
        pass
