"""Fuzzing usage objects field by field: a valid usage of either API, one or two of its fields set to a boundary value.

Whatever the mutation, the adapters (stream and non-streamed body) must give either a valid usage or a named
rejection: never an exception, never a count that is not sane, never counts impossible together (OpenAI: cached <=
prompt, reasoning <= completion, total = prompt + completion; Anthropic: input + cache read + cache write <=
MAX_COUNT, and the usage's prompt is that sum, the whole prompt), every count dropped named in `rejected`, every count
kept equal to what the server sent, and, when the mutated usage is possible, nothing rejected at all. The record's
cost is then bounded by the counts it prices, so an impossible combination (cached_tokens 1,000,000 of a 10-token
prompt priced a run 16,700 times too high, issue 23) can never reach a cost. `possible_*` restate the APIs'
definitions independently of loadlib/providers/usage.py.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import orjson
from hypothesis import given, note, settings
from hypothesis import strategies as st

from loadlib.outputs.records import record_line
from loadlib.providers.base import StreamResult, Usage
from loadlib.providers.fields import MAX_COUNT
from loadlib.providers.registry import get_adapter
from loadlib.records.build import build_record
from loadlib.records.pricing import PriceTable
from loadlib.transport.stream import StreamOutcome
from tests.support.records import IDENTITY

from . import strategies as fz

PRICES = PriceTable.load(None)
MODELS = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4"}  # priced, so cost is computed
EST = (12, 20)  # the prompt and completion estimates a record falls back to
USAGE = settings(fz.FUZZ, max_examples=fz.examples(2_000), deadline=None)
ABSENT = object()  # a mutation that deletes the field

OPENAI_PATHS = (
    ("prompt_tokens",),
    ("completion_tokens",),
    ("total_tokens",),
    ("prompt_tokens_details", "cached_tokens"),
    ("prompt_cache_hit_tokens",),
    ("completion_tokens_details", "reasoning_tokens"),
    ("prompt_tokens_details",),
    ("completion_tokens_details",),
)
ANTHROPIC_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
ANTHROPIC_PATHS = tuple((key,) for key in ANTHROPIC_KEYS)
FIXED_EDGES = [0, 1, -1, 1_000_000, MAX_COUNT, MAX_COUNT + 1, 2**53 + 1, 2**63, 1e20, -1e20, 1.5, 12.0, True, False]
FIXED_EDGES += [None, "12", [], {}, {"cached_tokens": 5}, ABSENT]


# --- valid usage objects -------------------------------------------------------------------------------------------

small = st.integers(0, 300_000)


@st.composite
def openai_usages(draw: st.DrawFn) -> dict[str, Any]:
    """A usage object as OpenAI defines it: parts within their wholes, the total their sum; optional fields absent."""
    prompt, completion = draw(small), draw(small)
    raw: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion}
    if draw(st.booleans()):
        raw["total_tokens"] = prompt + completion
    cached = draw(st.integers(0, prompt))
    where = draw(st.sampled_from(["details", "deepseek", "none"]))
    if where == "details":
        raw["prompt_tokens_details"] = {"cached_tokens": cached, "audio_tokens": 0}
    elif where == "deepseek":
        raw.update(prompt_cache_hit_tokens=cached, prompt_cache_miss_tokens=prompt - cached)
    if draw(st.booleans()):
        raw["completion_tokens_details"] = {"reasoning_tokens": draw(st.integers(0, completion))}
    return raw


@st.composite
def anthropic_usages(draw: st.DrawFn) -> dict[str, Any]:
    """Anthropic's usage: input excludes the cache counts, so any of them is possible beside any other."""
    raw = {"input_tokens": draw(small), "output_tokens": draw(small)}
    for key in ANTHROPIC_KEYS[2:]:
        if draw(st.booleans()):
            raw[key] = draw(small)
    return raw


def edges(raw: dict[str, Any]) -> list[Any]:
    """Boundary values for this object: the fixed ones, and each count and sum of it off by one either way."""
    numbers = [v for v in _leaves(raw) if type(v) is int]
    near = {n + d for n in numbers for d in (-1, 0, 1)} | {a + b + d for a in numbers for b in numbers for d in (-1, 1)}
    return FIXED_EDGES + sorted(near)


def _leaves(raw: dict[str, Any]) -> list[Any]:
    return [w for v in raw.values() for w in (v.values() if isinstance(v, dict) else [v])]


