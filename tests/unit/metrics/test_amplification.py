"""Amplification pairs: counted as integer sums per schema depth, merged like any scenario result, reported as ratios
of sums."""

from __future__ import annotations

from loadlib.errors import ErrorClass
from loadlib.metrics import amplification
from loadlib.metrics.scenarios import ScenarioResults
from loadlib.records.record import RequestRecord


def rec(tokens: int, cost: float | None, ttft: float, e2e: float, status: ErrorClass = ErrorClass.OK) -> RequestRecord:
    return RequestRecord(
        run_id="r",
        scenario="compliance",
        endpoint="e",
        provider="openai",
        model="m",
        worker_id="w",
        request_id="x",
        completion_tokens=tokens,
        cost_usd=cost,
        ttft_ms=ttft,
        e2e_ms=e2e,
        status=status,
    )


def test_ratios_of_sums_and_differences_of_means() -> None:
    r = ScenarioResults()
    amplification.pair(r, 3, rec(211, 0.00211, 60.0, 300.0), rec(100, 0.001, 50.0, 150.0))
    amplification.pair(r, 3, rec(211, 0.00211, 70.0, 320.0), rec(100, 0.001, 50.0, 150.0))
    amplification.pair(r, 3, rec(5, 0.1, 1.0, 1.0, ErrorClass.SCHEMA_INVALID), rec(100, 0.001, 50.0, 150.0))
    got = amplification.summarize(r)
    assert got == {
        "pairs": 2,
        "json_output_tokens": 422,
        "plain_output_tokens": 200,
        "output_tokens_ratio": 2.11,
        "output_tokens_ratio_ci": [2.11, 2.11],  # every pair in the same proportion: no doubt about the ratio
        "json_cost_usd": 0.00422,
        "plain_cost_usd": 0.002,
        "cost_ratio": 2.11,
        "cost_ratio_ci": [2.11, 2.11],
        "ttft_diff_ms": 15.0,
        "ttft_diff_ms_ci": [-48.531, 78.531],  # differences 10 and 20: 15 ± t(0.975, 1) 12.706 x se 5
        "e2e_diff_ms": 160.0,
        "e2e_diff_ms_ci": [32.938, 287.062],  # 150 and 170: 160 ± 12.706 x 10
    }
    line = amplification.render(got)[0]
    assert "x2.110 [2.110–2.110]" in line and "TTFT 15.0 [-48.5–78.5] ms" in line
    assert amplification.table_rows(got)[0][3] == "2.110 [2.110–2.110]"


def test_one_pair_has_no_interval() -> None:
    r = ScenarioResults()
    amplification.pair(r, 3, rec(211, 0.00211, 60.0, 300.0), rec(100, 0.001, 50.0, 150.0))
    got = amplification.summarize(r)
    assert got is not None and got["output_tokens_ratio"] == 2.11 and got["output_tokens_ratio_ci"] is None
    assert got["e2e_diff_ms_ci"] is None and "x2.110 [?]" in amplification.render(got)[0]


def test_depths_are_reported_apart_when_there_are_several_and_merge_across_workers() -> None:
    a, b, master = ScenarioResults(), ScenarioResults(), ScenarioResults()
    amplification.pair(a, 1, rec(150, None, 10.0, 20.0), rec(100, None, 10.0, 20.0))
    amplification.pair(b, 3, rec(300, None, 10.0, 20.0), rec(100, None, 10.0, 20.0))
    for node in (a, b):
        master.merge_serialized(node.serialize())
    got = amplification.summarize(master)
    assert got is not None and got["output_tokens_ratio"] == 2.25 and got["cost_ratio"] is None
    assert [(d["depth"], d["output_tokens_ratio"]) for d in got["by_depth"]] == [(1, 1.5), (3, 3.0)]
    assert len(amplification.render(got)) == 3 and amplification.summarize(ScenarioResults()) is None


def test_the_section_follows_the_published_schema() -> None:
    import json
    from pathlib import Path

    from jsonschema import Draft202012Validator

    schema = json.loads((Path(__file__).resolve().parents[3] / "schemas" / "summary-v1.schema.json").read_text())
    comp = schema["$defs"]["scenarios"]["properties"]["compliance"]["properties"]["amplification"]
    r = ScenarioResults()
    amplification.pair(r, 1, rec(150, 0.1, 10.0, 20.0), rec(100, 0.05, 10.0, 20.0))
    amplification.pair(r, 3, rec(300, 0.2, 10.0, 20.0), rec(100, 0.05, 10.0, 20.0))
    got = amplification.summarize(r)
    Draft202012Validator(comp).validate(got)
    assert not Draft202012Validator(comp).is_valid({**(got or {}), "pairs": "2"})
