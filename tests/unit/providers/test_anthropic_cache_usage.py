"""Anthropic usage with prompt caching (issue 35): the record's prompt is the whole prompt, input_tokens + cache read +
cache write, on both wire shapes, byte for byte as captured.

Anthropic sends input_tokens (only the prompt after the last cache breakpoint) and the cache counts in message_start
and output_tokens in message_delta. vLLM 0.32's /v1/messages sends the whole prompt as message_start's input_tokens,
then the uncached part as message_delta's, beside the cache counts. Both must give the prompt the OpenAI route of the
same server reports (1,182 tokens for the vLLM captures: its /v1/chat/completions said prompt_tokens 1182, cached
1152), never the uncached part (30), which made support_chat report prompts of 20-90 tokens and the usage check a
server/estimate ratio of 0.06.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary, usage_lines
from loadlib.providers.anthropic import AnthropicAdapter
from loadlib.providers.base import StreamResult
from loadlib.records.build import build_record
from loadlib.records.pricing import PriceTable
from loadlib.records.record import RequestRecord
from loadlib.scenarios.documents import truncation_check
from loadlib.transport.sse import SSEDecoder
from loadlib.transport.stream import StreamOutcome
from tests.support.records import IDENTITY

FIXTURES = Path(__file__).resolve().parent.parent.parent / "fixtures" / "sse"
ADAPTER = AnthropicAdapter()
PRICES = PriceTable.load(None)
# vLLM 0.32's non-streamed /v1/messages body (curl, 2026-12-07, the server of the vllm/messages-0.32-* captures): the
# same 1,152-token system prompt, read from the cache, and a shorter question.
VLLM_BODY = (
    b'{"id":"chatcmpl-b5ee1585b2b7b9b4","type":"message","role":"assistant","content":[{"type":"text","text":" setAc'
    b' dollarsAc dollarsAc dollarsAc"}],"model":"tiny-llama","stop_reason":"max_tokens","usage":{"input_tokens":33,'
    b'"output_tokens":8,"cache_creation_input_tokens":0,"cache_read_input_tokens":1152}}'
)


def events(name: str) -> list[tuple[bytes, bytes]]:
    return [(event, data) for _, event, data in SSEDecoder().feed((FIXTURES / name).read_bytes(), 0.0)]


def parsed(name: str, upto: bytes | None = None) -> StreamResult:
    """The fixture's stream through the adapter; `upto`: only its events before the first of that type (a cut)."""
    parser = ADAPTER.new_parser()
    for event, data in events(name):
        if event == upto:
            break
        parser.feed(event, data)
    return parser.result()


def record_of(result: StreamResult, estimate: int, model: str = "claude-sonnet-4") -> RequestRecord:
    outcome = StreamOutcome(ttft_ms=10.0, e2e_ms=90.0, output_stamps_ms=[10.0, 90.0], result=result)
    ids = {**IDENTITY, "provider": "anthropic", "model": model, "scenario": "support_chat"}
    return build_record(outcome, **ids, prices=PRICES, prompt_tokens_est=estimate, completion_tokens_est=None)


def parts(result: StreamResult) -> tuple[int | None, ...]:
    u = result.usage
    assert u is not None and u.rejected == ()
    return u.prompt_tokens, u.cached_prompt_tokens, u.cache_write_tokens, u.completion_tokens


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # Anthropic: message_start input 4 + cache read 1165 (+ write 0); message_delta output 221 only
        ("anthropic/messages-prompt-cache-read.sse", (1169, 1165, 0, 221)),
        # vLLM 0.32, cold: message_start input 1182; message_delta input 30 + write 1152 + read 0, output 8
        ("vllm/messages-0.32-prefix-cache-write.sse", (1182, 0, 1152, 8)),
        # vLLM 0.32, warm: message_start input 1182; message_delta input 30 + read 1152 + write 0, output 8
        ("vllm/messages-0.32-prefix-cache-read.sse", (1182, 1152, 0, 8)),
    ],
)
def test_the_prompt_is_input_plus_cache_read_plus_cache_write(name: str, expected: tuple[int, ...]) -> None:
    assert parts(parsed(name)) == expected


def test_vllm_whole_prompt_agrees_with_its_message_start() -> None:
    """vLLM states the whole prompt itself in message_start: the merged parts add up to it."""
    for name in ("vllm/messages-0.32-prefix-cache-write.sse", "vllm/messages-0.32-prefix-cache-read.sse"):
        stated = parsed(name, upto=b"content_block_start").usage
        assert stated is not None and (stated.prompt_tokens, stated.cached_prompt_tokens) == (1182, None)
        assert parts(parsed(name))[0] == stated.prompt_tokens


def test_a_stream_cut_after_message_start_keeps_the_whole_prompt_on_both_shapes() -> None:
    """Cut before message_delta (the run's end, a broken stream): vLLM's message_start holds the whole prompt,
    Anthropic's holds input and cache counts; neither is read as the uncached part. Their output counts (Anthropic's
    1, vLLM's 0) are placeholders: the completion is left to the estimate (issue 36)."""
    anthropic = parsed("anthropic/messages-prompt-cache-read.sse", upto=b"message_delta")
    assert parts(anthropic) == (1169, 1165, 0, None) and anthropic.usage_source == "stream_start"
    vllm = parsed("vllm/messages-0.32-prefix-cache-read.sse", upto=b"message_delta")
    assert parts(vllm) == (1182, None, None, None) and vllm.usage_source == "stream_start"


def test_vllm_non_streamed_body() -> None:
    assert parts(ADAPTER.parse_response(VLLM_BODY)) == (1185, 1152, 0, 8)


def test_the_record_agrees_with_an_estimate_of_the_whole_prompt() -> None:
    """The usage check compares the server's prompt with our count of what we sent: the whole prompt."""
    record = record_of(parsed("vllm/messages-0.32-prefix-cache-read.sse"), estimate=1190)
    assert (record.prompt_tokens, record.cached_prompt_tokens, record.cache_write_tokens) == (1182, 1152, 0)
    assert record.usage_disagrees is False and record.cache_reported_prompt_tokens == 1182
    assert truncation_check(0.9)(None, record) is None, "a cache read is no truncation"


def test_cost_prices_each_part_of_the_prompt_at_its_own_price() -> None:
    """claude-sonnet-4: input $3, cache read $0.30, 5-minute cache write $3.75, output $15 per million."""
    read = record_of(parsed("anthropic/messages-prompt-cache-read.sse"), estimate=1170)
    assert read.cost_usd == pytest.approx((4 * 3.0 + 1165 * 0.30 + 221 * 15.0) / 1e6)
    write = record_of(parsed("vllm/messages-0.32-prefix-cache-write.sse"), estimate=1190)
    assert write.cost_usd == pytest.approx((30 * 3.0 + 1152 * 3.75 + 8 * 15.0) / 1e6)


def test_no_usage_warning_from_cache_reads() -> None:
    """Twenty cached turns: the server's prompt and our estimate agree, so the usage check says nothing (it said
    'median server/estimate 0.06' when the prompt was the uncached part)."""
    stats = LLMStats()
    for _ in range(20):
        stats.add(record_of(parsed("vllm/messages-0.32-prefix-cache-read.sse"), estimate=1190))
    summary = build_summary(stats, 10.0, None, {"run_id": "r"})
    (row,) = summary["rows"]
    assert row["token_estimate"]["prompt"]["over_10pct"] == 0 and row["cache_hit_rate"] == round(1152 / 1182, 6)
    assert usage_lines(summary["rows"]) == []
