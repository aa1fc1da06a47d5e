"""Streaming through the engine's own endpoints, OpenAI Chat Completions and Anthropic Messages, checked against what
the engine says it did: every request it answered is a record of ours (a user stopped as it spawned one leaves a
record of a request that never went out, which the engine never saw), with the same prompt and output tokens in
all (an Anthropic prompt is whole: input + cache reads + cache writes), and our TTFT is the engine's plus the trip
through its HTTP server, never less."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.engine.conftest import Engine
from tests.integration.engine.engine_truth import counters, delta, records, suite_run

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_every_answer_and_token_agrees_with_the_engines_counters(engine: Engine, tmp_path: Path, provider: str) -> None:
    before = counters(engine)
    args = ("-u", "4", "-r", "4", "-t", "8s", "--llm-provider", provider, "--llm-max-tokens", "64")
    p = suite_run(engine, tmp_path, *args)
    did = delta(before, counters(engine))
    assert p.returncode == 0, p.stderr[-3000:]
    recs = [r for r in records(tmp_path / "records.jsonl") if "before it was sent" not in (r["error_message"] or "")]
    assert recs and all(r["status"] == "ok" for r in recs), {r["status"] for r in recs}
    assert all(r["usage_source"] == "stream" for r in recs)
    assert len(recs) == did["vllm:request_success_total"]
    assert sum(r["prompt_tokens"] for r in recs) == did["vllm:prompt_tokens_total"]
    assert sum(r["completion_tokens"] for r in recs) == did["vllm:generation_tokens_total"]
    assert sum(r["cached_prompt_tokens"] or 0 for r in recs) == did["vllm:prefix_cache_hits_total"]
    ours = sum(r["ttft_ms"] for r in recs) / len(recs)
    theirs = 1000 * did["vllm:time_to_first_token_seconds_sum"] / did["vllm:time_to_first_token_seconds_count"]
    assert theirs <= ours <= theirs * 1.25 + 15, (ours, theirs)
