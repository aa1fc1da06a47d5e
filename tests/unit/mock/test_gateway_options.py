"""The mock as if behind an LLM gateway: a held stream end (terminal_delay_ms), a usage that reports the prompt as
sent (usage_prompt), and a long-document canary quoted only when the part of the prompt the mock kept holds it."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
from typing import Any

import orjson
import pytest

from loadlib.data import canary
from loadlib.mock import prompt as prompt_module
from loadlib.mock.cli import build_parser
from loadlib.mock.llm_request import parse_call
from loadlib.mock.llm_response import Answer, prompt_answer, stream_renderer, whole_body
from loadlib.mock.plan import billed_prompt_tokens, make_plan, reported_prompt_tokens
from loadlib.mock.prompt import LARGE_PROMPT_BYTES, PromptCount, canary_position, content_key, find_canary, measure
from loadlib.mock.render import text
from loadlib.mock.server import MockServer
from loadlib.mock.truth import TruthRecord
from loadlib.mockapi.config import KEYS, MockConfig, MockConfigError, parse_overrides, resolve
from loadlib.records.tokens import count_chat, count_text

CODE = canary.code_for("doc-1")
DOC = " ".join(["The supplier shall deliver the goods within thirty days of the order."] * 120)
SYSTEM = {"role": "system", "content": "Summarise the document."}
FORMS = [("openai", False), ("openai", True), ("anthropic", False), ("anthropic", True)]


def doc_messages(after: str = "") -> list[dict[str, Any]]:
    """A system message, then the document ending in its canary line (and `after`, if any)."""
    return [SYSTEM, {"role": "user", "content": canary.with_canary(DOC, CODE) + after}]


# settings


def test_keys_parse_with_their_types() -> None:
    got = parse_overrides("terminal_delay_ms=120.5,usage_prompt=SENT,quote-canary=never")
    assert got == {"terminal_delay_ms": 120.5, "usage_prompt": "sent", "quote_canary": "never"}
    cfg = MockConfig()
    assert (cfg.terminal_delay_ms, cfg.usage_prompt, cfg.quote_canary) == (0.0, "billed", "kept")


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("terminal_delay_ms=-1", "terminal_delay_ms must be >= 0"),
        ("terminal_delay_ms=soon", "terminal_delay_ms must be a number"),
        ("terminal_delay_ms=nan", "terminal_delay_ms must be >= 0"),
        ("usage_prompt=both", "usage_prompt must be one of billed, sent"),
        ("quote_canary=always", "quote_canary must be one of kept, never"),
    ],
)
def test_bad_values_say_which_key(spec: str, fragment: str) -> None:
    with pytest.raises(MockConfigError, match=fragment):
        parse_overrides(spec)


def test_model_suffix_and_header_set_them() -> None:
    cfg, model = resolve(MockConfig(), "usage_prompt=sent", "gpt-4o::terminal_delay_ms=100,quote_canary=never")
    assert model == "gpt-4o"
    assert (cfg.terminal_delay_ms, cfg.usage_prompt, cfg.quote_canary) == (100.0, "sent", "never")


def test_to_args_reproduces_them_through_the_cli() -> None:
    cfg = MockConfig(terminal_delay_ms=75.0, usage_prompt="sent", quote_canary="never")
    assert cfg.to_args() == ["--terminal-delay-ms", "75.0", "--usage-prompt", "sent", "--quote-canary", "never"]
    args = build_parser().parse_args(cfg.to_args())
    assert MockConfig(**{k: getattr(args, k) for k in KEYS}) == cfg


# terminal delay


@pytest.mark.parametrize(
    "cfg",
    [
        MockConfig(output_tokens=12),
        MockConfig(output_tokens=12, ttft_jitter_ms=20, itl_jitter_ms=4),
        MockConfig(output_tokens=12, itl_jitter_ms=4, fault="stall", fault_at=5, stall_ms=300),
        MockConfig(output_tokens=12, tokens_per_event=5, fault="drop", fault_at=3),
    ],
)
def test_terminal_delay_moves_the_end_and_nothing_else(cfg: MockConfig) -> None:
    base = make_plan(cfg, None, random.Random(9))
    held = make_plan(dataclasses.replace(cfg, terminal_delay_ms=100), None, random.Random(9))
    assert held.offsets_ms == base.offsets_ms and held.ttft_ms == base.ttft_ms
    assert held.end_ms == pytest.approx(base.end_ms + 100)
    assert held.end_ms == pytest.approx(held.offsets_ms[-1] + 100)


def test_terminal_delay_adds_to_a_stall_before_the_end() -> None:
    cfg = MockConfig(output_tokens=4, itl_ms=10, ttft_ms=50, fault="stall", fault_at=99, stall_ms=200)
    plan = make_plan(dataclasses.replace(cfg, terminal_delay_ms=100), None, random.Random(0))
    assert plan.offsets_ms == (50, 60, 70, 80)
    assert plan.end_ms == pytest.approx(80 + 200 + 100)


# usage_prompt


def test_reported_prompt_tokens_follow_usage_prompt() -> None:
    assert reported_prompt_tokens(MockConfig(), 9000, 4000) == 4000
    assert reported_prompt_tokens(MockConfig(usage_prompt="sent"), 9000, 4000) == 9000


def respond(api: str, stream: bool, messages: list[dict[str, Any]], cfg: MockConfig) -> tuple[bytes, TruthRecord]:
    """The bytes of one answer composed as the server composes it (its pure parts), and its truth record."""
    body = {"model": "m", "messages": messages, "stream": stream, "stream_options": {"include_usage": True}}
    call = parse_call(api, orjson.dumps(body), cfg, None)
    prompt = measure(call.messages, cfg.truncate_to)
    billed = billed_prompt_tokens(cfg, prompt.tokens)
    plan = make_plan(cfg, call.max_tokens, random.Random(0), billed)
    rec = TruthRecord("r1", 1, api, 64)
    rec.prompt_tokens, rec.billed_prompt_tokens = prompt.tokens, billed
    reported, lead = prompt_answer(rec, cfg, prompt, billed, prose=plan.output_tokens > 0)
    answer = Answer(call, "r1", 0, 17, plan, reported, None, None, lead)
    if not stream:
        return whole_body(answer)[1], rec
    r = stream_renderer(answer)
    return r.head() + r.events(0, plan.events) + r.tail(plan.finish_reason, plan.output_tokens), rec


def parsed(api: str, stream: bool, raw: bytes) -> tuple[str, int]:
    """(answer text, prompt tokens in the usage) from a body or an SSE stream."""
    if not stream:
        body = json.loads(raw)
        if api == "anthropic":
            return body["content"][0]["text"], body["usage"]["input_tokens"]
        return body["choices"][0]["message"]["content"], body["usage"]["prompt_tokens"]
    datas = [block.partition("data: ")[2] for block in raw.decode().split("\n\n") if "data: " in block]
    events = [json.loads(d) for d in datas if d != "[DONE]"]
    if api == "anthropic":
        words = [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"]
        return "".join(words), events[0]["message"]["usage"]["input_tokens"]
    words = [c["choices"][0]["delta"].get("content") or "" for c in events if c["choices"]]
    return "".join(words), next(c["usage"]["prompt_tokens"] for c in events if c.get("usage"))


@pytest.mark.parametrize(("api", "stream"), FORMS)
def test_usage_reports_sent_or_billed_prompt_tokens(api: str, stream: bool) -> None:
    messages = [SYSTEM, {"role": "user", "content": DOC}]
    sent = count_chat(messages)
    for mode, expected in (("billed", 500), ("sent", sent)):
        raw, rec = respond(api, stream, messages, MockConfig(output_tokens=6, truncate_to=500, usage_prompt=mode))
        assert parsed(api, stream, raw)[1] == expected
        assert (rec.prompt_tokens, rec.billed_prompt_tokens, rec.reported_prompt_tokens) == (sent, 500, expected)


# canary


def test_find_canary_takes_the_last_one_in_any_message() -> None:
    other = canary.code_for("other")
    messages = [
        {"role": "system", "content": canary.with_canary("old", other)},
        {"role": "user", "content": [{"type": "text", "text": canary.with_canary("doc", CODE) + "\nthanks"}]},
        {"role": "assistant", "content": "sure"},
    ]
    found = find_canary(messages)
    assert found is not None and (found.code, found.message) == (CODE, 1)
    assert find_canary([SYSTEM, {"role": "user", "content": DOC}]) is None


def test_canary_position_counts_the_prompt_up_to_the_code() -> None:
    messages = doc_messages("\n\n" + canary.INSTRUCTION)
    found = find_canary(messages)
    assert found is not None
    content = messages[1]["content"]
    by_hand = count_chat([SYSTEM]) + 3 + count_text("user") + count_text(content[: found.end]) - 3
    assert canary_position(messages, found) == by_hand
    assert by_hand < count_chat(messages) - count_text(canary.INSTRUCTION)


def test_kept_or_cut_is_decided_on_the_token_position() -> None:
    messages = doc_messages("\n\n" + canary.INSTRUCTION)
    found = find_canary(messages)
    assert found is not None
    at = canary_position(messages, found)
    sent = count_chat(messages)
    assert measure(messages, 0).canary_kept(0) is True
    assert measure(messages, sent).canary_kept(sent) is True
    assert measure(messages, at).canary_kept(at) is True
    assert measure(messages, at - 1).canary_kept(at - 1) is False
    assert PromptCount(sent).canary_kept(at - 1) is None


@pytest.mark.parametrize(("api", "stream"), FORMS)
def test_answer_begins_with_the_code_only_when_kept(api: str, stream: bool) -> None:
    messages = doc_messages()
    sent = count_chat(messages)
    kept, rec = respond(api, stream, messages, MockConfig(output_tokens=6))
    answer = parsed(api, stream, kept)[0]
    assert answer == CODE + "\n" + text(17, 6) and rec.canary == "quoted"
    assert canary.quoted(answer, CODE)
    cut, rec = respond(api, stream, messages, MockConfig(output_tokens=6, truncate_to=sent // 2))
    assert parsed(api, stream, cut)[0] == text(17, 6) and rec.canary == "cut"


@pytest.mark.parametrize("k", [1, 4])
def test_quoting_keeps_the_events_and_their_tokens(k: int) -> None:
    cfg = MockConfig(output_tokens=9, tokens_per_event=k)
    raw, _ = respond("openai", True, doc_messages(), cfg)
    chunks = [b for b in raw.decode().split("\n\n") if '"content":"' in b]
    assert len(chunks) == 1 + -(-9 // k)  # the role chunk, then the planned output events
    usage = json.loads(raw.decode().split("\n\n")[-3].partition("data: ")[2])["usage"]
    assert usage["completion_tokens"] == 9


def test_a_canary_the_answer_cannot_carry_is_ignored() -> None:
    found = find_canary(doc_messages())
    prompt = PromptCount(count_chat(doc_messages()), found)
    rec = TruthRecord("r", 1, "openai", 4)
    assert prompt_answer(rec, MockConfig(), prompt, prompt.tokens, prose=False) == (prompt.tokens, "")
    assert rec.canary == "ignored"
    assert prompt_answer(rec, MockConfig(quote_canary="never"), prompt, prompt.tokens, prose=True)[1] == ""
    assert rec.canary == "ignored" and rec.to_dict()["canary"] == "ignored"


@pytest.mark.parametrize(("api", "stream"), FORMS)
def test_prompts_without_a_canary_are_unaffected(api: str, stream: bool) -> None:
    messages = [SYSTEM, {"role": "user", "content": DOC}]
    raw, rec = respond(api, stream, messages, MockConfig(output_tokens=6, truncate_to=100))
    assert parsed(api, stream, raw)[0] == text(17, 6)
    assert rec.canary is None and rec.to_dict()["canary"] is None


# the cost of counting


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How often prompt.py tokenizes (count_chat, or message_bounds: the same encodes, each message's end kept) and
    searches for a canary."""
    seen = {"count": 0, "find": 0}
    real_count, real_bounds, real_find = prompt_module.count_chat, prompt_module.message_bounds, canary.find

    def count(messages: list[dict[str, Any]]) -> int:
        seen["count"] += 1
        return real_count(messages)

    def bounds(messages: list[dict[str, Any]]) -> tuple[int, ...]:
        seen["count"] += 1
        return real_bounds(messages)

    def find(value: str) -> tuple[str, int] | None:
        seen["find"] += 1
        return real_find(value)

    monkeypatch.setattr(prompt_module, "count_chat", count)
    monkeypatch.setattr(prompt_module, "message_bounds", bounds)
    monkeypatch.setattr(canary, "find", find)
    return seen


