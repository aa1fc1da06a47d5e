"""The output a parser keeps (loadlib.providers.kept): exact below the budget, cut and counted above it, and one
string per GROUP fragments however small they are (the memory bound docs/metrics.md states)."""

from __future__ import annotations

import orjson

from loadlib.providers.base import StreamResult, ToolCall
from loadlib.providers.kept import GROUP, Budget, Kept, capped
from loadlib.providers.registry import get_adapter
from loadlib.records.tokens import scaled


def test_a_budget_keeps_what_fits_and_counts_the_rest() -> None:
    b = Budget(5)
    assert (b.take("abc"), b.take("defg"), b.take("h")) == ("abc", "de", "")
    assert (b.room, b.dropped) == (0, 3)


def test_kept_text_is_exact_and_holds_one_string_per_group() -> None:
    kept = Kept(Budget(10**6))
    pieces = [chr(97 + i % 26) for i in range(10 * GROUP + 7)]
    for p in pieces:
        kept.append(p)
    assert kept.value() == "".join(pieces)
    assert len(kept._chunks) == 10 and len(kept._tail) == 7


def test_kinds_share_one_budget_per_response() -> None:
    budget = Budget(6)
    text, reasoning = Kept(budget), Kept(budget)
    text.append("1234")
    reasoning.append("5678")
    text.append("9")
    assert (text.value(), reasoning.value(), budget.dropped) == ("1234", "56", 3)


def chunk(content: str) -> bytes:
    return orjson.dumps({"choices": [{"index": 0, "delta": {"content": content}}]})


def test_an_openai_stream_past_the_budget_keeps_its_head_and_counts_the_rest() -> None:
    parser = get_adapter("openai").new_parser(1024)
    for _ in range(3000):
        parser.feed(b"", chunk("x"))
    parser.feed(b"", b"[DONE]")
    r = parser.result()
    assert (r.text, r.text_dropped, r.output_events, r.terminal) == ("x" * 1024, 3000 - 1024, 3000, True)


def test_an_anthropic_stream_shares_the_budget_between_text_and_tool_arguments() -> None:
    parser = get_adapter("anthropic").new_parser(1024)
    start = {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t", "name": "f"}}
    text = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a" * 1000}}
    args = {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "b" * 50}}
    for event in (start, text, args):
        parser.feed(b"", orjson.dumps(event))
    r = parser.result()
    assert (len(r.text), r.tool_calls[0].arguments, r.text_dropped) == (1000, "b" * 24, 26)


def test_a_body_is_held_to_the_same_budget_and_an_answer_within_it_is_untouched() -> None:
    whole = StreamResult(text_by_choice={0: "a" * 10}, reasoning="r" * 5, tool_calls=[ToolCall(0, "t", "f", "{}")])
    assert capped(whole, 100) is whole
    cut = capped(whole, 12)
    assert (cut.text, cut.reasoning, cut.tool_calls[0].arguments, cut.text_dropped) == ("a" * 10, "rr", "", 5)


def test_a_token_estimate_of_kept_text_scales_to_the_whole_output() -> None:
    assert scaled(100, 1000, 0) == 100
    assert scaled(100, 1000, 3000) == 400
    assert scaled(0, 0, 50) == 0
