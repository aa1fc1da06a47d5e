"""A capacity run's verdict: its thresholds are judged per step, so the run passes with what it found, fails (99)
below --llm-capacity-min and says so in the verdict line, and is not made invalid by its own overload."""

from __future__ import annotations

from typing import Any

from loadlib.verdicts.verdict import verdict, verdict_line


def summary(max_users: int, minimum: int | None, lower_bound: bool = False) -> dict[str, Any]:
    gate = None if minimum is None else max_users >= minimum
    capacity = {"max_users": max_users, "minimum": minimum, "gate_passed": gate, "lower_bound": lower_bound}
    total = {"count": 100, "cut_off": 0}
    return {"duration_s": 60.0, "total": total, "capacity": capacity, "client_saturated": True}


def test_below_the_gate_fails_with_exit_99_and_says_so() -> None:
    v = verdict([], summary(12, 40))
    assert v is not None and (v["status"], v["exit_code"]) == ("fail", 99)
    assert verdict_line(v) == "Verdict: FAIL (exit code 99): capacity max_users 12 < --llm-capacity-min 40"


def test_at_or_above_the_gate_passes_even_as_a_lower_bound() -> None:
    v = verdict([], summary(40, 40, lower_bound=True))
    assert v is not None and v["exit_code"] == 0
    assert v["reasons"] == ["capacity max_users 40 (a lower bound) >= --llm-capacity-min 40"]


def test_without_a_gate_the_run_passes_and_names_its_answer() -> None:
    v = verdict([], summary(25, None))
    assert v is not None and v["status"] == "pass" and v["reasons"] == ["capacity max_users 25"]


def test_a_search_that_finished_no_step_is_invalid_not_a_lower_bound_of_zero() -> None:
    s = summary(0, None, lower_bound=True)
    s["capacity"] |= {"steps": [], "stopped": "the run ended"}
    v = verdict([], s)
    assert v is not None and (v["status"], v["exit_code"]) == ("invalid", 3)
    assert v["reasons"][0].startswith("the capacity search finished no step: the run ended; give -t room")
    s["capacity"]["steps"] = [{"step": 1, "users": 4, "passed": True}]
    held = verdict([], s)
    assert held is not None and held["exit_code"] == 0  # one finished step: a lower bound, which passes


def test_a_search_saturated_at_its_first_step_points_at_workers_not_at_the_run_time() -> None:
    s = summary(0, None, lower_bound=True)
    s["capacity"] |= {"steps": [], "stopped": "the client saturated at 4 users (CPU p90 97 %)"}
    v = verdict([], s)
    assert v is not None and v["exit_code"] == 3 and "add workers or start lower" in v["reasons"][0]
    assert "-t" not in v["reasons"][0]


def test_a_search_in_which_no_load_held_fails() -> None:
    s = summary(0, None)
    failing = {"step": 1, "users": 1, "passed": False}
    s["capacity"] |= {"steps": [failing], "first_failed_users": 1, "first_failed_by": ["ttft p95 < 500ms: 900 ms"]}
    v = verdict([], s)
    assert v is not None and (v["status"], v["exit_code"]) == ("fail", 99)
    why = "capacity max_users 0: no load tried held (first failing 1 user: ttft p95 < 500ms: 900 ms)"
    assert v["reasons"] == [why]
    s["capacity"]["lower_bound"] = True  # cut short after it: still no load shown to hold
    cut = verdict([], s)
    assert cut is not None and cut["exit_code"] == 99
