"""The capacity answer in the files a run writes: a summary with `capacity` is valid against the published schema,
Markdown carries the answer and the step table, JUnit a testcase that fails below the gate (valid junit-10)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import xmlschema
from jsonschema import Draft202012Validator

from loadlib.capacity import answer
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
