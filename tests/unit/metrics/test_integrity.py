"""Run integrity from hand-fed samples whose truth is known: user-seconds per worker, a loss taken back to the last
heartbeat, intended load capped by the target, a rebalance seen, final reports awaited, and the verdict it gives;
and the warning when the server's token counts disagree with our tokenizer."""

from __future__ import annotations

import pytest

from loadlib.errors import ErrorClass
from loadlib.metrics.integrity import WorkerLedger, integrity_lines
from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary, usage_lines
from loadlib.verdicts.verdict import verdict
from tests.support.records import make_record


def run(kill_at: float | None, seconds: int = 30, rebalance: bool = False) -> WorkerLedger:
    """Two workers of 10 users each, sampled once a second; worker b dies at `kill_at` and is found missing three
    heartbeats later (as Locust does)."""
    ledger = WorkerLedger()
    for t in range(seconds + 1):
        dead = kill_at is not None and t >= kill_at
        found = kill_at is not None and t >= kill_at + 3
        if found:
            ledger.lose("b", float(t), "missing heartbeat")
        users = {"a": 20 if rebalance and found else 10}
        if not found:
            users["b"] = 10
        for name in users:
            if not (name == "b" and dead):
                ledger.heartbeat(name, float(t))
        ledger.tick(float(t), 20, users)
    return ledger


def test_a_complete_run_ran_all_of_its_intended_load() -> None:
    s = run(None).summary()
    assert s["complete"] and s["share"] == 1.0 and s["intended_user_s"] == 600 and s["ran_user_s"] == 600
    assert integrity_lines(s) == ["run integrity OK: 2 workers, 100.0 % of the intended user-seconds ran"]


def test_a_lost_worker_counts_until_half_a_second_after_its_last_heartbeat() -> None:
    s = run(kill_at=12).summary()
    (b,) = [w for w in s["workers"] if w["name"] == "b"]
    assert b["lost_s"] == 11.5 and b["lost_how"] == "missing heartbeat" and b["user_s"] == 115  # truth: 120
    assert s["ran_user_s"] == 300 + 115 and s["share"] == pytest.approx(415 / 600, abs=1e-4)
    assert not s["complete"] and s["rebalanced"] is False
    assert s["reasons"][0] == "worker b lost at 11.5 s (missing heartbeat): its 10 users stopped"
    assert "69.2 % of the intended user-seconds ran (under 95 %)" in s["reasons"][1]


def test_users_moved_onto_the_other_worker_are_not_intended_twice() -> None:
    s = run(kill_at=12, rebalance=True).summary()
    assert s["rebalanced"] is True and s["intended_user_s"] == 600  # a tick counts the second that ends at it
    assert s["ran_user_s"] == 115 + 14 * 10 + 16 * 20 and "moved them onto the other workers" in s["reasons"][0]


def test_a_missing_final_report_makes_the_run_incomplete_once_awaited() -> None:
    ledger = run(None)
    ledger.report("a", final=True, requests=5)
    ledger.report("b", final=False, requests=7)
    ledger.report("b", final=False, requests=1)
    assert [(w["name"], w["reports"], w["requests"]) for w in ledger.summary()["workers"]] == [("a", 1, 5), ("b", 2, 8)]
    assert ledger.awaiting_final(["a", "b"]) == ["b"] and ledger.summary()["complete"], "not awaited yet"
    ledger.ended = True
    s = ledger.summary()
    assert s["reasons"] == ["worker b never sent its final report"]
    assert integrity_lines(s)[0].endswith("; final reports from 1 of 2 workers")


def test_a_ramp_up_is_intended_only_as_far_as_it_spawned() -> None:
    ledger = WorkerLedger()
    for t in range(11):
        ledger.tick(float(t), 20, {"a": min(10, t), "b": min(10, t)})
    assert ledger.summary()["share"] == 1.0


def test_an_incomplete_run_is_its_own_verdict_even_without_thresholds() -> None:
    s = {"integrity": run(kill_at=12).summary()}
    out = verdict([], s)
    assert out is not None and out["status"] == "incomplete" and out["exit_code"] == 3
    assert out["reasons"][0].startswith("run incomplete: worker b lost at 11.5 s")
    assert verdict([], {"integrity": run(None).summary()}) is None, "a complete run keeps Locust's rule"


def deviation_row(over: int, count: int, ratio: float | None) -> dict:
    d = {"count": count, "over_10pct": over, "usage_ratio_p50": ratio}
    return {"name": "chat @ mock", "token_estimate": {"completion": d, "prompt": {"count": 0}}}


def test_usage_that_disagrees_with_the_tokenizer_is_said_with_its_share_and_ratio() -> None:
    (line,) = usage_lines([deviation_row(90, 100, 1.5)])
    assert line == (
        "usage warning, chat @ mock: the server's completion token counts differ from our tokenizer's by over 10 % "
        "on 90 of 100 requests (90 %, median server/estimate 1.50); TPOT, tokens/s and cost use the server's count"
    )
    assert usage_lines([deviation_row(19, 100, 1.02)]) == [], "under a fifth of the requests: no warning"
    assert usage_lines([deviation_row(10, 10, 1.5)]) == [], "too few compared requests to say"


def test_the_usage_ratio_is_signed_and_merged_like_every_histogram() -> None:
    stats = LLMStats()
    for _ in range(30):
        stats.add(make_record(completion_tokens=63, completion_tokens_est=42, status=ErrorClass.OK))
    row = build_summary(stats, 1.0, None, {})["total"]["token_estimate"]["completion"]
    assert row["over_10pct"] == 30 and row["usage_ratio_p50"] == pytest.approx(1.5, rel=1e-3)


def test_time_while_the_test_is_not_running_counts_for_nobody() -> None:
    ledger = WorkerLedger()
    for t in range(6):
        ledger.tick(float(t), 10, {"a": 10})
    ledger.pause(9.0)  # stopping: the worker leaves as it should
    ledger.tick(10.0, 10, {"a": 10})
    assert ledger.summary()["intended_user_s"] == ledger.summary()["ran_user_s"] == 60
