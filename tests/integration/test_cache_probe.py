"""The cache probe against the mock's two caches with known keys: the batching engine's prefix cache (keyed on the
prompt's messages) and a gateway response cache keyed on model, messages, temperature, top_p and anthropic-version.
Each variation's response-cache hits and prompt-cache share must equal the mock's truth, and exactly the variations
that change a part of a layer's key are named as busting it; a threshold on the cache hit rate passes and fails as
written. Without cache headers the same holds from the answers alone, and a prefix cache with no response cache in
front (vLLM's case) shows no response cache, though its hits cut TTFT below a tenth of the cold request's."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from subprocess import CompletedProcess
from urllib.request import urlopen

import pytest

from loadlib.mock import MockConfig, start_subprocess
from loadlib.scenarios.cache_variations import variations
from tests.integration.locust_runs import headless, load, locust_cmd, run

pytestmark = pytest.mark.integration
RESPONSE_KEY = ("model", "messages", "temperature", "top_p", "header:anthropic-version")
PREFIX_KEY = ("messages",)  # the prefix cache names blocks by the conversation only


def rounds_of(records: list[dict], names: list[str]) -> list[dict[str, dict]]:
    """Each user's requests go out one after another on its own connection, round after round: the warm-up, then
    the variations in order. Requests the run's end cut off are kept: they count as requests."""
    by_conn: dict[int, list[dict]] = {}
    for r in records:
        by_conn.setdefault(r["connection_id"], []).append(r)
    cycle = ["warmup", *names]
    n = len(cycle)
    return [
        dict(zip(cycle, recs[i : i + n], strict=False)) for recs in by_conn.values() for i in range(0, len(recs), n)
    ]


