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


def stalled_run(stop_at: int, cont_at: float, seconds: int = 30, recount_after: float = 0.0) -> WorkerLedger:
    """Two workers of 10 users; worker b stops (SIGSTOP) at `stop_at` and continues at `cont_at`: Locust finds it
    missing three heartbeats after its last one and forgets its users, its first heartbeat after the stall comes at
    `cont_at`, and Locust learns its users again `recount_after` later."""
    ledger = WorkerLedger()
    for t in range(seconds + 1):
        stalled = stop_at <= t < cont_at
        missing = stop_at + 3 <= t and (stalled or t < cont_at + recount_after)
        if stop_at + 3 <= t < cont_at:
            ledger.lose("b", float(t), "missing heartbeat")
        if t - 1 < cont_at <= t:
            ledger.heartbeat("b", cont_at)
        users = {"a": 10} | ({} if missing else {"b": 10})
        for name in users:
            if not (name == "b" and stalled):
                ledger.heartbeat(name, float(t))
        ledger.tick(float(t), 20, users)
    return ledger


def test_a_stalled_worker_that_recovers_is_not_lost_and_its_stall_is_kept() -> None:
    s = stalled_run(stop_at=10, cont_at=20.4).summary()
    (b,) = [w for w in s["workers"] if w["name"] == "b"]
    assert b["lost_s"] is None and b["lost_how"] is None and b["stalls"] == [{"from_s": 9.5, "to_s": 20.4}]
    assert b["user_s"] == pytest.approx(10 * 9.5 + 10 * (30 - 20.4)), "idle from its last heartbeat to the next"
    assert s["intended_user_s"] == 600 and s["rebalanced"] is False
    assert not s["complete"] and s["reasons"] == ["81.8 % of the intended user-seconds ran (under 95 %)"]
    assert "  worker b stalled 10.9 s (no heartbeat) and recovered at 20.4 s" in integrity_lines(s)


def test_a_short_stall_in_a_long_run_is_said_but_the_share_decides() -> None:
    s = stalled_run(stop_at=10, cont_at=14.2, seconds=200).summary()
    assert s["complete"] and s["share"] > 0.95
    assert integrity_lines(s)[1] == "  worker b stalled 4.7 s (no heartbeat) and recovered at 14.2 s"


def test_users_locust_learns_again_only_later_count_from_the_recovery() -> None:
    """Locust forgets a missing worker's users and learns them from its next spawn or report: the users ran all
    along, so they count from the recovery; intended meanwhile holds the users it had."""
    late = stalled_run(stop_at=10, cont_at=20.4, recount_after=2.0).summary()
    assert late["ran_user_s"] == stalled_run(stop_at=10, cont_at=20.4).summary()["ran_user_s"]
    assert late["intended_user_s"] == 600


def test_a_worker_locust_still_holds_missing_after_its_heartbeat_is_not_lost_again() -> None:
    ledger = stalled_run(stop_at=10, cont_at=20.4, seconds=21)
    assert ledger.lose("b", 21.5, "missing heartbeat") is False, "Locust rebalances before it updates the state"
    assert ledger.lose("b", 23.5, "missing heartbeat") is False
    assert ledger.lose("b", 25.0, "missing heartbeat") is True and ledger.workers["b"].lost_s == 21.5


def test_a_worker_refused_before_it_took_users_is_only_a_refusal() -> None:
    ledger = run(None)
    ledger.refuse("c", 10.0, "its locustfile differs from the master's")
    s = ledger.summary()
    assert s["complete"] and s["share"] == 1.0 and [w["name"] for w in s["workers"]] == ["a", "b"]
    assert s["refused"] == [
        {"name": "c", "at_s": 10.0, "reason": "its locustfile differs from the master's", "had_users": False}
    ]
    assert integrity_lines(s)[1] == (
        "  worker c refused at 10.0 s before it took any users: its locustfile differs from the master's"
    )


def test_a_worker_refused_after_it_took_users_is_lost_there() -> None:
    ledger = WorkerLedger()
    for t in range(21):
        users = {"a": 10, "b": 10} | ({"c": 5} if 5 <= t < 12 else {})
        for name in users:
            ledger.heartbeat(name, float(t))
        if t == 12:
            ledger.refuse("c", 11.6, "it runs loadlib 0.0.9, the master 0.1.0")
        ledger.tick(float(t), 25, users)
    s = ledger.summary()
    (c,) = [w for w in s["workers"] if w["name"] == "c"]
    assert c["lost_how"] == "refused" and c["lost_s"] == 11.6 and c["user_s"] == pytest.approx(5 * 7 + 5 * 0.6)
    assert s["refused"][0]["had_users"] and not s["complete"]
    assert s["reasons"][0] == "worker c lost at 11.6 s (refused): its 5 users stopped"


def test_a_recovery_while_the_test_is_not_running_counts_for_nobody() -> None:
    ledger = WorkerLedger()
    for t in range(13):
        ledger.heartbeat("a", float(t))
        if t < 10:
            ledger.heartbeat("b", float(t))
        ledger.tick(float(t), 20, {"a": 10, "b": 10})
    assert ledger.lose("b", 13.0, "missing heartbeat")
    ledger.tick(13.0, 20, {"a": 10})
    assert ledger.heartbeat("b", 13.5) == (9.5, 13.5)
    ledger.pause(14.0)
    ledger.tick(15.0, 20, {"a": 10, "b": 10})
    assert ledger.workers["b"].user_s == pytest.approx(10 * 9.5 + 10 * 1.0)
