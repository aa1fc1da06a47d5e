import re
from pathlib import Path

from loadlib.verdicts.verdict import EXIT_CODES, lines, lost, no_verdict, verdict, verdict_line

NO_THRESHOLDS_PASS = "no failed request (no thresholds: Locust's rule)"


def result(expr: str, passed: bool | None) -> dict:
    return {"expression": expr, "passed": passed, "reason": f"{expr} judged {passed}"}


def test_no_thresholds_and_no_drills_leave_locusts_rule() -> None:
    assert verdict([], {"client_saturated": True}) is None and lines([], None) == []


def test_pass_fail_and_invalid() -> None:
    assert verdict([result("a", True)], {})["exit_code"] == EXIT_CODES["pass"] == 0
    failed = verdict([result("a", True), result("b", False)], {})
    assert failed["status"] == "fail" and failed["exit_code"] == 99 and failed["reasons"] == ["b: b judged False"]
    unjudged = verdict([result("a", None), result("b", True)], {})
    assert unjudged["status"] == "invalid" and unjudged["exit_code"] == 3  # numbers that cannot be trusted
    saturated = verdict([result("a", True)], {"client_saturated": True, "client": {"reasons": ["loop lag 80 ms"]}})
    assert saturated["status"] == "invalid" and "loop lag 80 ms" in saturated["reasons"][0]


def test_a_failed_drill_fails_the_run_even_without_thresholds() -> None:
    summary = {"failover": {"drills": [{"index": 1, "endpoint": "primary", "passed": False}]}}
    assert verdict([], summary)["status"] == "fail"
    summary["failover"]["drills"][0]["passed"] = True
    assert verdict([], summary)["status"] == "pass"


def test_console_lines_name_each_threshold_and_the_exit_code() -> None:
    out = lines([result("a", True), result("b", False)], verdict([result("a", True), result("b", False)], {}))
    assert out[0] == "Thresholds:" and out[1].startswith("  pass  a") and out[2].startswith("  FAIL  b")
    assert out[-1].startswith("Verdict: FAIL (exit code 99): b")


ABORTED = {"after_s": 12.34, "thresholds": ["b"], "reasons": ["b: ttft p95 = 900 ms > 150 ms"]}


def test_an_aborted_run_fails_even_when_the_last_reports_recovered() -> None:
    out = verdict([result("b", True)], {"aborted": ABORTED})
    assert out["status"] == "fail" and out["exit_code"] == 99
    assert out["reasons"][0] == "aborted after 12.3 s: b: ttft p95 = 900 ms > 150 ms"


def test_an_abort_is_not_made_invalid_by_samples_it_cut_short_but_by_a_saturated_client() -> None:
    assert verdict([result("a", None), result("b", False)], {"aborted": ABORTED})["status"] == "fail"
    saturated = {"aborted": ABORTED, "client_saturated": True, "client": {"reasons": ["loop lag 80 ms"]}}
    assert verdict([result("b", False)], saturated)["status"] == "invalid"


def test_an_interrupted_run_is_interrupted_whatever_its_numbers() -> None:
    for results in ([result("a", True)], [result("b", False)], [result("c", None)]):
        out = verdict(results, {"interrupted": True, "duration_s": 4.2})
        assert out["status"] == "interrupted" and out["exit_code"] == EXIT_CODES["interrupted"] == 130
        assert out["reasons"][0].startswith("interrupted after 4.2 s")


def judged(metric: str, op: str, value: float, limit: float) -> dict:
    return {"expression": f"{metric} {op} {limit}", "metric": metric, "op": op, "value": value, "limit": limit}


def test_lost_thresholds_are_sampled_numbers_as_they_stand_and_totals_past_an_upper_bound() -> None:
    cases = [
        (judged("error_rate", "<", 0.2, 0.01), True),  # a rate: judged as it stands
        (judged("output_tokens_per_s", ">", 10.0, 500.0), True),  # the delay covers the ramp-up
        (judged("errors", "<", 12, 10), True),  # errors only grow: lost for good
        (judged("requests", ">", 40, 1000), False),  # not reached yet, not lost
        (judged("cost_usd", ">=", 0.1, 1.0), False),
        (judged("errors", "==", 3, 0), True),
        (judged("errors", "==", 0, 3), False),
    ]
    for r, is_lost in cases:
        r["passed"] = False
        assert (lost([r]) == [r]) is is_lost, r["expression"]
    assert lost([{**cases[0][0], "passed": None}]) == [], "cannot say is not lost"


