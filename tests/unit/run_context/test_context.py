"""The run context and its node parts: one protocol, shipped by workers, merged on the master, summarised once."""

from __future__ import annotations

from typing import Any

import pytest

from loadlib.errors import ErrorClass
from loadlib.locust.parts import NodePart
from tests.support.records import make_record

# Locust monkey-patches the process on import: imported when these tests run, not when pytest collects (tests that
# start the mock in a thread run earlier and need real threads).
RunContext = context = environment = None


@pytest.fixture(autouse=True)
def _locust() -> None:
    global RunContext, context, environment
    from loadlib.locust.context import RunContext, context
    from tests.support.locust_env import environment


def ok(i: int, ttft: float) -> Any:
    return make_record(request_id=f"q{i}", ttft_ms=ttft, e2e_ms=ttft + 100, itl_ms=(5.0,), completion_tokens=10)


def test_one_context_per_environment_and_nothing_on_the_environment() -> None:
    env = environment()
    before = set(vars(env))
    assert context(env) is context(env)
    assert set(vars(env)) == before, "no attribute soup on Environment"


def test_workers_ship_every_part_and_the_master_merges_them() -> None:
    workers = [context(environment(runner=f"w{i}")) for i in (1, 2)]
    master = context(environment(runner="master"))
    for w in (master, *workers):
        w.start()
    for n, w in enumerate(workers):
        for i in range(10):
            w.record(ok(i, 100.0 * (n + 1)))
        w.record(make_record(status=ErrorClass.RATE_LIMITED, e2e_ms=2.0))
        report: dict[str, Any] = {}
        w.report(report)
        assert {"llm_stats", "llm_health"} <= set(report)
        master.merge(w.node, report)
        assert w.stats.stats.total.requests == 0, "what was shipped is reset"
    summary = master.summary()
    total = summary["total"]
    assert total["count"] == 22 and total["errors"] == {"rate_limited": 2}
    assert 100.0 <= summary["rows"][0]["latency_ms"]["ttft"]["p50"] <= 200.2, "percentiles of both workers' samples"
    assert any(line.startswith("LLM summary") for line in master.lines(summary))
    master.reset()
    assert master.summary()["total"]["count"] == 0


class Broken(NodePart):
    key = "broken"

    def summarize(self, summary: dict[str, Any]) -> None:
        raise RuntimeError("a bug in one part")


def test_a_failing_part_loses_nothing_of_the_others() -> None:
    ctx = RunContext(environment())
    ctx.parts.insert(0, Broken())
    ctx.start()
    ctx.record(ok(1, 50.0))
    summary = ctx.summary()
    assert summary["total"]["count"] == 1
    assert ctx.lines(summary), "the other parts still print"


def test_the_open_loop_schedule_is_made_at_start_on_load_nodes_only() -> None:
    local = context(environment("--arrival-rate", "4", "--arrival-process", "constant"))
    local.start()
    assert local.arrivals is not None and local.arrivals.rate_per_s == 4
    master = context(environment("--arrival-rate", "4", runner="master"))
    master.start()
    assert master.arrivals is None and master.settings is None
