from loadlib.verdicts.verdict import EXIT_CODES, lines, verdict


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
