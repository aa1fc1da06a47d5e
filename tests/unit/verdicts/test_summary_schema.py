"""The published summary schema says what a valid summary is, not only its shape: the verdict's exit code is the one
its status gives (loadlib.verdicts.verdict.EXIT_CODES), counts and sums are never negative, and rates and shares
are fractions 0..1. Mutated copies of summaries real runs wrote (tests/fixtures/summaries) must be rejected; the
unmutated ones stay valid (tests/unit/outputs/test_schema.py checks them all)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from loadlib.verdicts.verdict import EXIT_CODES

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = json.loads((ROOT / "schemas" / "summary-v1.schema.json").read_text())
VALIDATOR = Draft202012Validator(SCHEMA)


def load(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "tests" / "fixtures" / "summaries" / f"{name}.json").read_text())


def errors(summary: Any) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in VALIDATOR.iter_errors(summary)]


def with_verdict(status: str, exit_code: int) -> dict[str, Any]:
    summary = load("chat_with_verdict")
    summary["verdict"] = {"status": status, "exit_code": exit_code, "reasons": []}
    return summary


@pytest.mark.parametrize(("status", "code"), sorted(EXIT_CODES.items()))
def test_every_status_is_valid_with_its_own_exit_code_only(status: str, code: int) -> None:
    assert errors(with_verdict(status, code)) == []
    for other in {0, 1, 2, 3, 99, 130} - {code}:
        assert errors(with_verdict(status, other)), (status, other)


@pytest.mark.parametrize("code", [1, 2, 42])
def test_a_run_judged_by_locusts_rule_fails_with_locusts_non_zero_code(code: int) -> None:
    assert errors(with_verdict("errors", code)) == []
    assert errors(with_verdict("errors", 0))


@pytest.mark.parametrize("code", [-1, 256])
def test_an_exit_code_outside_0_255_is_rejected(code: int) -> None:
    assert errors(with_verdict("fail", code))


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(summary: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split("/")]
        node: Any = summary
        for p in parents:
            node = node[p]
        node[last] = value

    return apply


# fixture, mutation: each must be rejected
BROKEN: dict[str, tuple[str, Callable[[dict[str, Any]], None]]] = {
    "fail with exit code 0": ("compliance", _set("verdict/exit_code", 0)),
    "pass with exit code 99": ("compliance", _set("verdict/status", "pass")),
    "invalid with exit code 0": ("chat_with_verdict", _set("verdict/exit_code", 0)),
    "a negative attempt count": ("chat_with_verdict", _set("rows/0/count", -1)),
    "a negative error count in the total": ("chat_with_verdict", _set("total/errors_total", -3)),
    "negative tokens": ("chat_with_verdict", _set("total/completion_tokens", -5)),
    "a negative latency count": ("chat_with_verdict", _set("rows/0/latency_ms/ttft/count", -1)),
    "a negative latency": ("chat_with_verdict", _set("rows/0/latency_ms/ttft/p95", -3.0)),
    "a negative throughput": ("chat_with_verdict", _set("total/requests_per_s", -1.0)),
    "a negative cost": ("chat_with_verdict", _set("total/cost_usd", -0.01)),
    "a negative cost per 1k requests": ("chat_with_verdict", _set("total/cost_per_1k_requests", -1.0)),
    "negative threshold samples": ("chat_with_verdict", _set("thresholds/0/samples", -1)),
    "a negative threshold value": ("chat_with_verdict", _set("thresholds/0/value", -1.0)),
    "a negative threshold limit": ("chat_with_verdict", _set("thresholds/0/limit", -150.0)),
    "a schema-valid share above 1": ("compliance", _set("scenarios/compliance/schema_valid_share", 1.2)),
    "a negative deterministic share": ("compliance", _set("scenarios/compliance/deterministic_share", -0.1)),
    "a user error rate above 1": ("failover_drill", _set("failover/user_requests/error_rate", 1.5)),
    "a drill's user error rate above 1": ("failover_drill", _set("failover/drills/0/user_error_rate", 2.0)),
    "a traffic share above 1": ("failover_drill", _set("failover/drills/0/traffic_share/during/x", 1.01)),
}


@pytest.mark.parametrize("name", BROKEN)
def test_a_summary_that_cannot_be_true_is_rejected(name: str) -> None:
    fixture, mutate = BROKEN[name]
    summary = copy.deepcopy(load(fixture))
    assert errors(summary) == [], f"{fixture} must be valid before the mutation"
    mutate(summary)
    assert errors(summary), name