def test_a_judged_failure_decides_fail_whatever_else_could_not_be_judged() -> None:
    out = verdict([result("a", None), result("b", False)], {})
    assert out["status"] == "fail" and out["exit_code"] == 99
    assert out["reasons"] == ["b: b judged False", "a: a judged None"], "the unjudged one is still named"


def test_scenario_defaults_that_cannot_be_judged_decide_nothing_and_user_thresholds_stay_strict() -> None:
    default = {**result("ttft{scenario=chat} p95 < 1s", None), "origin": "chat SLO"}
    out = verdict([default, result("error_rate < 1%", True)], {})
    assert out == {"status": "pass", "exit_code": 0, "reasons": []}
    shown = lines([default, result("error_rate < 1%", True)], out)
    assert (
        shown[1].startswith("  skip  ttft{scenario=chat} p95 < 1s") and "1 scenario SLO default not judged" in shown[3]
    )
    assert shown[-1] == "Verdict: PASS (exit code 0)"
    mine = verdict([result("ttft p95 < 1s", None)], {})
    assert mine["status"] == "invalid" and mine["reasons"] == ["ttft p95 < 1s: ttft p95 < 1s judged None"]


def test_a_saturated_client_outranks_a_failure_and_an_incomplete_run_outranks_both() -> None:
    saturated = {"client_saturated": True, "client": {"reasons": ["loop lag 80 ms"]}}
    assert verdict([result("b", False)], saturated)["status"] == "invalid"
    incomplete = {**saturated, "integrity": {"reasons": ["worker w1 lost at 3.0 s"]}}
    out = verdict([result("b", False)], incomplete)
    assert out["status"] == "incomplete" and out["reasons"][0] == "run incomplete: worker w1 lost at 3.0 s"


def test_stops_of_our_own_decide_with_their_one_line_and_exit_code_2() -> None:
    for key in ("fatal", "not_started"):
        out = verdict([result("a", False)], {key: "the one line", "interrupted": True})
        assert out == {"status": key, "exit_code": 2, "reasons": ["the one line"]}
        assert lines([], out) == [f"Verdict: {key.replace('_', ' ').upper()} (exit code 2): the one line"]
    assert verdict([], {"fatal": "x"})["status"] == "fatal", "even without thresholds"
    assert verdict([], {"interrupted": True})["status"] == "interrupted", "even without thresholds"


def test_without_a_verdict_locusts_rule_is_stated_with_its_code() -> None:
    assert no_verdict(0, 0) == {"status": "pass", "exit_code": 0, "reasons": [NO_THRESHOLDS_PASS]}
    failed = no_verdict(7, 1)
    assert failed["status"] == "errors" and failed["exit_code"] == 1 and failed["reasons"][0].startswith("7 failed")
    assert verdict_line(failed).startswith("Verdict: ERRORS (exit code 1): 7 failed requests")


def test_without_thresholds_a_saturated_client_keeps_the_code_but_the_verdict_line_says_so() -> None:
    busy = {"client_saturated": True, "client": {"reasons": ["worker CPU p90 96.9 % > 90 %"]}}
    out = no_verdict(0, 0, busy)
    assert out["exit_code"] == 0 and out["reasons"][0] == NO_THRESHOLDS_PASS
    assert out["reasons"][1] == (
        "client saturated: worker CPU p90 96.9 % > 90 % (without thresholds it does not set the exit code)"
    )
    assert no_verdict(0, 0, {"client_saturated": False})["reasons"] == [NO_THRESHOLDS_PASS]


def test_a_run_where_no_attempt_completed_is_invalid_even_without_thresholds() -> None:
    cut = {"duration_s": 3.0, "total": {"count": 4, "cut_off": 4, "errors": {}}}
    outcome = verdict([], cut)
    assert outcome["status"] == "invalid" and outcome["exit_code"] == 3
    assert outcome["reasons"] == ["no attempt completed (4 cut off by the end of the run): nothing to judge"]
    assert verdict([result("a", True)], {"duration_s": 3.0, "total": {"count": 0, "errors": {}}})["status"] == "invalid"
    one_done = {"duration_s": 3.0, "total": {"count": 5, "cut_off": 4, "errors": {}}}
    assert verdict([], one_done) is None  # Locust's rule, as before
    never_started = {"duration_s": 0.0, "total": {"count": 0, "errors": {}}}  # a web UI closed before any test
    assert verdict([], never_started) is None
    interrupted = verdict([], {**cut, "interrupted": True})
    assert interrupted["status"] == "interrupted" and "no attempt completed" in interrupted["reasons"][1]