def truth_by_variation(records: list[dict], names: list[str]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for one in rounds_of(records, names):
        for name, r in one.items():
            out.setdefault(name, []).append(r)
    return out


def truth_share(recs: list[dict]) -> float | None:
    reached = [r for r in recs if r["response_cache"] != "hit" and r["outcome"] == "complete"]
    whole = sum(r["reported_prompt_tokens"] for r in reached)
    return round(sum(r["engine"]["cached_tokens"] for r in reached) / whole, 6) if whole else None


def probe_run(
    cfg: MockConfig, summary: Path, seconds: int, doc_tokens: int, args: Sequence[str] = ()
) -> tuple[CompletedProcess, list[dict]]:
    """A headless run of the cache probe (2 users) against a mock of `cfg`: the process and the mock's truth."""
    with start_subprocess(cfg) as mock:
        p = run(
            locust_cmd(
                *headless(2, seconds),
                *("--host", mock.url + "/v1", "--llm-api-key-env", "none", "--llm-summary", str(summary)),
                *("--cache-probe-doc-tokens", str(doc_tokens), "--cache-probe-model-alias", "mock-llm-2026"),
                *args,
                locustfile="locustfiles/cache_probe.py",
            ),
            timeout=60,
        )
        records = json.loads(urlopen(mock.url + "/mock/truth?limit=100000", timeout=10).read())["records"]
    return p, records


def test_the_probe_names_what_busts_each_layer_as_the_mocks_keys_say(tmp_path: Path) -> None:
    cfg = MockConfig(engine="batching", response_cache="+".join(RESPONSE_KEY))
    summary = tmp_path / "summary.json"
    thresholds = ("cache_hit_rate{scenario=cache_probe} > 20%", "cache_hit_rate{scenario=cache_probe} > 95%")
    args = [arg for t in thresholds for arg in ("--llm-threshold", t)]
    p, records = probe_run(cfg, summary, seconds=5, doc_tokens=1024, args=args)
    assert p.returncode == 99, p.stderr[-3000:]  # the second threshold fails, as written: exit 99
    s = load(summary)
    probe = s["scenarios"]["cache_probe"]
    names = [v["name"] for v in probe["variations"]]
    assert names == [v.name for v in variations("openai")] and probe["rounds"] >= 2
    truth = truth_by_variation(records, names)
    for v in probe["variations"]:
        recs = truth[v["name"]]
        assert v["requests"] == len(recs), v
        answered = [r for r in recs if r["outcome"] == "complete"]
        assert v["response_cache_hits"] == sum(r["response_cache"] == "hit" for r in answered), v
        assert v["prompt_cache_hit_share"] == truth_share(recs), v
    changes = {v["name"]: set(v["changes"]) for v in probe["variations"]}
    assert probe["response_cache_source"] == "header"
    assert set(probe["busts"]["response_cache"]) == {n for n, c in changes.items() if c & set(RESPONSE_KEY)}
    assert set(probe["busts"]["prompt_cache"]) == {n for n, c in changes.items() if c & set(PREFIX_KEY)}
    assert set(probe["busts"]["prompt_cache"]) == {"prefix_whitespace", "prefix_order"}
    none = probe["variations"][0]
    assert none["ttft_saved_ms"] > 20 and none["cost_saved_usd"] > 0, "a response-cache hit skips the prefill"
    assert [t["passed"] for t in s["thresholds"]] == [True, False]
    assert (
        "cache probe: what busts the cache" in p.stdout
        and "busts the prompt cache: prefix_whitespace, prefix_order" in p.stdout
    )


@pytest.mark.parametrize("response_cache", ["", "+".join(RESPONSE_KEY)], ids=["prefix_cache_only", "silent_gateway"])
def test_without_cache_headers_the_probe_reads_the_response_cache_from_the_answers(
    tmp_path: Path, response_cache: str
) -> None:
    """The batching engine alone plays vLLM: its prefix cache cuts a kept variation's TTFT below a tenth of the cold
    request's (checked from the truth: the rule that took that for a response-cache hit counted most of them), and
    the probe reports no response-cache hit, no response cache, and the prompt cache busted by exactly the prefix
    variations. With a response cache that sends no header in front, the hits it infers from the answers are the
    truth's, request for request, and so are the variations it names as busting it."""
    cfg = MockConfig(engine="batching", response_cache=response_cache, response_cache_header="off")
    summary = tmp_path / "summary.json"
    p, records = probe_run(cfg, summary, seconds=6, doc_tokens=4096)
    assert p.returncode == 0, p.stderr[-3000:]
    probe = load(summary)["scenarios"]["cache_probe"]
    names = [v["name"] for v in probe["variations"]]
    assert names == [v.name for v in variations("openai")] and probe["rounds"] >= 2
    assert probe["response_cache_source"] == "inferred"
    truth = truth_by_variation(records, names)
    for v in probe["variations"]:
        answered = [r for r in truth[v["name"]] if r["outcome"] == "complete"]
        assert v["response_cache_hits"] == sum(r["response_cache"] == "hit" for r in answered), v
        assert v["prompt_cache_hit_share"] == truth_share(truth[v["name"]]), v
    changes = {v["name"]: set(v["changes"]) for v in probe["variations"]}
    assert set(probe["busts"]["prompt_cache"]) == {"prefix_whitespace", "prefix_order"}
    assert "busts the prompt cache: prefix_whitespace, prefix_order" in p.stdout
    if response_cache:
        assert set(probe["busts"]["response_cache"]) == {n for n, c in changes.items() if c & set(RESPONSE_KEY)}
        assert sum(v["response_cache_hits"] for v in probe["variations"]) >= 2 * 4
        return
    kept = [
        (r["first_token_sent_ms"], rnd["warmup"]["first_token_sent_ms"])
        for rnd in rounds_of(records, names)
        for n, r in rnd.items()
        if n not in ("warmup", "prefix_whitespace", "prefix_order") and r["outcome"] == "complete"
    ]
    collapsed = sum(ttft < cold * 0.1 for ttft, cold in kept)
    assert len(kept) >= 2 * 8 and collapsed >= len(kept) * 0.9, (collapsed, kept)
    assert all(v["response_cache_hits"] == 0 for v in probe["variations"]) and probe["busts"]["response_cache"] is None
    assert "  no response cache seen" in p.stdout
