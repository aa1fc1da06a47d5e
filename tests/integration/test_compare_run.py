"""One real run of a pool of three embedded mocks side by side (fast and dear, in between, slow and cheap) under one
load, then `python -m loadlib compare` on its summary: the Pareto front and the recommendation come out as the mocks'
speeds and prices say they must."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.integration.locust_runs import headless, load, locust_cmd, run

pytestmark = pytest.mark.integration

# TTFT 40 / 150 / 500 ms; USD per million tokens chosen so that at the chat mix (about 37 % prompt tokens) the blended
# price per 1K tokens is about $0.009, $0.0009 and $0.0002: only `middle` is both under 380 ms and at most $0.0015.
POOL = """policy: weighted
endpoints:
  - {name: fast, mock: {ttft_ms: 40, itl_ms: 2}, model: fast-model, prices: {input: 3.0, output: 12.0}}
  - {name: middle, mock: {ttft_ms: 150, itl_ms: 2}, model: middle-model, prices: {input: 0.4, output: 1.2}}
  - {name: slow, mock: {ttft_ms: 500, itl_ms: 2}, model: slow-model, prices: {input: 0.1, output: 0.3}}
"""


def test_a_pool_measured_side_by_side_is_compared_and_the_middle_endpoint_recommended(tmp_path: Path) -> None:
    pool, summary = tmp_path / "pool.yaml", tmp_path / "summary.json"
    pool.write_text(POOL)
    proc = run(locust_cmd(*headless(6, 5), "--llm-pool", str(pool), "--llm-summary", str(summary)), timeout=90)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = load(summary)["rows"]
    assert {r["endpoint"] for r in rows} == {"fast", "middle", "slow"}, "the weighted policy spreads over all three"

    html, md = tmp_path / "cmp.html", tmp_path / "cmp.md"
    # --min-context off: a pool's probe cannot tell one endpoint's window from another's (docs/comparison.md)
    cmd = [sys.executable, "-m", "loadlib", "compare", str(summary), "-o", str(html), "--markdown", str(md)]
    compared = run([*cmd, "--pool", str(pool), "--min-context", "off"], timeout=60)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    lines = compared.stdout.splitlines()
    assert lines[0].startswith("Recommended: middle, the only endpoint that passes every bar"), lines
    assert lines[1] == "Pareto front (TTFT p95 against blended $ per 1K tokens): fast, middle, slow"
    text = md.read_text()
    assert "- fast: fails cost:" in text and "- slow: fails latency: TTFT p95" in text
    assert "prices from the pool file's entry for this endpoint" in text
    page = html.read_text()
    assert "<svg" in page and "<script" not in page.lower()
