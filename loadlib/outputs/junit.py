"""JUnit XML of a run's verdicts (`--llm-junit FILE`, docs/outputs.md).

Why JUnit: every CI system (GitLab, Jenkins, Azure, GitHub test reporters) reads it natively, so a threshold that
failed shows as a failed test beside the unit tests, without anyone parsing the JSON summary.

One `<testsuite name="loadlib thresholds">` inside `<testsuites>`: a testcase per threshold (`<failure>` when it
failed, `<skipped>` when it could not be judged, e.g. too few samples), one for the client-saturation verdict (a
saturated client makes the latencies the load generator's), one per failover drill check, and a `run verdict`
testcase: an `<error>` when the verdict is invalid, interrupted or a configuration error, a `<failure>` when a lost
threshold aborted the run (nothing else would show either). The format
is the Jenkins xUnit plugin's junit-10 schema, the common denominator of the readers (tests/fixtures/junit.xsd).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from loadlib.outputs.markdown import Thresholds, masked, threshold_limit, threshold_value, thresholds_of
from loadlib.outputs.summary import write_text
from loadlib.verdicts.verdict import capacity_answer, capacity_first_failed, capacity_load

SUITE_NAME = "loadlib thresholds"
CLIENT_CASE = "client not saturated"
# a run whose figures cannot be judged, or that could not be made: an <error>
BAD_VERDICTS = ("invalid", "incomplete", "interrupted", "config_error", "fatal", "not_started")
# characters XML 1.0 cannot carry at all (a server's error text may hold them): replaced, or no reader parses the file
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True)
class Case:
    """One testcase: outcome is passed, failure, skipped or error; `message` one line, `detail` the element's text
    (or the passing case's system-out)."""

    name: str
    classname: str
    outcome: str = "passed"
    message: str = ""
    detail: str = ""
    kind: str = ""


def junit_xml(summary: Mapping[str, Any], thresholds: Thresholds | None = None) -> str:
    """The JUnit document as text. `thresholds` defaults to the summary's own `thresholds`."""
    cases = [
        *(threshold_case(t) for t in thresholds_of(summary, thresholds)),
        client_case(summary),
        *drill_cases(summary),
        *capacity_cases(summary),
        *verdict_cases(summary),
    ]
    time = _time(summary.get("duration_s"))
    root = ET.Element("testsuites", {"name": "loadlib", **_counts(cases)})
    suite = ET.SubElement(root, "testsuite", {"name": SUITE_NAME, **_counts(cases, skipped=True)})
    started = _timestamp((summary.get("meta") or {}).get("started_at"))
    for el, key, value in ((root, "time", time), (suite, "time", time), (suite, "timestamp", started)):
        if value:
            el.set(key, value)
    _properties(suite, summary)
    for case in cases:
        _testcase(suite, case)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(
    path: str,
    summary: Mapping[str, Any],
    thresholds: Thresholds | None = None,
    redact: Callable[[str], str] | None = None,
) -> str | None:
    """Write the JUnit file (secrets masked with the run's redactor); the problem as one line, or None."""
    return write_text(path, junit_xml(masked(summary, redact), masked(thresholds, redact)), "JUnit report")


# -- the cases ---------------------------------------------------------------------------------------------------------


def threshold_case(t: Mapping[str, Any]) -> Case:
    """passed True: a pass with its figures as system-out; False: a failure naming value and limit; None: skipped."""
    name = str(t.get("expression") or t.get("metric") or "threshold")
    classname = f"loadlib.{t.get('metric') or 'threshold'}"
    unit = str(t.get("unit") or "")
    value = threshold_value(t.get("value"), unit)
    limit = threshold_limit(str(t.get("op") or ""), t.get("limit"), unit)
    figures = f"value {value}, limit {limit}, {t.get('samples', 0)} samples"
    reason = str(t.get("reason") or "")
    passed = t.get("passed")
    if passed is True:
        return Case(name, classname, detail=f"{figures}: {reason}" if reason else figures)
    if passed is None:
        return Case(name, classname, "skipped", f"not judged: {reason or 'no value'}", figures)
    return Case(name, classname, "failure", f"{name}: {figures}", reason, "threshold")


def client_case(summary: Mapping[str, Any]) -> Case:
    """Failure when the client was saturated (with its reasons), skipped when it was not checked."""
    client = summary.get("client") or {}
    saturated = summary.get("client_saturated")
    if saturated is None:
        return Case(CLIENT_CASE, "loadlib.client", "skipped", "not checked (no loop-lag samples)")
    if saturated and summary.get("capacity"):  # a search overloads on purpose: it judges its client per step
        return Case(CLIENT_CASE, "loadlib.client", "skipped", "judged per step by the capacity search")
    if saturated:
        reasons = list(client.get("reasons") or ["client saturated"])
        detail = "\n".join([*reasons, *(client.get("warnings") or [])])
        return Case(CLIENT_CASE, "loadlib.client", "failure", "; ".join(reasons), detail, "client_saturated")
    lag, cpu = client.get("loop_lag_p99_ms"), client.get("cpu_p90_percent")
    lines = [f"loop lag p99 {_plain(lag)} ms, CPU p90 {_plain(cpu)} %", *(client.get("warnings") or [])]
    return Case(CLIENT_CASE, "loadlib.client", detail="\n".join(lines))


def drill_cases(summary: Mapping[str, Any]) -> list[Case]:
    """One case per check of each failover drill; a drill without targets is one skipped case, so it still shows."""
    out = []
    for d in (summary.get("failover") or {}).get("drills") or []:
        label = f"drill {d.get('index')} {d.get('endpoint')} {d.get('fault')}"
        checks = d.get("checks") or []
        if not checks:
            out.append(Case(label, "loadlib.failover", "skipped", "no targets set for this drill"))
        for c in checks:
            name = f"{label}: {c.get('name')}"
            reason = str(c.get("reason") or "")
            if c.get("passed"):
                out.append(Case(name, "loadlib.failover", detail=reason))
            else:
                out.append(Case(name, "loadlib.failover", "failure", reason, reason, "drill"))
    return out


def capacity_cases(summary: Mapping[str, Any]) -> list[Case]:
    """A capacity search: one testcase with its answer, a failure when it is below --llm-capacity-min."""
    c = summary.get("capacity")
    if not c:
        return []
    bound = f" (a lower bound: {c.get('stopped')})" if c.get("lower_bound") else ""
    message = f"{capacity_answer(c)}{bound}; first failing {capacity_first_failed(c)}"
    detail = "\n".join(
        f"step {s['step']}: {capacity_load(s)} {'held' if s['passed'] else 'failed'}: {'; '.join(s['failed'])}"
        for s in c.get("steps") or []
    )
    unit = "req/s" if c.get("mode") == "rate" else "users"
    name = f"capacity >= {c['minimum']:g} {unit}" if c.get("minimum") is not None else "capacity search"
    outcome = "failure" if c.get("gate_passed") is False else "passed"
    return [Case(name, "loadlib.capacity", outcome, message, detail)]


def verdict_cases(summary: Mapping[str, Any]) -> list[Case]:
    """An error case when the run's figures cannot be judged, a failure when a lost threshold aborted the run (the
    threshold's own case may have recovered with the last reports); pass and fail are told by the cases above."""
    verdict = summary.get("verdict") or {}
    status = verdict.get("status")
    aborted = summary.get("aborted")
    if status == "fail" and aborted:
        message = f"aborted after {aborted.get('after_s', 0):.1f} s (--llm-abort-on-fail)"
        detail = "\n".join(str(r) for r in aborted.get("reasons") or [])
        return [Case("run verdict", "loadlib.run", "failure", message, detail, "aborted")]
    if status == "errors":  # no thresholds (or none judged): Locust's rule failed the run on its failed requests
        reason = "; ".join(str(r) for r in verdict.get("reasons") or [])
        return [Case("run verdict", "loadlib.run", "failure", reason, reason, "errors")]
    if status not in BAD_VERDICTS:
        return []
    reasons = [str(r) for r in verdict.get("reasons") or []] or [str(status)]
    message = f"{status}: {'; '.join(reasons)}"
    return [Case("run verdict", "loadlib.run", "error", message, "\n".join(reasons), str(status))]


# -- XML ---------------------------------------------------------------------------------------------------------------


def _testcase(suite: ET.Element, case: Case) -> None:
    el = ET.SubElement(suite, "testcase", {"name": _x(case.name), "classname": _x(case.classname), "time": "0"})
    if case.outcome == "passed":
        if case.detail:
            ET.SubElement(el, "system-out").text = _x(case.detail)
        return
    child = ET.SubElement(el, case.outcome, {"message": _x(case.message)})
    if case.kind:
        child.set("type", _x(case.kind))
    if case.detail:
        child.text = _x(case.detail)


def _properties(suite: ET.Element, summary: Mapping[str, Any]) -> None:
    """Run identity for whoever reads the report without the JSON: only the values the summary has."""
    meta = summary.get("meta") or {}
    verdict = summary.get("verdict") or {}
    values = {
        "run_id": meta.get("run_id"),
        "host": meta.get("host"),
        "duration_s": _time(summary.get("duration_s")) or None,
        "provider": meta.get("provider"),
        "model": meta.get("model"),
        "schema": meta.get("schema"),
        "verdict": verdict.get("status"),
        "exit_code": verdict.get("exit_code"),
    }
    props = ET.SubElement(suite, "properties")
    for name, value in values.items():
        if value is not None:
            ET.SubElement(props, "property", {"name": name, "value": _x(str(value))})


def _counts(cases: list[Case], skipped: bool = False) -> dict[str, str]:
    """tests/failures/errors (and skipped: junit-10 has it on a testsuite only)."""
    out = {
        "tests": str(len(cases)),
        "failures": str(sum(c.outcome == "failure" for c in cases)),
        "errors": str(sum(c.outcome == "error" for c in cases)),
    }
    if skipped:
        out["skipped"] = str(sum(c.outcome == "skipped" for c in cases))
    return out


def _time(seconds: Any) -> str:
    """Seconds with 3 decimals, no thousands separator (the schema's SUREFIRE_TIME); "" when unknown."""
    return f"{float(seconds):.3f}" if isinstance(seconds, int | float) and seconds >= 0 else ""


def _timestamp(unix: Any) -> str:
    if not isinstance(unix, int | float):
        return ""
    return datetime.fromtimestamp(unix, UTC).isoformat(timespec="seconds")


def _plain(v: Any) -> str:
    return "-" if v is None else f"{v:.1f}"


def _x(text: str) -> str:
    """Text XML 1.0 can carry (ElementTree escapes markup but writes control characters as they are)."""
    return _NOT_XML.sub("\ufffd", text)
