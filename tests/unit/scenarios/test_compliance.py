"""Compliance: structured output extraction, schema validation, determinism check, audit lines without text."""

from __future__ import annotations

import json

import orjson

from loadlib.data import FINDINGS_SCHEMA
from loadlib.errors import ErrorClass
from loadlib.metrics import compliance_results as results
from loadlib.metrics.scenarios import ScenarioResults
from loadlib.outputs.audit import audit_line
from loadlib.outputs.jsonl import JsonlWriter
from loadlib.providers.base import StreamResult, ToolCall
from loadlib.records.record import RequestRecord
from loadlib.scenarios.review import Review, canonical, check_output, compile_validator, structured_output
from tests.support.records import make_record

VALID = {
    "case_id": "TR-1",
    "verdict": "violation",
    "risk_score": 80,
    "findings": [{"rule": "R1", "severity": "high", "evidence": "9,900 EUR twice"}],
}


def rec(**kw: object) -> RequestRecord:
    return make_record(scenario="compliance", **kw)


def test_structured_output_reads_text_or_tool_arguments() -> None:
    assert structured_output(StreamResult(text_by_choice={0: '{"a": 1}'})) == '{"a": 1}'
    tool = StreamResult(tool_calls=[ToolCall(index=0, name="findings", arguments='{"b": 2}')])
    assert structured_output(tool) == '{"b": 2}'
    assert structured_output(None) == ""


def test_check_output_explains_without_echoing_content() -> None:
    v = compile_validator(FINDINGS_SCHEMA)
    assert check_output(json.dumps(VALID), v) == (VALID, None)
    _, reason = check_output('{"case_id": "TR-1", "verdict": "viol', v)
    assert reason.startswith("output is not JSON")
    bad = dict(VALID, findings=[{"rule": "R1", "severity": "catastrophic", "evidence": "SECRET EVIDENCE"}])
    _, reason = check_output(json.dumps(bad), v)
    assert reason == "output fails the schema at $.findings[0].severity (enum)"
    _, reason = check_output(json.dumps({k: v for k, v in VALID.items() if k != "verdict"}), v)
    assert "(required)" in reason and "SECRET" not in reason


def test_review_classifies_and_counts() -> None:
    env = ScenarioResults()
    v = compile_validator(FINDINGS_SCHEMA)
    ok = StreamResult(text_by_choice={0: json.dumps(VALID)})
    first = Review(env, v)
    assert first(ok, rec(finish_reason="stop")) is None and first.valid
    same = Review(env, v, canonical(first.value))
    assert same(StreamResult(text_by_choice={0: json.dumps(VALID, indent=2)}), rec()) is None, "formatting is ignored"
    other = Review(env, v, canonical(first.value))
    changed = StreamResult(text_by_choice={0: json.dumps(dict(VALID, risk_score=81))})
    assert other(changed, rec())[0] is ErrorClass.NONDETERMINISTIC
    assert Review(env, v)(StreamResult(text_by_choice={0: "{"}), rec())[0] is ErrorClass.SCHEMA_INVALID
    assert Review(env, v)(ok, rec(finish_reason="length"))[0] is ErrorClass.TRUNCATED
    s = results.summarize(env, {})
    assert (s["schema_valid"], s["schema_invalid"], s["deterministic"], s["nondeterministic"]) == (3, 2, 1, 1)


def test_audit_lines_hold_ids_tokens_cost_status_but_no_text(tmp_path) -> None:
    r = rec(
        server_request_id="req_abc",
        prompt_tokens=300,
        completion_tokens=90,
        prompt_tokens_est=300,
        cost_usd=0.0012,
        status=ErrorClass.SCHEMA_INVALID,
        error_message="output fails the schema at $.verdict (enum)",
        start_unix_ns=1_700_000_000_123_000_000,
    )
    line = audit_line(r, case_id="TR-1")
    assert line["time"] == "2023-11-14T22:13:20.123Z"
    assert line["request_id"] == "w-1" and line["server_request_id"] == "req_abc"
    assert (line["prompt_tokens"], line["completion_tokens"], line["prompt_tokens_est"]) == (300, 90, 300)
    assert line["status"] == "schema_invalid" and line["cost_usd"] == 0.0012 and line["case_id"] == "TR-1"
    assert "error_message" not in line and "messages" not in line
    log = JsonlWriter(tmp_path / "sub" / "audit.jsonl", line=audit_line)
    for _ in range(3):
        log.add(r, case_id="TR-1")
    assert not (tmp_path / "sub" / "audit.jsonl").exists(), "buffered until flushed"
    log.close()
    lines = (tmp_path / "sub" / "audit.jsonl").read_bytes().splitlines()
    assert len(lines) == log.lines == 3 and orjson.loads(lines[0]) == line
