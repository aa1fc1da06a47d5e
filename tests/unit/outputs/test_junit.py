"""The JUnit report: valid against the common JUnit schema (the Jenkins xUnit plugin's junit-10, vendored in
tests/fixtures/junit.xsd) and read back by junitparser as CI systems would: one testcase per threshold, the client
verdict and each drill check, with the right outcome and message."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import xmlschema
from junitparser import Error, Failure, JUnitXml, Skipped, TestCase, TestSuite

from loadlib.outputs.junit import CLIENT_CASE, SUITE_NAME, junit_xml, write_junit
from loadlib.redact import Redactor

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "summaries").glob("*.json"))
JUNIT_XSD = xmlschema.XMLSchema(str(ROOT / "tests" / "fixtures" / "junit.xsd"))


def load(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "tests" / "fixtures" / "summaries" / f"{name}.json").read_text())


def suite_of(xml: str) -> TestSuite:
    """The one suite, after checking the document against the schema."""
    JUNIT_XSD.validate(xml)
    suites = list(JUnitXml.fromstring(xml))
    assert len(suites) == 1
    return suites[0]


def cases(xml: str) -> dict[str, TestCase]:
    return {c.name: c for c in suite_of(xml)}


def outcome(case: TestCase) -> tuple[str, str | None]:
    """("passed", None) or the result element's kind and message."""
    if not case.result:
        return "passed", None
    (result,) = case.result
    return type(result).__name__.lower(), result.message


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_real_summary_gives_a_valid_report(path: Path) -> None:
    suite = suite_of(junit_xml(json.loads(path.read_text())))
    assert suite.name == SUITE_NAME
    assert CLIENT_CASE in {c.name for c in suite}


def test_one_case_per_threshold_with_its_outcome() -> None:
    summary = load("chat_with_verdict")
    suite = suite_of(junit_xml(summary, summary["thresholds"]))
    by_name = {c.name: c for c in suite}
    assert outcome(by_name["ttft p95 < 150ms"]) == ("passed", None)
    assert by_name["ttft p95 < 150ms"].classname == "loadlib.ttft"
    assert by_name["ttft p95 < 150ms"].system_out.startswith("value 52.7 ms, limit < 150 ms, 21 samples")
    kind, message = outcome(by_name["e2e p95 < 0.5s"])
    assert kind == "failure"
    assert message == "e2e p95 < 0.5s: value 0.682 s, limit < 0.5 s, 21 samples"
    assert by_name["e2e p95 < 0.5s"].result[0].text == "e2e p95 = 0.6825 s > 0.5 s (21 requests)"
    kind, message = outcome(by_name["ttft{endpoint=mock} p99 < 100ms"])
    assert (kind, message) == ("skipped", "not judged: 21 requests, too few to judge a p99 (at least 100)")
    assert isinstance(by_name["ttft{endpoint=mock} p99 < 100ms"].result[0], Skipped)
    assert outcome(by_name["error_rate{scenario=chat} < 1%"]) == ("passed", None)
    assert "value 0.0 %, limit < 1 %" in by_name["error_rate{scenario=chat} < 1%"].system_out
    assert "value 14.8, limit <= 20" in by_name["itl p99 <= 20"].system_out  # a bare number stays bare


def test_suite_counts_and_properties() -> None:
    summary = load("chat_with_verdict")
    suite = suite_of(junit_xml(summary, summary["thresholds"]))
    # 5 thresholds (1 failed, 1 skipped) + saturated client (failure) + invalid run (error)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (7, 2, 1, 1)
    assert suite.time == pytest.approx(5.049)
    props = {p.name: p.value for p in suite.properties()}
    assert props["run_id"] == "20261130-201024-5fb7"
    assert props["host"] == "http://127.0.0.1:44927/v1"
    assert props["duration_s"] == "5.049"
    assert (props["schema"], props["verdict"], props["exit_code"]) == ("loadlib-summary/1", "invalid", "3")


def test_thresholds_default_to_the_summarys_own_and_an_explicit_list_wins() -> None:
    summary = load("chat_with_verdict")
    assert junit_xml(summary) == junit_xml(summary, summary["thresholds"])
    assert set(cases(junit_xml(summary, []))) == {CLIENT_CASE, "run verdict"}


@pytest.mark.parametrize(
    ("saturated", "expected"),
    [(True, "failure"), (False, "passed"), (None, "skipped")],
)
def test_the_client_saturation_case(saturated: bool | None, expected: str) -> None:
    summary = load("chat_with_verdict")
    summary["client_saturated"] = saturated
    if saturated is None:
        summary["client"] = None
    else:
        summary["client"]["saturated"] = saturated
    case = cases(junit_xml(summary, []))[CLIENT_CASE]
    kind, message = outcome(case)
    assert kind == expected
    if saturated:
        assert message is not None and message.startswith("worker event-loop lag p99 75.9 ms > 50 ms")
    if saturated is False:
        assert case.system_out.startswith("loop lag p99 75.9 ms, CPU p90 7.4 %")


