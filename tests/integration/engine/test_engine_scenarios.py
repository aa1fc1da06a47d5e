"""The scenarios against a real engine, where the mock was too polite to show what they get wrong: its prefix cache
(the cache probe, support chat over Anthropic's API) and its real context limit (long documents)."""

from __future__ import annotations

from pathlib import Path
from statistics import median

import pytest

from tests.integration.engine.conftest import Engine
from tests.integration.engine.engine_truth import records, suite_run, summary

pytestmark = pytest.mark.integration
PREFIX_VARIATIONS = {"prefix_whitespace", "prefix_order"}  # the variations that change the prompt's leading blocks


def test_the_cache_probe_sees_a_prefix_cache_and_no_response_cache(engine: Engine, tmp_path: Path) -> None:
    """vLLM has no response cache: a prefix-cache hit cuts TTFT tenfold but decodes at its pace, which is no reason
    to call it one. The prefix cache is busted by exactly the variations that change the prompt's prefix."""
    engine.reset_prefix_cache()
    args = ("-u", "1", "-r", "1", "-t", "20s", "--cache-probe-doc-tokens", "1024", "--llm-max-tokens", "32")
    p = suite_run(engine, tmp_path, *args, locustfile="locustfiles/cache_probe.py")
    assert p.returncode == 0, p.stderr[-3000:]
    probe = summary(tmp_path)["scenarios"]["cache_probe"]
    assert all(v["response_cache_hits"] == 0 for v in probe["variations"]), probe["variations"]
    assert probe["busts"]["response_cache"] is None
    assert set(probe["busts"]["prompt_cache"]) == PREFIX_VARIATIONS, probe["busts"]
    assert "no response cache seen" in p.stdout


def turn_prompts(out: Path) -> dict[int, float]:
    """Median prompt tokens per conversation turn, from the records (the server's whole-prompt count)."""
    by_turn: dict[int, list[int]] = {}
    for r in records(out / "records.jsonl"):
        if r["status"] == "ok" and r["turn"] is not None:
            by_turn.setdefault(r["turn"], []).append(r["prompt_tokens"])
    return {turn: median(v) for turn, v in sorted(by_turn.items())}


def test_support_chat_prompts_are_whole_over_anthropics_api_too(engine: Engine, tmp_path: Path) -> None:
    """Anthropic's input_tokens leaves out cache reads and writes: our prompt size adds them back, so each turn's
    prompt is the same over /v1/messages as over /v1/chat/completions (the same conversations, one engine)."""
    args = ("-u", "2", "-r", "2", "-t", "14s", "--chat-think-time", "0", "--chat-turns", "3")
    args += ("--chat-conversations", "2", "--llm-max-tokens", "32")
    sizes = {}
    for provider in ("openai", "anthropic"):
        out = tmp_path / provider
        out.mkdir()
        p = suite_run(engine, out, *args, "--llm-provider", provider, locustfile="locustfiles/support_chat.py")
        assert p.returncode == 0, p.stderr[-3000:]
        assert "usage warning" not in p.stdout or "median server/estimate 0." not in p.stdout, p.stdout[-2000:]
        sizes[provider] = turn_prompts(out)
        assert any(r["cached_prompt_tokens"] for r in records(out / "records.jsonl"))  # the prefix cache was used
    assert sizes["openai"].keys() == sizes["anthropic"].keys() and len(sizes["openai"]) >= 2, sizes
    for turn, size in sizes["openai"].items():
        assert abs(sizes["anthropic"][turn] - size) <= 0.05 * size, sizes


@pytest.mark.parametrize(("doc_tokens", "fits"), [("1000,2000", True), ("6000,12000", False)], ids=["fit", "beyond"])
def test_long_documents_against_the_engines_context(
    engine: Engine, tmp_path: Path, doc_tokens: str, fits: bool
) -> None:
    """Documents the engine's context holds are summarised and pass; when none fits, nothing succeeded and the run
    says so in one line naming the context, with a non-zero exit, instead of passing on skipped SLOs. The canary is
    off: a model of random weights never quotes it, so every answer would read as truncated (billing decides)."""
    args = ("-u", "2", "-r", "2", "-t", "8s", "--doc-tokens", doc_tokens, "--doc-max-tokens", "64")
    args += ("--doc-canary", "off", "--scenario-slo", "on")
    p = suite_run(engine, tmp_path, *args, locustfile="locustfiles/long_document.py")
    whole = summary(tmp_path)["scenarios"]["long_document"]["whole"]
    verdict = p.stdout[p.stdout.rfind("Verdict:") :].splitlines()[0]
    if fits:
        assert p.returncode == 0, p.stderr[-3000:] + p.stdout[-3000:]
        assert whole["fits"] > 0 and whole["context_length_exceeded"] == whole["truncated"] == 0, whole
    else:
        assert p.returncode == 1, p.stdout[-3000:]
        assert whole["fits"] == 0 and whole["context_length_exceeded"] > 0, whole
        assert f"over the model's context ({engine.context:,} tokens" in verdict, verdict
