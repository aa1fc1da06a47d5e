"""Stream TPOT, the stream tail, usage provenance and disagreement on the record (docs/records.md)."""

from __future__ import annotations

from array import array
from typing import Any

import orjson
import pytest

from loadlib.errors import ErrorClass
from loadlib.providers.anthropic import AnthropicAdapter
from loadlib.providers.base import StreamResult, Usage
from loadlib.providers.openai import OpenAIAdapter
from loadlib.records.build import build_record, disagrees, stream_tail_ms, stream_tpot_ms
from loadlib.records.pricing import PriceTable
from loadlib.transport.stream import StreamOutcome

PRICES = PriceTable.from_mapping({"models": {}}, "test")


def record(out: StreamOutcome, **kw: Any):
    fields = {"run_id": "r", "scenario": "s", "endpoint": "e", "provider": "openai", "model": "m"}
    return build_record(out, worker_id="w", request_id="1", start_unix_ns=1, prices=PRICES, **fields, **kw)


def stream(stamps: list[float], e2e: float, usage: Usage | None = None, source: str | None = "stream") -> StreamOutcome:
    out = StreamOutcome(ttft_ms=stamps[0], e2e_ms=e2e, output_stamps_ms=array("d", stamps), streamed=True)
    out.result = StreamResult(text_by_choice={0: "x"}, usage=usage, usage_source=source if usage else None)
    return out


def test_stream_tpot_is_the_mean_gap_and_the_tail_is_what_follows_the_last_token() -> None:
    out = stream([100.0, 110.0, 120.0, 130.0], 230.0, Usage(prompt_tokens=5, completion_tokens=4))
    r = record(out)
    assert r.stream_tpot_ms == 10.0 and r.stream_tail_ms == 100.0
    assert r.tpot_ms == pytest.approx(130.0 / 3), "TPOT carries the tail: (E2E - TTFT) / (tokens - 1)"


def test_stream_tpot_ignores_the_servers_token_count() -> None:
    r = record(stream([0.0, 10.0, 20.0], 20.5, Usage(prompt_tokens=5, completion_tokens=9)))
    assert r.stream_tpot_ms == 10.0 and r.tpot_ms == pytest.approx(20.5 / 8)


@pytest.mark.parametrize(
    ("stamps", "streamed", "status", "tpot", "tail"),
    [
        ([50.0], True, ErrorClass.OK, None, 0.5),  # one event: a tail but no per-token time
        ([50.0, 60.0], True, ErrorClass.TIMEOUT_IDLE, None, None),  # failed: no distribution value
        ([50.5], False, ErrorClass.OK, None, None),  # a non-streamed body has no tail
    ],
)
def test_undefined_cases(stamps: list[float], streamed: bool, status: ErrorClass, tpot: Any, tail: Any) -> None:
    out = stream(stamps, 50.5)
    out.streamed, out.status = streamed, status
    r = record(out)
    assert (r.stream_tpot_ms, r.stream_tail_ms) == (tpot, tail)


def test_pure_helpers() -> None:
    assert stream_tpot_ms([]) is None and stream_tpot_ms([5.0]) is None
    assert stream_tail_ms([], 10.0) is None and stream_tail_ms([10.0], 9.0) == 0.0
    assert disagrees((None, 10), (100, None)) is None
    assert disagrees((100, 109)) is False and disagrees((100, 111)) is True
    assert disagrees((100, 100), (150, 100)) is True


def test_usage_source_and_disagreement() -> None:
    out = stream([0.0, 1.0], 2.0, Usage(prompt_tokens=10, completion_tokens=30), source="final_chunk")
    r = record(out, prompt_tokens_est=10, completion_tokens_est=20)
    assert (r.usage_source, r.usage_disagrees) == ("final_chunk", True)
    r = record(stream([0.0, 1.0], 2.0), prompt_tokens_est=10, completion_tokens_est=2)
    assert (r.usage_source, r.usage_disagrees) == ("estimated", None), "no server count: nothing to disagree with"
    assert record(stream([0.0, 1.0], 2.0)).usage_source is None


def openai_chunk(**fields: Any) -> bytes:
    return orjson.dumps({"id": "c", "object": "chat.completion.chunk", "model": "m", **fields})


@pytest.mark.parametrize(
    ("events", "source"),
    [
        (
            [
                openai_chunk(choices=[{"index": 0, "delta": {"content": "a"}, "finish_reason": "stop"}]),
                openai_chunk(choices=[], usage={"prompt_tokens": 1, "completion_tokens": 1}),
            ],
            "stream",
        ),
        (
            [
                openai_chunk(
                    choices=[{"index": 0, "delta": {"content": "a"}, "finish_reason": "stop"}],
                    usage={"prompt_tokens": 1, "completion_tokens": 1},
                )
            ],
            "final_chunk",
        ),
        ([openai_chunk(choices=[{"index": 0, "delta": {"content": "a"}, "finish_reason": "stop"}])], None),
        (  # LiteLLM: a usage-only chunk with an empty delta after the finish chunk is a usage chunk of its own
            [
                openai_chunk(choices=[{"index": 0, "delta": {"content": "a"}, "finish_reason": "stop"}]),
                openai_chunk(choices=[{"index": 0, "delta": {}}], usage={"prompt_tokens": 1, "completion_tokens": 1}),
            ],
            "stream",
        ),
        (  # usage on the finish chunk, with an empty delta: still the chunk that carried the finish reason
            [
                openai_chunk(choices=[{"index": 0, "delta": {"content": "a"}}]),
                openai_chunk(
                    choices=[{"index": 0, "delta": {}, "finish_reason": "length"}],
                    usage={"prompt_tokens": 1, "completion_tokens": 1},
                ),
            ],
            "final_chunk",
        ),
    ],
)
def test_openai_parser_says_where_usage_sat(events: list[bytes], source: str | None) -> None:
    parser = OpenAIAdapter().new_parser()
    for data in events:
        parser.feed(b"", data)
    assert parser.result().usage_source == source


def test_body_and_anthropic_sources() -> None:
    body = {"id": "c", "choices": [{"index": 0, "message": {"content": "a"}}], "usage": {"prompt_tokens": 1}}
    assert OpenAIAdapter().parse_response(orjson.dumps(body)).usage_source == "body"
    parser = AnthropicAdapter().new_parser()
    start = {"type": "message_start", "message": {"id": "m", "model": "c", "usage": {"input_tokens": 3}}}
    parser.feed(b"message_start", orjson.dumps(start))
    assert parser.result().usage_source == "stream_start", "message_start alone: the final usage never came"
    parser.feed(b"message_delta", orjson.dumps({"type": "message_delta", "delta": {}, "usage": {"output_tokens": 2}}))
    assert parser.result().usage_source == "stream"
