"""Scenario results: counting, shipping and merging across workers, the summary dict, the text."""

from __future__ import annotations

import pytest

from loadlib.metrics import chat_results, compliance_results, document_results
from loadlib.metrics import scenarios as r
from loadlib.metrics.scenarios import OPEN_LOOP, ScenarioResults

SECTIONS = {
    "support_chat": chat_results.SECTION,
    "long_document": document_results.SECTION,
    "compliance": compliance_results.SECTION,
    "open_loop": OPEN_LOOP,
}


def fill_worker(e: ScenarioResults, ttft: float) -> None:
    for turn in (1, 2, 3):
        for _ in range(10):
            chat_results.chat_turn(e, turn, 400 + 100 * (turn - 1), ttft + turn, None, 100.0 if turn > 1 else None)
    chat_results.chat_turn(e, 1, 2100, ttft + 50, 2000)
    chat_results.chat_turn(e, 1, 200, ttft, 100)
    chat_results.conversation(e, "started")
    chat_results.conversation(e, "completed")
    for outcome in ("fits", "fits", "truncated", "context_length_exceeded"):
        document_results.document_outcome(e, "whole", outcome)
    document_results.chunked_document(e, 10_000, 11_000, 11_500, 6, True)
    document_results.probe_step(e, 8_000, "fits", 8_000)
    document_results.probe_step(e, 16_000, "context_length_exceeded", None)
    compliance_results.compliance_check(e, True)
    compliance_results.compliance_check(e, False)
    compliance_results.compliance_compare(e, True)
    compliance_results.audit_written(e, "/tmp/audit.jsonl")
    r.open_loop_config(e, f"w{ttft}", 5.0, "poisson")
    r.open_loop_sent(e)


def test_two_workers_merge_into_the_masters_totals() -> None:
    master, w1, w2 = ScenarioResults(), ScenarioResults(), ScenarioResults()
    fill_worker(w1, 100.0)
    fill_worker(w2, 200.0)
    for w in (w1, w2):
        data = w.serialize()
        w.reset()
        assert not w.counts and w.gauges, "counters reset, gauges stay"
        master.merge_serialized(data)
    s = r.scenario_summary(master, {"rows": [], "duration_s": 2.0}, SECTIONS)
    chat = s["support_chat"]
    assert [t["requests"] for t in chat["turns"]] == [24, 20, 20]
    assert chat["turns"][1]["prompt_tokens_mean"] == 500
    assert chat["turns"][1]["ttft_p50_ms"] == pytest.approx(102, rel=0.01), "p50 of the merged samples"
    assert chat["turns"][1]["ttft_p95_ms"] == pytest.approx(202, rel=0.01)
    assert chat["prompt_tokens_per_turn"] == 100.0, "the mean growth within conversations, merged"
    assert [st["system_tokens"] for st in chat["sweep"]] == [100, 2000]
    assert chat["conversations"] == {"started": 2, "completed": 2}
    doc = s["long_document"]
    assert doc["whole"] == {"fits": 4, "context_length_exceeded": 2, "truncated": 2, "unverified": 0, "error": 0}
    assert doc["chunked"]["overlap_overhead_pct"] == pytest.approx(10.0)
    assert doc["chunked"]["prompt_overhead_pct"] == pytest.approx(15.0)
    assert doc["probe"]["largest_fit"] == 8000 and doc["probe"]["smallest_failure"] == 16000
    assert doc["probe"]["failure"] == "context_length_exceeded" and doc["probe"]["largest_billed"] == 8000
    comp = s["compliance"]
    assert comp["schema_valid_share"] == 0.5 and comp["deterministic_share"] == 1.0
    assert comp["audit_files"] == [{"path": "/tmp/audit.jsonl", "lines": 2}]
    assert s["open_loop"] == {"target_rps": 10.0, "process": "poisson", "workers": 2, "sent": 2, "achieved_rps": 1.0}


def test_empty_results_give_no_block() -> None:
    assert r.scenario_summary(ScenarioResults(), {"rows": []}, SECTIONS) is None
    assert r.render_scenarios({"scenarios": None}, SECTIONS) == ""


def row(scenario: str, ttft_p95: float, error_rate: float) -> dict:
    return {
        "scenario": scenario,
        "endpoint": "mock",
        "error_rate": error_rate,
        "latency_ms": {"ttft": {"p95": ttft_p95}, "e2e": {"p95": 900.0}},
    }


def test_render_mentions_every_finding() -> None:
    e = ScenarioResults()
    fill_worker(e, 100.0)
    summary = {"rows": [row("support_chat", 120.0, 0.0)], "duration_s": 2.0}
    summary["scenarios"] = r.scenario_summary(e, summary, SECTIONS)
    text = r.render_scenarios(summary, SECTIONS)
    for needle in (
        "support_chat:",
        "turn 3:",
        "system prompt 2,000 tokens",
        "long_document (whole): fits 2, context_length_exceeded 1, truncated 1",
        "overlap overhead 10.0 %",
        "limit between 8,000 (fits) and 16,000 (context_length_exceeded)",
        "schema-valid 50.0 %",
        "audit file: /tmp/audit.jsonl (1 lines)",
        "open loop (poisson): target 5.0 req/s",
    ):
        assert needle in text, needle
