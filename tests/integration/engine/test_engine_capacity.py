"""A short capacity search against the real engine, scraping its own /metrics (vLLM's names) every second: each
step's window has the engine's own figures (its requests running never above the step's users, its TTFT counted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.engine.conftest import Engine
from tests.integration.engine.engine_truth import suite_run, summary

pytestmark = pytest.mark.integration


def test_a_short_capacity_search_with_the_engines_metrics(engine: Engine, tmp_path: Path) -> None:
    args = ("-t", "90s", "--llm-max-tokens", "16", "--llm-threshold", "ttft p95 < 200ms")
    args += ("--llm-capacity-start", "4", "--llm-capacity-max", "64", "--llm-capacity-precision", "0.5")
    args += ("--llm-capacity-warmup-s", "1", "--llm-capacity-window-s", "4")
    args += ("--llm-server-metrics", engine.metrics_url, "--llm-server-metrics-interval", "1")
    p = suite_run(engine, tmp_path, *args, locustfile="locustfiles/capacity.py", timeout=150)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    s = summary(tmp_path)
    server, capacity = s["server_metrics"], s["capacity"]
    # the engine's API server shares its one core with the model: under load a scrape may miss its interval, which
    # is counted and never fails the run
    assert server["source"] == "vllm" and server["scrapes"] > 10, server
    assert server["scrapes_failed"] <= 0.1 * server["scrapes"], server
    assert server["running"]["max"] > 0 and server["kv_cache"]["max"] > 0, server
    assert len(capacity["steps"]) >= 2 and capacity["max_users"] >= 4, capacity
    assert capacity["lower_bound"] or capacity["first_failed_users"] > capacity["max_users"], capacity
    for step in capacity["steps"]:  # each step's window has the engine's own account beside ours
        assert step["server"]["scrapes"] >= 2 and step["server"]["ttft"]["count"] > 0, step
        assert step["server"]["running"]["max"] <= step["users"], step