def test_one_tokenization_unless_a_canary_prompt_is_truncated(calls: dict[str, int]) -> None:
    plain = [SYSTEM, {"role": "user", "content": DOC}]
    assert measure(plain, 10).canary is None and calls == {"count": 1, "find": 2}
    assert measure(doc_messages(), 0).canary_at is None and calls["count"] == 2
    assert measure(doc_messages(), count_chat(doc_messages())).canary_at is None and calls["count"] == 3
    assert measure(doc_messages(), 100).canary_at is not None and calls["count"] == 5


def _count_on(server: MockServer, messages: list[dict[str, Any]], truncate_to: int) -> PromptCount:
    got: list[PromptCount] = []
    server._count_prompt(content_key(messages), messages, truncate_to, got.append, pytest.fail)
    return got[0]


def test_the_cache_keeps_the_position_once_a_request_needed_it(calls: dict[str, int]) -> None:
    server = MockServer()
    messages = doc_messages()
    assert _count_on(server, messages, 0).canary_at is None and calls == {"count": 1, "find": 1}
    at = _count_on(server, messages, 100).canary_at
    assert at is not None and calls == {"count": 2, "find": 1}, "the position only: no recount, no new search"
    assert _count_on(server, messages, 50).canary_at == at and calls["count"] == 2
    assert _count_on(server, messages, 0).canary_at == at and calls["count"] == 2


def test_a_large_prompt_is_measured_in_the_executor() -> None:
    messages = [SYSTEM, {"role": "user", "content": canary.with_canary(DOC * 5, CODE)}]
    assert len(content_key(messages)) > LARGE_PROMPT_BYTES

    async def run() -> PromptCount:
        server = MockServer()
        server.loop = asyncio.get_running_loop()
        done: asyncio.Future[PromptCount] = server.loop.create_future()
        server._count_prompt(content_key(messages), messages, 1000, done.set_result, done.set_exception)
        assert not done.done(), "counted off the loop, not inline"
        return await done

    got = asyncio.run(run())
    assert got.tokens == count_chat(messages) and got.canary is not None and got.canary_at is not None
    assert got.canary_kept(1000) is False
