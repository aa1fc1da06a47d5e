"""Request-dependent mock behaviour: TTFT from prompt size, per-model context limits, silent truncation,
structured JSON answers (valid or broken at a rate) and nondeterminism."""

from __future__ import annotations

import json
import random

import pytest
from jsonschema import Draft202012Validator

from loadlib.data import FINDINGS_SCHEMA
from loadlib.mock.plan import billed_prompt_tokens, draw_variant, json_is_valid, make_plan, output_seed
from loadlib.mock.render import OpenAIStream
from loadlib.mock.structured import GENERIC_OBJECT, answer_text, requested_schema, token_pieces
from loadlib.mockapi.config import MockConfig, model_context_limit, parse_overrides, resolve
from loadlib.records.tokens import count_text


def test_new_keys_parse() -> None:
    got = parse_overrides("ttft_per_1k_prompt_ms=2.5,truncate_to=8000,json_valid_rate=0.9,nondeterminism_rate=0.1")
    assert got == {
        "ttft_per_1k_prompt_ms": 2.5,
        "truncate_to": 8000,
        "json_valid_rate": 0.9,
        "nondeterminism_rate": 0.1,
    }


def test_model_name_sets_the_context_limit_unless_overridden() -> None:
    assert model_context_limit("mock-8k") == 8192 and model_context_limit("gpt-4-32k") == 32768
    assert model_context_limit("mock-llm") is None and model_context_limit("mock-0k") is None
    assert resolve(MockConfig(), None, "mock-8k")[0].context_limit == 8192
    assert resolve(MockConfig(), None, "mock-8k::context_limit=100")[0].context_limit == 100
    assert resolve(MockConfig(), "context_limit=50", "mock-8k")[0].context_limit == 50
    assert resolve(MockConfig(context_limit=999), None, "mock-llm")[0].context_limit == 999


def test_ttft_grows_with_prompt_tokens() -> None:
    cfg = MockConfig(ttft_ms=100, ttft_per_1k_prompt_ms=20)
    rng = random.Random(0)
    assert make_plan(cfg, None, rng, 0).ttft_ms == 100
    assert make_plan(cfg, None, rng, 2000).ttft_ms == pytest.approx(140)
    assert make_plan(MockConfig(ttft_ms=100), None, rng, 128_000).ttft_ms == 100, "off by default"


def test_truncation_bills_only_what_the_server_kept() -> None:
    assert billed_prompt_tokens(MockConfig(), 200_000) == 200_000
    assert billed_prompt_tokens(MockConfig(truncate_to=8000), 200_000) == 8000
    assert billed_prompt_tokens(MockConfig(truncate_to=8000), 5000) == 5000


def test_variants_only_at_the_configured_rate_and_without_drawing_when_off() -> None:
    rng = random.Random(1)
    state = rng.getstate()
    assert draw_variant(MockConfig(), rng) == 0 and rng.getstate() == state
    assert all(draw_variant(MockConfig(nondeterminism_rate=1.0), rng) > 0 for _ in range(100))
    share = sum(draw_variant(MockConfig(nondeterminism_rate=0.25), rng) > 0 for _ in range(4000)) / 4000
    assert share == pytest.approx(0.25, abs=0.03)


def test_json_validity_is_a_deterministic_coin_at_the_rate() -> None:
    cfg = MockConfig(json_valid_rate=0.7)
    coins = [json_is_valid(cfg, output_seed(h, 0, 0)) for h in range(5000)]
    assert sum(coins) / len(coins) == pytest.approx(0.7, abs=0.03)
    assert coins == [json_is_valid(cfg, output_seed(h, 0, 0)) for h in range(5000)], "same request, same validity"
    assert all(json_is_valid(MockConfig(), s) for s in range(100))


def test_answers_follow_the_schema_or_break_it() -> None:
    validator = Draft202012Validator(FINDINGS_SCHEMA)
    for seed in range(200):
        good = json.loads(answer_text(FINDINGS_SCHEMA, seed, True))
        assert not list(validator.iter_errors(good)), seed
        bad = answer_text(FINDINGS_SCHEMA, seed, False)
        try:
            value = json.loads(bad)
        except json.JSONDecodeError:
            continue  # cut short
        assert list(validator.iter_errors(value)), f"seed {seed}: a broken answer must not validate"
    assert answer_text(FINDINGS_SCHEMA, 5, True) == answer_text(FINDINGS_SCHEMA, 5, True)
    assert answer_text(FINDINGS_SCHEMA, 5, True) != answer_text(FINDINGS_SCHEMA, 6, True)


def test_pieces_are_tokens_and_stream_as_content() -> None:
    text = answer_text(FINDINGS_SCHEMA, 3, True)
    pieces = token_pieces(text)
    assert "".join(pieces) == text and len(pieces) == count_text(text)
    stream = OpenAIStream("id1", "m", 0, 0, len(pieces), 1, 10, True, "separate", pieces)
    events = stream.events(0, len(pieces)).split(b"\n\n")[:-1]
    content = "".join(json.loads(e[6:])["choices"][0]["delta"]["content"] for e in events)
    assert content == text


def test_which_requests_get_structured_output() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    assert requested_schema("openai", {"response_format": fmt}, None) == schema
    assert requested_schema("openai", {"response_format": {"type": "json_object"}}, None) is GENERIC_OBJECT
    assert requested_schema("openai", {}, None) is None
    tools = [{"name": "findings", "input_schema": schema}]
    assert requested_schema("anthropic", {"tools": tools}, "findings") == schema
    legacy = [{"name": "record", "input_schema": {"type": "object"}}]
    assert requested_schema("anthropic", {"tools": legacy}, "record") is None, "bare object: legacy text answer"
