"""Structured-output amplification against the mock's truth: a real headless run of the compliance scenario with
every case also asked as prose, against a mock whose JSON answers are `structured_ratio` times its prose ones. The
reported ratios must equal the ratios of the truth's sums over the same pairs within 1 %."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from urllib.request import urlopen

import pytest

from loadlib.mock import MockConfig, start_subprocess
from tests.integration.locust_runs import headless, load, locust_cmd, run

pytestmark = pytest.mark.integration
PRICE_IN, PRICE_OUT = 1.00e-6, 2.00e-6  # mock-llm in the bundled price table, USD per token


def truth_pairs(records: list[dict]) -> list[tuple[dict, dict]]:
    """Each user sends its JSON request, then its prose twin, on its own connection: consecutive (structured, prose)
    records of one connection that both completed are a pair."""
    by_conn: dict[int, list[dict]] = {}
    for r in records:
        by_conn.setdefault(r["connection_id"], []).append(r)
    pairs = []
    for recs in by_conn.values():
        for a, b in itertools.pairwise(recs):
            if a["structured"] and not b["structured"] and a["outcome"] == b["outcome"] == "complete":
                pairs.append((a, b))
    return pairs


def cost(r: dict) -> float:
    return r["reported_prompt_tokens"] * PRICE_IN + r["output_tokens_sent"] * PRICE_OUT


def test_reported_amplification_equals_the_mocks_truth(tmp_path: Path) -> None:
    cfg = MockConfig(ttft_ms=10, itl_ms=2, output_tokens=100, structured_ratio=2.11)
    summary = tmp_path / "summary.json"
    with start_subprocess(cfg) as mock:
        p = run(
            locust_cmd(
                *headless(3, 4),
                *("--host", mock.url + "/v1", "--llm-api-key-env", "none", "--llm-summary", str(summary)),
                *("--compliance-plain-share", "1", "--compliance-repeat-share", "0", "--audit-file", "none"),
                "--data-cache-dir",
                str(tmp_path),
                locustfile="locustfiles/compliance.py",
            ),
            timeout=60,
        )
        records = json.loads(urlopen(mock.url + "/mock/truth?limit=100000", timeout=10).read())["records"]
    assert p.returncode == 0, p.stderr[-3000:]
    amp = load(summary)["scenarios"]["compliance"]["amplification"]
    pairs = truth_pairs(records)
    assert amp["pairs"] == len(pairs) > 10
    json_tokens, plain_tokens = (sum(pair[i]["output_tokens_sent"] for pair in pairs) for i in (0, 1))
    assert {pair[0]["output_tokens_sent"] for pair in pairs} == {211}, "the mock's factor: 2.11 x 100"
    assert (amp["json_output_tokens"], amp["plain_output_tokens"]) == (json_tokens, plain_tokens)
    assert amp["output_tokens_ratio"] == pytest.approx(json_tokens / plain_tokens, rel=0.01)
    truth_cost = sum(cost(a) for a, _ in pairs) / sum(cost(b) for _, b in pairs)
    assert amp["cost_ratio"] == pytest.approx(truth_cost, rel=0.01) and amp["cost_ratio"] < amp["output_tokens_ratio"]
    assert amp["e2e_diff_ms"] > 100, "111 more tokens, 2 ms apart"
    assert amp["output_tokens_ratio_ci"] == [2.11, 2.11], "every pair exactly 211 / 100: no doubt left"
    low, high = amp["cost_ratio_ci"]
    assert low <= round(truth_cost, 4) <= high and high - low < 0.05 * truth_cost
    low, high = amp["e2e_diff_ms_ci"]
    assert 100 < low <= amp["e2e_diff_ms"] <= high, "111 tokens more at 2 ms each, whatever the jitter"
    assert "by_depth" not in amp, "one schema, one depth"
    assert "structured-output amplification: JSON/plain output tokens x2.110 [2.110–2.110]" in p.stdout
