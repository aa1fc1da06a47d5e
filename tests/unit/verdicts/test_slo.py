"""Scenario SLO defaults become thresholds on their scenario's rows; the user's own threshold on the same metric,
tags and aggregate replaces a default; a scenario that did not run is not judged; `--scenario-slo off` drops them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from loadlib.errors import ConfigError
from loadlib.locust.verdict_part import thresholds_from_options
from loadlib.settings import Options, resolve
from loadlib.verdicts.evaluate import evaluate
from loadlib.verdicts.slo import applicable, combine, scenario_defaults
from loadlib.verdicts.thresholds import parse

SLOS = {
    "support_chat": ("ttft p95 < 150ms", "error_rate < 1%"),
    "compliance": ("e2e{endpoint=mock} p95 < 20s", "schema_valid >= 99%"),
}


def options(threshold: str = "", switch: str = "on") -> Options:
    return resolve(SimpleNamespace(llm_threshold=threshold, llm_thresholds_file="", scenario_slo=switch))


def test_defaults_get_the_scenario_tag_where_the_metric_takes_tags() -> None:
    got = {t.expression: t.origin for t in scenario_defaults(SLOS)}
    assert got == {
        "ttft{scenario=support_chat} p95 < 150ms": "support_chat SLO",
        "error_rate{scenario=support_chat} < 1%": "support_chat SLO",
        "e2e{scenario=compliance,endpoint=mock} p95 < 20s": "compliance SLO",
        "schema_valid >= 99%": "compliance SLO",
    }
    ttft = scenario_defaults(SLOS)[0]
    assert ttft.tags == (("scenario", "support_chat"),) and ttft.limit == 150.0 and ttft.aggregate == "p95"


def test_a_tagged_default_parses_back_to_itself() -> None:
    for t in scenario_defaults(SLOS):
        again = parse(t.expression)
        assert (again.metric, again.tags, again.aggregate, again.op, again.limit) == (
            t.metric,
            t.tags,
            t.aggregate,
            t.op,
            t.limit,
        )


def test_the_users_threshold_replaces_the_default_with_the_same_key() -> None:
    user = [parse("ttft{scenario=support_chat} p95 < 300ms"), parse("ttft p95 < 100ms")]
    merged = combine(user, scenario_defaults(SLOS))
    exprs = [t.expression for t in merged]
    assert exprs[:2] == ["ttft{scenario=support_chat} p95 < 300ms", "ttft p95 < 100ms"]
    assert "ttft{scenario=support_chat} p95 < 150ms" not in exprs, "replaced"
    assert "error_rate{scenario=support_chat} < 1%" in exprs, "the other default stays"


def test_options_switch_the_defaults_off() -> None:
    assert len(thresholds_from_options(options(), SLOS)) == 4
    assert thresholds_from_options(options(switch="off"), SLOS) == []
    kept = thresholds_from_options(options("error_rate < 5%", switch="off"), SLOS)
    assert [t.expression for t in kept] == ["error_rate < 5%"]


def test_a_bad_default_is_a_config_error_naming_the_scenario() -> None:
    with pytest.raises(ConfigError, match="the support_chat scenario's SLO 'ttft p100 < 1s'"):
        scenario_defaults({"support_chat": ("ttft p100 < 1s",)})


def row(scenario: str, ttft_p95: float, count: int = 200) -> dict:
    return {
        "scenario": scenario,
        "endpoint": "mock",
        "count": count,
        "errors_total": 0,
        "latency_ms": {"ttft": {"p95": ttft_p95, "count": count}},
    }


def test_defaults_of_scenarios_that_did_not_run_are_not_judged() -> None:
    summary = {"rows": [row("support_chat", 180.0)]}
    kept = applicable([parse("requests > 1"), *scenario_defaults(SLOS)], summary)
    assert [t.origin for t in kept] == ["", "support_chat SLO", "support_chat SLO"]
    results = {r["expression"]: (r["passed"], r["origin"]) for r in evaluate(kept, summary)}
    assert results["ttft{scenario=support_chat} p95 < 150ms"] == (False, "support_chat SLO")
    assert results["error_rate{scenario=support_chat} < 1%"] == (True, "support_chat SLO")
