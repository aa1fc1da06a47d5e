"""Usage counts that are each sane but impossible together (loadlib/providers/usage.py): every count of the
combination is rejected and the reason names each field, as a count that is not sane is; the record then prices the
estimate, never the impossible numbers. The rules are the APIs' definitions: OpenAI's cached and reasoning tokens are
parts of prompt and completion and `total_tokens` is their sum; Anthropic's cache counts add to `input_tokens`, and
the usage's prompt is their sum (the whole prompt, as OpenAI's)."""

from __future__ import annotations

import orjson
import pytest

from loadlib.errors import ErrorClass
from loadlib.providers.anthropic import AnthropicAdapter
from loadlib.providers.base import StreamResult, Usage
from loadlib.providers.fields import MAX_COUNT
from loadlib.providers.openai import OpenAIAdapter
from loadlib.providers.usage import anthropic_usage, openai_usage
from loadlib.records.build import build_record
from loadlib.records.pricing import PriceTable
from loadlib.records.record import RequestRecord
from loadlib.transport.stream import StreamOutcome
from tests.support.records import IDENTITY
from tests.support.wire import call, chunked, http_head

OPENAI = OpenAIAdapter()
ANTHROPIC = AnthropicAdapter()
PRICES = PriceTable.load(None)
MODELS = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4"}
PROMPT_EST, COMPLETION_EST = 12, 20


def counts(u: Usage) -> tuple[int | None, ...]:
    return u.prompt_tokens, u.completion_tokens, u.cached_prompt_tokens, u.reasoning_tokens


def record_of(result: StreamResult, provider: str = "openai") -> RequestRecord:
    outcome = StreamOutcome(ttft_ms=10.0, e2e_ms=50.0, output_stamps_ms=[10.0, 50.0], result=result)
    ids = {**IDENTITY, "provider": provider, "model": MODELS[provider]}
    return build_record(
        outcome, **ids, prices=PRICES, prompt_tokens_est=PROMPT_EST, completion_tokens_est=COMPLETION_EST
    )


def estimate_cost(provider: str = "openai") -> float:
    return PRICES.cost(MODELS[provider], PROMPT_EST, COMPLETION_EST)


# --- OpenAI ---------------------------------------------------------------------------------------------------------

CACHED_1M = {"prompt_tokens": 10, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 1_000_000}}
IMPOSSIBLE = [
    (CACHED_1M, "usage.prompt_tokens_details.cached_tokens=1000000 > usage.prompt_tokens=10", (None, 20, None, None)),
    (
        {"prompt_tokens": 10, "completion_tokens": 20, "completion_tokens_details": {"reasoning_tokens": 21}},
        "usage.completion_tokens_details.reasoning_tokens=21 > usage.completion_tokens=20",
        (10, None, None, None),
    ),
    (
        {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 31},
        "usage.total_tokens=31 != usage.prompt_tokens=10 + usage.completion_tokens=20",
        (None, None, None, None),
    ),
    (
        {"prompt_tokens": 10, "completion_tokens": 20, "prompt_cache_hit_tokens": 11},
        "usage.prompt_cache_hit_tokens=11 > usage.prompt_tokens=10",
        (None, 20, None, None),
    ),
    (
        {"completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 5}},
        "usage.prompt_tokens_details.cached_tokens=5 without a sane usage.prompt_tokens",
        (None, 20, None, None),
    ),
]


@pytest.mark.parametrize(("usage", "reason", "kept"), IMPOSSIBLE)
def test_openai_impossible_combination_is_rejected_and_named(usage: dict, reason: str, kept: tuple) -> None:
    u = openai_usage(usage)
    assert (counts(u), u.rejected) == (kept, (reason,))


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
        {"prompt_tokens": 10, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 10}},
        {"prompt_tokens": 10, "completion_tokens": 20, "completion_tokens_details": {"reasoning_tokens": 20}},
        {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "prompt_tokens_details": {"cached_tokens": 0}},
        {"completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 0}},  # 0 is a part of anything
        {"prompt_tokens": 10, "total_tokens": 99},  # a total without both parts is not checked
        {"prompt_tokens": MAX_COUNT, "completion_tokens": MAX_COUNT, "total_tokens": 2 * MAX_COUNT},
    ],
)
def test_openai_possible_boundaries_are_accepted(usage: dict) -> None:
    assert openai_usage(usage).rejected == ()


def test_openai_total_that_is_not_a_count_is_ignored() -> None:
    """The total is never used: one of the wrong type is no evidence against the parts, and no reason to list."""
    u = openai_usage({"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": "30"})
    assert (counts(u), u.rejected) == ((10, 20, None, None), ())


def test_openai_total_mismatch_takes_the_parts_details_with_it() -> None:
    usage = {
        "prompt_tokens": 10,
        "completion_tokens": 20,
        "total_tokens": 29,
        "prompt_tokens_details": {"cached_tokens": 4},
    }
    u = openai_usage(usage)
    assert counts(u) == (None, None, None, None)
    assert u.rejected[1] == "usage.prompt_tokens_details.cached_tokens=4 without a sane usage.prompt_tokens"


def test_openai_not_sane_whole_takes_its_part() -> None:
    u = openai_usage({"prompt_tokens": -1, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 9}})
    assert u.rejected == (
        "usage.prompt_tokens=-1",
        "usage.prompt_tokens_details.cached_tokens=9 without a sane usage.prompt_tokens",
    )