def test_the_exit_code_table_of_outputs_md_is_the_verdicts_own() -> None:
    """docs/outputs.md, "Exit codes": every status the verdict can give is a row with its code (and Locust's rule,
    `errors`, with its default 1); no row names a status or a code the verdict does not give."""
    doc = (Path(__file__).resolve().parents[3] / "docs" / "outputs.md").read_text()
    section = doc.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| `(\w+)` \| (.+) \|$", section, flags=re.M)
    assert {(status, int(code)) for code, status, _ in rows} == {*EXIT_CODES.items(), ("errors", 1)}
    assert all(len(path) > 20 for _, _, path in rows), "each row says the path that produces it"


FAILED_ALL = {"duration_s": 6.0, "total": {"count": 12, "ok": 0, "errors_total": 12, "errors": {"http_5xx": 12}}}
SKIPPED = [
    {**result("ttft{scenario=chat} p95 < 1s", None), "origin": "chat SLO"},
    {**result("error_rate{scenario=chat} < 1%", None), "origin": "chat SLO"},
]


def test_a_run_in_which_no_request_succeeded_fails_whatever_its_thresholds_say() -> None:
    out = verdict([result("requests > 5", True)], FAILED_ALL, {"http_5xx": "upstream timed out"})
    assert out["status"] == "fail" and out["exit_code"] == 99
    assert out["reasons"][0].startswith("no request succeeded (12 failed: http_5xx 12): the server failed every")
    both = verdict([result("error_rate < 1%", False)], FAILED_ALL)
    assert both["reasons"][0].startswith("no request succeeded") and both["reasons"][1].startswith("error_rate")
    stopped = verdict([], {**FAILED_ALL, "interrupted": True})
    assert stopped["status"] == "interrupted" and stopped["reasons"][1].startswith("no request succeeded")
    assert verdict([], FAILED_ALL) is None, "without thresholds Locust's rule decides, and says the cause"


def test_scenario_defaults_none_could_judge_leave_the_run_to_locusts_rule() -> None:
    assert verdict(SKIPPED, {"duration_s": 6.0, "total": {"count": 12, "ok": 9, "errors_total": 3}}) is None
    summary = {"thresholds": SKIPPED, "total": {"count": 12, "ok": 9, "errors_total": 3, "errors": {"http_5xx": 3}}}
    out = no_verdict(3, 1, summary)
    assert out == {
        "status": "errors",
        "exit_code": 1,
        "reasons": ["3 failed requests (none of the 2 scenario SLO defaults could be judged: Locust's rule)"],
    }
    assert lines(SKIPPED, None)[:2] == [
        "Thresholds:",
        "  skip  ttft{scenario=chat} p95 < 1s: ttft{scenario=chat} p95 < 1s judged None",
    ], "the web UI shows the table while Locust's rule would decide"
    assert not any(line.startswith("Verdict:") for line in lines(SKIPPED, None))
    clean = no_verdict(0, 0, {"thresholds": SKIPPED[:1]})
    assert clean["reasons"] == ["no failed request (the scenario SLO default could not be judged: Locust's rule)"]
    assert verdict([*SKIPPED, result("ttft p95 < 1s", None)], {})["status"] == "invalid", "yours stay strict"


def test_without_a_verdict_a_run_in_which_nothing_succeeded_names_the_cause_and_never_exits_0() -> None:
    out = no_verdict(12, 1, {**FAILED_ALL, "thresholds": SKIPPED})
    assert out["status"] == "errors" and out["exit_code"] == 1
    assert out["reasons"][0].startswith("no request succeeded (12 failed: http_5xx 12): the server failed every")
    assert out["reasons"][0].endswith("(none of the 2 scenario SLO defaults could be judged: Locust's rule)")
    allowed = no_verdict(12, 0, FAILED_ALL)  # --exit-code-on-error 0 allows errors, not a run without an answer
    assert allowed["status"] == "errors" and allowed["exit_code"] == 1
    some = no_verdict(3, 0, {"total": {"ok": 9, "errors_total": 3}})
    assert some["status"] == "pass" and some["reasons"] == [
        "3 failed requests, allowed by --exit-code-on-error 0 (no thresholds: Locust's rule)"
    ]
