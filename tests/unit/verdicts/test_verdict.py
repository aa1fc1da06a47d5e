from loadlib.verdicts.verdict import EXIT_CODES, lines, lost, verdict


def result(expr: str, passed: bool | None) -> dict:
    return {"expression": expr, "passed": passed, "reason": f"{expr} judged {passed}"}


def test_no_thresholds_and_no_drills_leave_locusts_rule() -> None:
    assert verdict([], {"client_saturated": True}) is None and lines([], None) == []


def test_pass_fail_and_invalid() -> None:
    assert verdict([result("a", True)], {})["exit_code"] == EXIT_CODES["pass"] == 0
    failed = verdict([result("a", True), result("b", False)], {})
    assert failed["status"] == "fail" and failed["exit_code"] == 99 and failed["reasons"] == ["b: b judged False"]
    unjudged = verdict([result("a", None), result("b", False)], {})
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


def test_an_unjudged_scenario_default_says_where_it_came_from_and_the_ways_out() -> None:
    r = {**result("ttft{scenario=chat} p95 < 1s", None), "origin": "chat SLO"}
    reason = verdict([r], {})["reasons"][0]
    assert reason.endswith("(chat SLO default: run longer, or turn the defaults off with --scenario-slo off)")