def test_the_issue_case_costs_the_estimate_not_16700_times_more() -> None:
    """22 requests of cached 1,000,000 of a 10-token prompt came to $1.65 (16,700 times the real cost)."""
    parser = OPENAI.new_parser()
    parser.feed(b"", orjson.dumps({"choices": [], "usage": CACHED_1M}))
    record = record_of(parser.result())
    assert record.status is ErrorClass.OK and record.cached_prompt_tokens is None and record.prompt_tokens is None
    assert record.usage_rejected == "usage.prompt_tokens_details.cached_tokens=1000000 > usage.prompt_tokens=10"
    assert record.cost_usd == pytest.approx(estimate_cost())


def test_openai_body_and_groq_usage_follow_the_same_rules() -> None:
    body = {"object": "chat.completion", "choices": [], "usage": {**CACHED_1M, "total_tokens": 30}}
    assert OPENAI.parse_response(orjson.dumps(body)).usage.rejected == (IMPOSSIBLE[0][1],)
    parser = OPENAI.new_parser()
    parser.feed(
        b"",
        orjson.dumps(
            {"choices": [], "x_groq": {"usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 3}}}
        ),
    )
    assert parser.result().usage.rejected == (
        "x_groq.usage.total_tokens=3 != x_groq.usage.prompt_tokens=1 + x_groq.usage.completion_tokens=1",
    )


def test_openai_impossible_usage_over_the_wire_is_ok_with_the_reason() -> None:
    events = [
        {"choices": [{"index": 0, "delta": {"content": "hi"}}]},
        {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 20, "total_tokens": 99}},
    ]
    body = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    out = call([http_head(transfer_encoding="chunked"), *chunked(body)])
    assert out.status is ErrorClass.OK
    assert out.result.usage.rejected == (
        "usage.total_tokens=99 != usage.prompt_tokens=12 + usage.completion_tokens=20",
    )


# --- Anthropic ------------------------------------------------------------------------------------------------------


def test_anthropic_cache_read_above_input_is_normal() -> None:
    """Anthropic's input_tokens excludes cache reads (a captured reply: input 4, cache read 1165): the prompt is
    their sum."""
    u = anthropic_usage({"input_tokens": 4, "output_tokens": 1, "cache_read_input_tokens": 1165})
    assert (counts(u), u.cache_write_tokens, u.rejected) == ((1169, 1, 1165, None), None, ())


def test_anthropic_prompt_is_input_plus_cache_read_plus_cache_write() -> None:
    raw = {"input_tokens": 21, "output_tokens": 9, "cache_read_input_tokens": 640, "cache_creation_input_tokens": 128}
    u = anthropic_usage(raw)
    assert (counts(u), u.cache_write_tokens, u.rejected) == ((789, 9, 640, None), 128, ())


@pytest.mark.parametrize(
    ("usage", "reason", "kept"),
    [
        (
            {"output_tokens": 5, "cache_read_input_tokens": 640},
            "usage.cache_read_input_tokens=640 without a sane whole prompt (usage.input_tokens and its cache counts)",
            (None, 5, None, None),
        ),
        (
            {"input_tokens": 21, "output_tokens": 5, "cache_read_input_tokens": -1, "cache_creation_input_tokens": 3},
            "usage.cache_read_input_tokens=-1",
            (None, 5, None, None),
        ),
        (
            {"input_tokens": 1.5, "output_tokens": 5, "cache_read_input_tokens": 0},
            "usage.input_tokens=1.5",
            (None, 5, 0, None),
        ),
    ],
)
def test_anthropic_prompt_unknown_when_a_part_is_not_sane(usage: dict, reason: str, kept: tuple) -> None:
    """The whole prompt needs every part the server sent: without one it is unknown (the estimate is used), not the
    uncached part alone; a non-zero cache count is then a part of no whole and goes too."""
    u = anthropic_usage(usage)
    assert counts(u) == kept and u.rejected[0] == reason


def test_anthropic_prompt_beyond_max_count_is_rejected_and_named() -> None:
    raw = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_read_input_tokens": MAX_COUNT,
        "cache_creation_input_tokens": 1,
    }
    u = anthropic_usage(raw)
    assert (u.prompt_tokens, u.completion_tokens, u.cached_prompt_tokens, u.cache_write_tokens) == (
        None,
        5,
        None,
        None,
    )
    assert u.rejected == (
        "usage.input_tokens=10 + usage.cache_read_input_tokens=1000000000 + usage.cache_creation_input_tokens=1"
        f" > {MAX_COUNT}",
    )


def test_anthropic_prompt_at_max_count_is_accepted() -> None:
    raw = {"input_tokens": MAX_COUNT - 1, "cache_read_input_tokens": 1, "output_tokens": 3}
    assert anthropic_usage(raw).rejected == ()


def test_anthropic_stream_merges_then_checks() -> None:
    """message_start's provisional usage and message_delta's cumulative one are merged before the check."""
    start = {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 10, "output_tokens": 1}}}
    final = {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 7, "cache_read_input_tokens": MAX_COUNT}}
    parser = ANTHROPIC.new_parser()
    for event in (start, final):
        parser.feed(event["type"].encode(), orjson.dumps(event))
    record = record_of(parser.result(), "anthropic")
    assert record.usage_rejected == f"usage.input_tokens=10 + usage.cache_read_input_tokens={MAX_COUNT} > {MAX_COUNT}"
    assert (record.prompt_tokens, record.completion_tokens, record.cached_prompt_tokens) == (None, 7, None)
    cost = PRICES.cost(MODELS["anthropic"], PROMPT_EST, 7)
    assert record.cost_usd == pytest.approx(cost)
