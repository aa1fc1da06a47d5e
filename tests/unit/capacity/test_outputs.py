"""The capacity answer in the files a run writes: a summary with `capacity` is valid against the published schema,
Markdown carries the answer and the step table, JUnit a testcase that fails below the gate (valid junit-10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import xmlschema
from jsonschema import Draft202012Validator

from loadlib.capacity import answer, drain
from loadlib.capacity.drain import Drain
from loadlib.capacity.search import Search
from loadlib.capacity.step import Limits, StepWindow, judge
from loadlib.outputs.junit import junit_xml
from loadlib.outputs.markdown import markdown_summary
from loadlib.verdicts.thresholds import parse_option
from loadlib.verdicts.verdict import verdict
from tests.support.records import make_record

ROOT = Path(__file__).resolve().parents[3]
VALIDATOR = Draft202012Validator(json.loads((ROOT / "schemas" / "summary-v1.schema.json").read_text()))
JUNIT_XSD = xmlschema.XMLSchema(str(ROOT / "tests" / "fixtures" / "junit.xsd"))
SLO = parse_option("ttft p95 < 500ms; error_rate < 1%")


def step(index: int, users: int, ttft: float) -> dict[str, Any]:
    w = StepWindow()
    for i in range(200):
        w.stats.add(make_record(request_id=f"r{i}", ttft_ms=ttft, e2e_ms=ttft + 50, completion_tokens=8))
    return answer.step_row(index, users, w, 5.0, judge(w, 5.0, Limits(SLO)), None)


def summary(minimum: int | None) -> dict[str, Any]:
    base = json.loads((ROOT / "tests" / "fixtures" / "summaries" / "chat_with_verdict.json").read_text())
    search = Search(start=8)
    search.record(8, True)
    search.record(16, False)
    base["capacity"] = answer.section(search, [step(1, 8, 100.0), step(2, 16, 900.0)], None, minimum)
    base.pop("thresholds", None)
    base["verdict"] = verdict([], base)
    return base


def test_a_capacity_summary_is_valid_against_the_schema() -> None:
    for minimum in (None, 12):
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in VALIDATOR.iter_errors(summary(minimum))]
        assert errors == []


def test_markdown_has_the_answer_and_a_row_per_step() -> None:
    text = markdown_summary(summary(None))
    assert "**Capacity: 8 users** (first failing: 16 users, ttft p95 < 500ms" in text
    assert "| 2 | 16 users | **FAIL** |" in text and "| 1 | 8 users | held |" in text


def test_junit_fails_the_capacity_case_below_the_gate_and_stays_valid() -> None:
    xml = junit_xml(summary(12))
    JUNIT_XSD.validate(xml)
    assert 'name="capacity &gt;= 12 users"' in xml and 'classname="loadlib.capacity"' in xml
    assert '<failure message="max_users 8; first failing 16 users"' in xml
    assert "step 2: 16 users failed: ttft p95 &lt; 500ms" in xml


def rate_summary(minimum: float | None, confirmed: bool | None) -> dict[str, Any]:
    """A rate search: 8 req/s held, 16 failed (its arrivals went late once and it was measured again, after a
    drain), 8 held again in the hold at the answer (after a drain that ran out of time)."""
    base = json.loads((ROOT / "tests" / "fixtures" / "summaries" / "chat_with_verdict.json").read_text())
    search = Search(start=8, control="rate")
    search.record(8.0, True)
    search.record(16.0, False)
    slow = step(2, 32, 900.0) | {"rate_per_s": 16.0, "schedule_lag_ms": {"p50": 2.0, "p95": 350.0}}
    slow["remeasured"] = answer.slipped(slow, 50.0)
    drained = Drain(target=1.6, first=12, last=1, waiting=0.0)
    drained.end(2.0, True)
    late = Drain(target=0.8, first=30, last=5)
    late.end(30.0, False)
    steps = [step(1, 16, 100.0) | {"rate_per_s": 8.0}, slow]
    steps.append(step(3, 32, 910.0) | {"rate_per_s": 16.0} | drain.fields(drained))
    steps.append(step(4, 32, 100.0) | {"rate_per_s": 8.0, "confirm": True} | drain.fields(late))
    base["capacity"] = answer.section(search, steps, None, minimum, confirmed)
    base.pop("thresholds", None)
    base["verdict"] = verdict([], base)
    return base


def test_a_rate_search_summary_is_valid_and_names_its_rate_everywhere() -> None:
    s = rate_summary(12.5, True)
    assert [f"{e.message}" for e in VALIDATOR.iter_errors(s)] == []
    c = s["capacity"]
    assert (c["mode"], c["max_rate_per_s"], c["max_users"], c["first_failed_rate_per_s"]) == ("rate", 8.0, None, 16.0)
    assert c["steps"][1]["remeasured"] == "arrivals late (schedule lag p95 350 ms > 50 ms): measured again"
    assert s["verdict"]["reasons"] == ["capacity max_rate_per_s 8 < --llm-capacity-min 12.5"]
    line = answer.answer_line(c)
    assert line.startswith("max_rate_per_s 8 (within 5 %); first failing 16 req/s: ttft p95 < 500ms")
    assert line.endswith("; the hold at it confirmed it")
    assert "8 req/s  held (confirm)" in answer.step_line(c["steps"][3])
    assert "measured again" in answer.step_line(c["steps"][1])
    assert "after a drain" not in answer.step_line(c["steps"][1])
    assert answer.step_line(c["steps"][2]).endswith("  after a drain of 2.0 s")
    assert answer.step_line(c["steps"][3]).endswith("  after a drain of 30.0 s, not drained")
    text = markdown_summary(s)
    assert "**Capacity: 8 req/s** (first failing: 16 req/s" in text and "the hold at the answer confirmed it" in text
    assert "| 4 (hold) | 8 req/s | held |" in text and "| errors | drain before it |" in text
    assert "| 0 | 2.0 s |" in text and "| 0 | 30.0 s, not drained |" in text and "| 0 | - |" in text
    xml = junit_xml(s)
    JUNIT_XSD.validate(xml)
    assert 'name="capacity &gt;= 12.5 req/s"' in xml and "max_rate_per_s 8; first failing 16 req/s" in xml


def test_a_hold_that_fails_says_the_answer_is_not_confirmed() -> None:
    c = rate_summary(None, False)["capacity"]
    assert answer.answer_line(c).endswith("; the hold at it did NOT confirm it")


def test_only_a_failed_rate_step_whose_arrivals_went_late_is_measured_again() -> None:
    row = {"passed": False, "rate_per_s": 16.0, "schedule_lag_ms": {"p50": 1.0, "p95": 40.0}}
    assert answer.slipped(row, 50.0) is None
    assert answer.slipped(row | {"schedule_lag_ms": {"p50": 1.0, "p95": 60.0}}, 50.0) is not None
    assert answer.slipped(row | {"passed": True, "schedule_lag_ms": {"p50": 1.0, "p95": 60.0}}, 50.0) is None
    assert answer.slipped(row | {"rate_per_s": None, "schedule_lag_ms": {"p50": 1, "p95": 60.0}}, 50.0) is None