@st.composite
def mutated(draw: st.DrawFn, provider: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(valid, mutated): one field, or two distinct ones, set to a boundary value (or deleted)."""
    valid = draw(openai_usages() if provider == "openai" else anthropic_usages())
    paths = OPENAI_PATHS if provider == "openai" else ANTHROPIC_PATHS
    chosen = draw(st.lists(st.sampled_from(paths), min_size=1, max_size=2, unique=True))
    raw = orjson.loads(orjson.dumps(valid))
    for path in chosen:
        _set(raw, path, draw(st.sampled_from(edges(valid))))
    return valid, raw


def _set(raw: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    parent = raw
    for key in path[:-1]:
        if type(parent.get(key)) is not dict:
            parent[key] = {}
        parent = parent[key]
    if value is ABSENT:
        parent.pop(path[-1], None)
    else:  # a copy: two mutations writing into one shared edge (a dict of FIXED_EDGES) would make it a cycle
        parent[path[-1]] = copy.deepcopy(value)


# --- the APIs' definitions, restated -------------------------------------------------------------------------------


def sane(value: Any) -> bool:
    if type(value) is float:
        return value.is_integer() and 0 <= value <= MAX_COUNT
    return type(value) is int and 0 <= value <= MAX_COUNT


def openai_fields(raw: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """Usage attribute -> (field path, raw value) as the adapter reads them (cached_tokens before DeepSeek's)."""
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if type(details) is dict else None
    cached_at = "usage.prompt_tokens_details.cached_tokens"
    if cached is None:
        cached, cached_at = raw.get("prompt_cache_hit_tokens"), "usage.prompt_cache_hit_tokens"
    rdetails = raw.get("completion_tokens_details")
    return {
        "prompt_tokens": ("usage.prompt_tokens", raw.get("prompt_tokens")),
        "completion_tokens": ("usage.completion_tokens", raw.get("completion_tokens")),
        "cached_prompt_tokens": (cached_at, cached),
        "reasoning_tokens": (
            "usage.completion_tokens_details.reasoning_tokens",
            rdetails.get("reasoning_tokens") if type(rdetails) is dict else None,
        ),
    }


def anthropic_fields(raw: dict[str, Any]) -> dict[str, tuple[str, Any]]:
    """The counts kept as the server sent them (the prompt is their sum: `anthropic_prompt`)."""
    names = ("completion_tokens", "cached_prompt_tokens", "cache_write_tokens")
    return {name: (f"usage.{key}", raw.get(key)) for name, key in zip(names, ANTHROPIC_KEYS[1:], strict=True)}


def anthropic_prompt(raw: dict[str, Any]) -> int | None:
    """Anthropic's whole prompt: input + cache read + cache write, when input and each cache count sent are sane."""
    parts = [raw.get(key) for key in ANTHROPIC_KEYS if key != "output_tokens"]
    if raw.get("input_tokens") is None or not all(x is None or sane(x) for x in parts):
        return None
    whole = sum(int(x or 0) for x in parts)
    return whole if whole <= MAX_COUNT else None


def possible_openai(raw: dict[str, Any]) -> bool:
    """Every count present is sane, each part within its whole, and a sane total the sum of both parts."""
    v = {name: value for name, (_, value) in openai_fields(raw).items()}
    if not all(x is None or sane(x) for x in v.values()):
        return False
    for part, whole in (("cached_prompt_tokens", "prompt_tokens"), ("reasoning_tokens", "completion_tokens")):
        if v[part] and (v[whole] is None or v[part] > v[whole]):
            return False
    total, prompt, completion = raw.get("total_tokens"), v["prompt_tokens"], v["completion_tokens"]
    return not (sane(total) and prompt is not None and completion is not None and total != prompt + completion)


def possible_anthropic(raw: dict[str, Any]) -> bool:
    """Every count present is sane, the whole prompt within MAX_COUNT, and a non-zero cache count has an input."""
    values = [raw.get(key) for key in ANTHROPIC_KEYS]
    if not all(x is None or sane(x) for x in values):
        return False
    if raw.get("input_tokens") is None and any(raw.get(key) for key in ANTHROPIC_KEYS[2:]):
        return False
    return sum(int(raw.get(key) or 0) for key in ANTHROPIC_KEYS if key != "output_tokens") <= MAX_COUNT


# --- feeding the adapters ------------------------------------------------------------------------------------------


def openai_results(raw: dict[str, Any]) -> list[StreamResult]:
    """The usage as a stream's usage-only chunk after a content chunk, and in a non-streamed body."""
    adapter = get_adapter("openai")
    parser = adapter.new_parser()
    parser.feed(b"", orjson.dumps({"choices": [{"index": 0, "delta": {"content": "hi"}}]}))
    parser.feed(b"", orjson.dumps({"choices": [], "usage": raw}))
    parser.feed(b"", b"[DONE]")
    message = {"role": "assistant", "content": "hi"}
    body = {"object": "chat.completion", "choices": [{"index": 0, "message": message}], "usage": raw}
    return [parser.result(), adapter.parse_response(orjson.dumps(body))]


def anthropic_results(raw: dict[str, Any], split: int) -> list[StreamResult]:
    """The usage split between message_start and message_delta (each key in one of them), and in a body."""
    adapter = get_adapter("anthropic")
    keys = list(raw)
    start = {k: raw[k] for i, k in enumerate(keys) if split >> i & 1}
    final = {k: raw[k] for k in keys if k not in start}
    events = [
        {"type": "message_start", "message": {"id": "m", "type": "message", "usage": start}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": final},
        {"type": "message_stop"},
    ]
    parser = adapter.new_parser()
    for event in events:
        parser.feed(event["type"].encode(), orjson.dumps(event))
    body = {"type": "message", "id": "m", "content": [{"type": "text", "text": "hi"}], "usage": raw}
    return [parser.result(), adapter.parse_response(orjson.dumps(body))]


# --- the properties ------------------------------------------------------------------------------------------------


def check_usage(provider: str, raw: dict[str, Any], usage: Usage | None) -> None:
    """Sane counts, possible together, each dropped one named, each kept one as sent; nothing rejected when the
    server's usage was possible."""
    named = (openai_fields if provider == "openai" else anthropic_fields)(raw)
    if usage is None:  # nothing was sent: no usage at all is the right answer
        assert all(value is None for _, value in named.values()), raw
        return
    reasons = " ; ".join(usage.rejected)
    for name, (where, value) in named.items():
        kept = getattr(usage, name)
        assert kept is None or (type(kept) is int and 0 <= kept <= MAX_COUNT), (name, kept)
        if kept is not None:
            assert kept == value and where + "=" not in reasons, (f"{where} kept but named", kept, value, reasons)
        elif value is not None:
            assert where + "=" in reasons, (f"{where}={value!r} dropped without a reason", usage.rejected)
    if provider == "anthropic":
        check_anthropic_prompt(raw, usage)
    check_possible(provider, usage)
    possible = (possible_openai if provider == "openai" else possible_anthropic)(raw)
    assert possible == (usage.rejected == ()), (possible, usage.rejected)


def check_anthropic_prompt(raw: dict[str, Any], usage: Usage) -> None:
    """The prompt is the whole one when it can be known; when an input was sent but the whole cannot be known, a part
    the server sent is named (without an input there is no prompt to drop)."""
    assert usage.prompt_tokens == anthropic_prompt(raw), (usage.prompt_tokens, raw)
    sent = [key for key in ANTHROPIC_KEYS if key != "output_tokens" and raw.get(key) is not None]
    if usage.prompt_tokens is None and raw.get("input_tokens") is not None:
        assert any(f"usage.{key}=" in " ; ".join(usage.rejected) for key in sent), (raw, usage.rejected)


def check_possible(provider: str, u: Usage) -> None:
    if provider == "openai":
        assert not u.cached_prompt_tokens or (u.prompt_tokens is not None and u.cached_prompt_tokens <= u.prompt_tokens)
        assert not u.reasoning_tokens or (u.completion_tokens is not None and u.reasoning_tokens <= u.completion_tokens)
    else:
        assert u.prompt_tokens is None or u.prompt_tokens <= MAX_COUNT
        parts = (u.cached_prompt_tokens or 0) + (u.cache_write_tokens or 0)
        assert not parts or (u.prompt_tokens is not None and parts <= u.prompt_tokens)


def check_cost(provider: str, result: StreamResult) -> None:
    """The record serialises, and its cost is what the counts it holds (or the estimates) price, no more."""
    outcome = StreamOutcome(ttft_ms=10.0, e2e_ms=50.0, output_stamps_ms=[10.0, 50.0], result=result)
    ids = {**IDENTITY, "provider": provider, "model": MODELS[provider]}
    record = build_record(outcome, **ids, prices=PRICES, prompt_tokens_est=EST[0], completion_tokens_est=EST[1])
    orjson.dumps(record_line(record))
    price = PRICES.price(MODELS[provider])
    assert price is not None and record.cost_usd is not None and math.isfinite(record.cost_usd)
    prompt = record.prompt_tokens if record.prompt_tokens is not None else EST[0]
    completion = record.completion_tokens if record.completion_tokens is not None else EST[1]
    dearest = max(rate for rate in (price.input, price.cached_input, price.cache_write) if rate is not None)
    bound = (prompt * dearest + completion * price.output) / 1_000_000  # the prompt is the whole one
    assert 0 <= record.cost_usd <= bound * (1 + 1e-9), (record.cost_usd, bound, record)


def check(provider: str, raw: dict[str, Any], results: list[StreamResult]) -> None:
    for result in results:
        check_usage(provider, raw, result.usage)
        check_cost(provider, result)


@USAGE
@given(case=mutated("openai"))
def test_openai_usage_mutated_field_by_field(case: tuple[dict[str, Any], dict[str, Any]]) -> None:
    valid, raw = case
    note(f"valid {valid}\nmutated {raw}")
    check("openai", valid, openai_results(valid))
    check("openai", raw, openai_results(raw))


@USAGE
@given(case=mutated("anthropic"), split=st.integers(0, 15))
def test_anthropic_usage_mutated_field_by_field(case: tuple[dict[str, Any], dict[str, Any]], split: int) -> None:
    valid, raw = case
    note(f"valid {valid}\nmutated {raw}")
    check("anthropic", valid, anthropic_results(valid, split))
    check("anthropic", raw, anthropic_results(raw, split))
