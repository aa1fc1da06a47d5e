"""The prompt-cache hit rate: token-weighted over the attempts that reported a cached count, whatever the
provider's convention (OpenAI counts cached tokens inside the prompt, Anthropic beside it: its adapter makes the
record's prompt the whole one), and a threshold on it that passes and fails as written."""

from __future__ import annotations

from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary
from loadlib.providers.base import StreamResult
from loadlib.providers.usage import anthropic_usage
from loadlib.records.build import build_record
from loadlib.records.pricing import PriceTable
from loadlib.transport.stream import StreamOutcome
from loadlib.verdicts.evaluate import evaluate
from loadlib.verdicts.thresholds import parse
from tests.support.records import IDENTITY, make_record


def summary_of(*records) -> dict:
    stats = LLMStats()
    for r in records:
        stats.add(r)
    return build_summary(stats, 10.0, None, {"run_id": "r"})


def chat(i: int, provider: str, prompt: int, cached: int | None, scenario: str = "support_chat"):
    return make_record(
        request_id=f"r{i}",
        scenario=scenario,
        provider=provider,
        prompt_tokens=prompt,
        completion_tokens=10,
        cached_prompt_tokens=cached,
    )


def anthropic_chat(i: int, input_tokens: int, cache_read: int):
    """A record built from Anthropic's usage as its adapter reads it: input_tokens leaves out the cache read."""
    usage = anthropic_usage({"input_tokens": input_tokens, "cache_read_input_tokens": cache_read, "output_tokens": 10})
    outcome = StreamOutcome(ttft_ms=10.0, e2e_ms=50.0, result=StreamResult(usage=usage, usage_source="stream"))
    ids = {**IDENTITY, "request_id": f"r{i}", "scenario": "support_chat", "provider": "anthropic"}
    return build_record(outcome, **ids, prices=PriceTable({}))


def test_openai_counts_cached_inside_the_prompt_anthropic_beside_it() -> None:
    s = summary_of(chat(0, "openai", 1000, 900), anthropic_chat(1, 100, 900), chat(2, "openai", 5000, None))
    (row,) = s["rows"]
    assert row["cached_prompt_tokens"] == 1800 and row["cache_reported_prompt_tokens"] == 2000
    assert row["cache_hit_rate"] == 0.9, "the attempt that reported no cached count is left out"
    assert summary_of(chat(0, "openai", 1000, None))["rows"][0]["cache_hit_rate"] is None


def test_a_threshold_on_it_passes_and_fails_as_written() -> None:
    records = [chat(i, "openai", 1000, 850) for i in range(30)] + [chat(99, "openai", 1000, 0, scenario="other")]
    s = summary_of(*records)
    exprs = (
        "cache_hit_rate{scenario=support_chat} > 80%",
        "cache_hit_rate{scenario=support_chat} > 90%",
        "cache_hit_rate{scenario=support_chat} >= 0.85",
        "cache_hit_rate < 50%",
    )
    got = evaluate([parse(e) for e in exprs], s)
    assert [g["passed"] for g in got] == [True, False, True, False]
    assert got[0]["value"] == 0.85 and got[0]["samples"] == 30
    assert abs(got[3]["value"] - 25500 / 31000) < 1e-9, "all rows: the total row's sums"


def test_few_attempts_cannot_say() -> None:
    (got,) = evaluate([parse("cache_hit_rate > 80%")], summary_of(chat(0, "openai", 1000, 900)))
    assert got["passed"] is None