def test_one_case_per_drill_check() -> None:
    summary = load("failover_drill")
    by_name = cases(junit_xml(summary, []))
    assert outcome(by_name["drill 1 primary http_503: failover_s"]) == ("passed", None)
    assert by_name["drill 1 primary http_503: failover_s"].system_out == "failover 0.58 s <= 5 s"
    assert by_name["drill 1 primary http_503: user_error_rate"].classname == "loadlib.failover"

    check = summary["failover"]["drills"][0]["checks"][0]
    check.update(passed=False, value=7.5, reason="failover 7.5 s > 5 s")
    failed = cases(junit_xml(summary, []))["drill 1 primary http_503: failover_s"]
    assert outcome(failed) == ("failure", "failover 7.5 s > 5 s")


def test_a_drill_without_targets_still_shows() -> None:
    summary = load("failover_drill")
    summary["failover"]["drills"][0]["checks"] = []
    case = cases(junit_xml(summary, []))["drill 1 primary http_503"]
    assert outcome(case) == ("skipped", "no targets set for this drill")


@pytest.mark.parametrize("status", ["invalid", "interrupted", "config_error"])
def test_a_run_that_cannot_be_judged_is_an_error(status: str) -> None:
    summary = load("chat_with_verdict")
    summary["verdict"] = {"status": status, "exit_code": 3, "reasons": ["stopped by SIGINT after 5 s"]}
    case = cases(junit_xml(summary, []))["run verdict"]
    assert outcome(case) == ("error", f"{status}: stopped by SIGINT after 5 s")
    assert isinstance(case.result[0], Error)


@pytest.mark.parametrize("status", ["pass", "fail"])
def test_pass_and_fail_need_no_extra_case(status: str) -> None:
    summary = load("chat_with_verdict")
    summary["verdict"] = {"status": status, "exit_code": int(status == "fail"), "reasons": []}
    assert "run verdict" not in cases(junit_xml(summary))


def test_markup_and_control_characters_cannot_break_the_document() -> None:
    summary = copy.deepcopy(load("chat_with_verdict"))
    hostile = 'ttft p95 < 150ms & "quoted" <tag>\x00\x1b end'
    summary["thresholds"][1].update(expression=hostile, reason="line one\nline two\x07")
    summary["meta"]["run_id"] = "run\x0b1"
    by_name = cases(junit_xml(summary))
    name = 'ttft p95 < 150ms & "quoted" <tag>\ufffd\ufffd end'
    assert name in by_name
    assert by_name[name].result[0].text == "line one\nline two\ufffd"
    assert isinstance(by_name[name].result[0], Failure)


def test_no_duration_no_time_attribute() -> None:
    summary = load("chat_with_verdict")
    summary["duration_s"] = None
    summary["meta"]["started_at"] = None
    xml = junit_xml(summary)
    assert 'time="' not in xml.split("<testcase")[0]
    suite_of(xml)


def test_write_junit_writes_the_file_with_secrets_masked(tmp_path: Path) -> None:
    summary = load("chat_with_verdict")
    secret = "sk-test-0123456789abcdef"
    summary["meta"]["host"] = f"http://127.0.0.1:1/v1?key={secret}"
    summary["thresholds"][1]["reason"] = f"upstream said: bad key {secret}"
    target = tmp_path / "reports" / "junit.xml"
    assert write_junit(str(target), summary, redact=Redactor([secret])) is None
    text = target.read_text(encoding="utf-8")
    assert secret not in text and "0123456789abcdef" not in text
    suite = suite_of(text)
    assert {p.name: p.value for p in suite.properties()}["host"] == "http://127.0.0.1:1/v1?key=<redacted>"
    assert [p.name for p in tmp_path.joinpath("reports").iterdir()] == ["junit.xml"]


def test_write_junit_reports_a_path_it_cannot_write(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    problem = write_junit(str(blocker / "junit.xml"), load("chat_with_verdict"))
    assert problem is not None and problem.startswith(f"cannot write the JUnit report to {blocker / 'junit.xml'}")


@pytest.mark.parametrize(
    "xml",
    [
        '<testsuites><testsuite name="s" failures="0" errors="0"/></testsuites>',  # no tests count
        '<testsuites><testsuite name="s" tests="1" failures="0" errors="0"><testcase/></testsuite></testsuites>',
        '<testsuites><testsuite name="s" tests="0" failures="0" errors="0" time="1.5s"/></testsuites>',
        '<testsuites><testcase name="c"/></testsuites>',
    ],
)
def test_the_vendored_schema_is_not_vacuous(xml: str) -> None:
    """What CI readers refuse, the schema refuses: a missing count, a nameless case, a time with a unit."""
    assert not JUNIT_XSD.is_valid(xml)
