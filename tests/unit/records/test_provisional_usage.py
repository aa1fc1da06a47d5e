"""A stream that ended before its final usage (issue 36): the record's completion is our estimate, as on the OpenAI
route, never Anthropic message_start's provisional output_tokens 1, and its tokens and cost say so
(docs/metrics.md, "Tokens and cost"; docs/records.md, `usage_source`)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from loadlib.errors import ErrorClass
from loadlib.providers.anthropic import AnthropicAdapter
from loadlib.providers.base import StreamResult
from loadlib.providers.openai import OpenAIAdapter
from loadlib.records.build import build_record
from loadlib.records.pricing import PriceTable
from loadlib.records.record import RequestRecord
from loadlib.transport.stream import StreamOutcome
from tests.support.records import IDENTITY

PRICES = PriceTable.load(None)
MODEL = "claude-sonnet-4"  # priced, with cached-input and cache-write prices
TEXTS = ("One", " two", " three", " four", " five")
ESTIMATE, PROMPT_EST = 5, 11  # our count of the five deltas, and of the prompt sent
START_USAGE = {"input_tokens": 4, "cache_read_input_tokens": 6, "cache_creation_input_tokens": 0, "output_tokens": 1}


def anthropic_stream(final: bool) -> StreamResult:
    """message_start with the provisional usage, five text deltas and, when `final`, message_delta's output 20."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "m", "usage": START_USAGE}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        *({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}} for t in TEXTS),
    ]
    if final:
        events.append({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 20}})
    parser = AnthropicAdapter().new_parser()
    for event in events:
        parser.feed(event["type"].encode(), orjson.dumps(event))
    return parser.result()


def openai_stream() -> StreamResult:
    """The same five deltas on the OpenAI route, broken before its usage chunk."""
    parser = OpenAIAdapter().new_parser()
    for text in TEXTS:
        parser.feed(b"", orjson.dumps({"id": "c", "choices": [{"index": 0, "delta": {"content": text}}]}))
    return parser.result()


def record_of(result: StreamResult, status: ErrorClass, provider: str, estimate: int | None) -> RequestRecord:
    outcome = StreamOutcome(ttft_ms=10.0, e2e_ms=90.0, output_stamps_ms=[10.0, 90.0], result=result, status=status)
    ids = {**IDENTITY, "provider": provider, "model": MODEL}
    return build_record(outcome, **ids, prices=PRICES, prompt_tokens_est=PROMPT_EST, completion_tokens_est=estimate)


@pytest.mark.parametrize("status", [ErrorClass.STREAM_BROKEN, ErrorClass.CUT_OFF, ErrorClass.PROVIDER_ERROR])
def test_an_anthropic_stream_without_message_delta_takes_the_estimate(status: ErrorClass) -> None:
    r = record_of(anthropic_stream(final=False), status, "anthropic", ESTIMATE)
    assert (r.prompt_tokens, r.cached_prompt_tokens, r.cache_write_tokens) == (10, 6, 0), "the start's prompt is kept"
    assert (r.completion_tokens, r.output_tokens, r.usage_source) == (None, ESTIMATE, "stream_start")
    assert r.cost_usd == pytest.approx(PRICES.cost(MODEL, 10, ESTIMATE, 6, 0))


def test_both_routes_count_the_same_broken_stream_alike() -> None:
    """Five deltas, then the connection lost: 5 output tokens on either route (Anthropic's said 1)."""
    anthropic = record_of(anthropic_stream(final=False), ErrorClass.STREAM_BROKEN, "anthropic", ESTIMATE)
    openai = record_of(openai_stream(), ErrorClass.STREAM_BROKEN, "openai", ESTIMATE)
    assert anthropic.output_tokens == openai.output_tokens == ESTIMATE
    assert (openai.usage_source, anthropic.usage_source) == ("estimated", "stream_start")


def test_a_complete_stream_keeps_the_servers_output_count() -> None:
    """message_delta arrived: its output count is the server's, and no estimate replaces it."""
    r = record_of(anthropic_stream(final=True), ErrorClass.OK, "anthropic", None)
    assert (r.prompt_tokens, r.completion_tokens, r.usage_source) == (10, 20, "stream")
    assert r.cost_usd == pytest.approx(PRICES.cost(MODEL, 10, 20, 6, 0))
