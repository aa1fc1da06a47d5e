"""The published summary schema (schemas/summary-v1.schema.json) against summaries real runs wrote: a consumer that
validates with it must never reject a good run, nor accept a file with a key missing or of the wrong type.

The fixtures in tests/fixtures/summaries were written by the locustfiles against the embedded mock (chat with
thresholds and a verdict added by hand, in the shape the threshold evaluator gives them; chat_aborted_goodput by a
run with a per-request SLO that --llm-abort-on-fail stopped, on a client saturated by a CPU hog beside it).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from loadlib.errors import ErrorClass
from loadlib.histogram import Histogram
from loadlib.metrics.saturation import saturation_verdict
from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary
from tests.support.records import make_record

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = json.loads((ROOT / "schemas" / "summary-v1.schema.json").read_text())
FIXTURES = sorted((ROOT / "tests" / "fixtures" / "summaries").glob("*.json"))
VALIDATOR = Draft202012Validator(SCHEMA)
META = {
    "run_id": "r-1",
    "host": "http://x/v1",
    "provider": "openai",
    "model": "m",
    "started_at": 1.0,
    "stopped_at": 11.0,
    "duration_s": 10.0,
}


def load(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "tests" / "fixtures" / "summaries" / f"{name}.json").read_text())


def errors(summary: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(summary)]


def test_the_schema_is_draft_2020_12_with_a_versioned_id() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["$id"].endswith(":1")
    assert SCHEMA["properties"]["meta"]["properties"]["schema"]["const"] == "loadlib-summary/1"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_every_summary_a_run_wrote_is_valid(path: Path) -> None:
    assert errors(json.loads(path.read_text())) == []


def test_the_fixtures_cover_every_optional_block() -> None:
    """So the schema's optional parts are checked against real data, not only written down."""
    summaries = [json.loads(p.read_text()) for p in FIXTURES]
    present = {k for s in summaries for k, v in s.items() if v}
    assert present >= {"sink", "scenarios", "failover", "thresholds", "verdict", "aborted", "request_slo"}
    scenario_blocks = {k for s in summaries for k in s.get("scenarios") or {}}
    assert scenario_blocks >= {"support_chat", "long_document", "compliance", "open_loop"}
    assert any(r["open_loop"] for s in summaries for r in s["rows"])
    assert any(s["failover"]["drills"] and s["failover"]["user_requests"] for s in summaries)
    assert {t["passed"] for t in load("chat_with_verdict")["thresholds"]} == {True, False, None}


def test_every_key_a_row_or_the_summary_has_is_described() -> None:
    """Keys may be added within version 1, but each must be written into the schema, so it stays precise."""
    row_keys = set(SCHEMA["$defs"]["row"]["properties"])
    for path in FIXTURES:
        summary = json.loads(path.read_text())
        assert set(summary) <= set(SCHEMA["properties"]), path.name
        for row in [*summary["rows"], summary["total"]]:
            assert set(row) <= row_keys, path.name


def _stats() -> LLMStats:
    s = LLMStats()
    base = {"ttft_ms": 100.0, "ttfo_ms": 100.0, "first_event_ms": 90.0, "ttfb_ms": 80.0, "e2e_ms": 1000.0}
    s.add(make_record(**base, completion_tokens=10, prompt_tokens=5, cost_usd=0.001, itl_ms=(9.0,) * 9))
    s.add(make_record(status=ErrorClass.RATE_LIMITED, http_status=429, e2e_ms=2.0))
    s.add(make_record(**base, scenario="open", intended_send_ms=5.0, schedule_lag_ms=1.5, cost_usd=None))
    return s


def test_summaries_built_in_process_are_valid_too() -> None:
    """Including the corners no fixture has: no attempt at all, zero duration, a saturated client."""
    lag = Histogram()
    lag.record_many([200.0] * 10)
    saturated = saturation_verdict(lag, [99.0] * 10)
    for summary in (
        build_summary(LLMStats(), 0.0, None, META),
        build_summary(_stats(), 10.0, saturated, META),
    ):
        assert errors(json.loads(json.dumps(summary, default=str))) == []


Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    """Set a value at a slash path (list indices as numbers)."""

    def apply(summary: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split("/")]
        node: Any = summary
        for p in parents:
            node = node[p]
        node[last] = value

    return apply


def _drop(path: str) -> Mutation:
    def apply(summary: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split("/")]
        node: Any = summary
        for p in parents:
            node = node[p]
        del node[last]

    return apply


BROKEN: dict[str, Mutation] = {
    "rows missing": _drop("rows"),
    "total missing": _drop("total"),
    "client_saturated missing": _drop("client_saturated"),
    "run_id missing": _drop("meta/run_id"),
    "a row without count": _drop("rows/0/count"),
    "a latency block without p99": _drop("rows/0/latency_ms/e2e/p99"),
    "duration as text": _set("duration_s", "5.0"),
    "count as text": _set("rows/0/count", "21"),
    "a fractional count": _set("rows/0/count", 2.5),
    "a negative error count": _set("rows/0/errors", {"http_5xx": -1}),
    "an error rate above 1": _set("total/error_rate", 1.5),
    "a percentile with its unit": _set("rows/0/latency_ms/ttft/p95", "52 ms"),
    "client_saturated as text": _set("client_saturated", "no"),
    "client as a list": _set("client", []),
    "another schema version": _set("meta/schema", "loadlib-summary/2"),
    "a threshold without passed": _drop("thresholds/0/passed"),
    "a threshold with an unknown operator": _set("thresholds/0/op", "=<"),
    "a threshold with an unknown unit": _set("thresholds/0/unit", "sec"),
    "a threshold limit as text": _set("thresholds/0/limit", "150ms"),
    "thresholds as an object": _set("thresholds", {}),
    "a verdict with an unknown status": _set("verdict/status", "ok"),
    "a verdict without exit code": _drop("verdict/exit_code"),
    "a verdict reason that is not text": _set("verdict/reasons", [1]),
}


@pytest.mark.parametrize("name", BROKEN)
def test_a_broken_summary_is_rejected(name: str) -> None:
    summary = copy.deepcopy(load("chat_with_verdict"))
    BROKEN[name](summary)
    assert errors(summary), name


def test_broken_failover_figures_are_rejected() -> None:
    summary = load("failover_drill")
    _set("failover/drills/0/checks/0/passed", "yes")(summary)
    assert errors(summary)
    summary = load("failover_drill")
    _set("failover/breakers/local/primary/state", "ajar")(summary)
    assert errors(summary)
