"""Support chat over Anthropic's Messages API with prefix caching, against the batching mock (issue 35): the prompt of
each turn is the whole prompt, as over OpenAI's Chat Completions, never the uncached part Anthropic's input_tokens
counts. The mock's truth record is the ground truth: what it billed and what its prefix cache held. Each run is a few
seconds of three users."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadlib.mock import MockConfig, MockProcess, start_subprocess
from loadlib.mock.truth import bare_id
from tests.integration.locust_runs import headless, load, locust_cmd, run

pytestmark = pytest.mark.integration
TURNS = 3


@pytest.fixture(scope="module")
def engine_mock() -> Iterator[MockProcess]:
    with start_subprocess(MockConfig(engine="batching", output_tokens=24)) as m:
        yield m


def chat_run(mock: MockProcess, provider: str, out: Path) -> tuple[dict, list[dict], list[dict]]:
    """support_chat over one provider against a cold mock: its summary (stdout attached), records and truth."""
    urllib.request.urlopen(urllib.request.Request(mock.url + "/mock/reset", b"", method="POST"), timeout=10).read()
    host = mock.url + ("/v1" if provider == "openai" else "")  # each SDK's base URL (docs/extending.md, root_path)
    summary, records = out / f"{provider}.json", out / f"{provider}.jsonl"
    p = run(
        locust_cmd(
            *headless(3, 4),
            "--only-summary",
            *("--host", host, "--llm-provider", provider, "--llm-api-key-env", "none"),
            *("--chat-turns", str(TURNS), "--chat-think-time", "0", "--data-seed", "7"),
            *("--llm-summary", str(summary), "--llm-records", str(records)),
            locustfile="locustfiles/support_chat.py",
        ),
        timeout=90,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    s = load(summary)
    s["_stdout"] = p.stdout
    with urllib.request.urlopen(mock.url + "/mock/truth?limit=100000", timeout=10) as r:
        truth = json.loads(r.read())["records"]
    return s, [json.loads(line) for line in records.read_text().splitlines()], truth


def turns(summary: dict) -> dict[int, float]:
    return {t["turn"]: t["prompt_tokens_mean"] for t in summary["scenarios"]["support_chat"]["turns"]}


def test_turn_prompts_over_anthropic_match_openai_and_the_mock_truth(engine_mock: MockProcess, tmp_path: Path) -> None:
    openai, _, _ = chat_run(engine_mock, "openai", tmp_path)
    anthropic, records, truth = chat_run(engine_mock, "anthropic", tmp_path)

    by_id = {t["request_id"]: t for t in truth}
    pairs = [(r, by_id[bare_id(r["server_request_id"])]) for r in records if r["status"] == "ok"]
    assert len(pairs) >= 12
    # ground truth: the record's prompt is what the mock billed (the whole prompt), its cache read what the cache held
    assert all(r["prompt_tokens"] == t["billed_prompt_tokens"] for r, t in pairs)
    assert all(r["cached_prompt_tokens"] == t["engine"]["cached_tokens"] for r, t in pairs)
    cached = [r for r, _ in pairs if r["cached_prompt_tokens"] > r["prompt_tokens"] // 2]
    assert len(cached) >= len(pairs) // 2, "the prefix cache held most of most prompts (the case of the issue)"

    theirs, ours = turns(openai), turns(anthropic)
    assert sorted(ours) == sorted(theirs) == list(range(1, TURNS + 1))
    for turn, size in theirs.items():
        assert abs(ours[turn] - size) <= 0.05 * size, (turn, ours, theirs)
    growth = [s["scenarios"]["support_chat"]["prompt_tokens_per_turn"] for s in (openai, anthropic)]
    assert growth[0] > 24 and abs(growth[1] - growth[0]) <= 0.05 * growth[0], growth

    for s in (openai, anthropic):
        (row,) = s["rows"]
        estimate = row["token_estimate"]["prompt"]
        assert estimate["over_10pct"] == 0 and 0.9 <= estimate["usage_ratio_p50"] <= 1.1, estimate
        assert "usage warning" not in s["_stdout"], s["_stdout"]
    (row,) = anthropic["rows"]
    assert row["cached_prompt_tokens"] <= row["cache_reported_prompt_tokens"] == row["prompt_tokens"]
