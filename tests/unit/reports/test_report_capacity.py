"""The run report of a capacity search: a section with the answer, the throughput-latency curve (every step a point
labelled with its users, the knee marked) and the step table; a run without a search has no such section."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from loadlib.reports.capacity_curve import KNEE, capacity_html
from tests.unit.reports.test_report import known_run, report_of, summary_of


def step(index: int, users: int, rate: float, p95: float, passed: bool) -> dict[str, Any]:
    pair = {"p50": p95 / 2, "p95": p95}
    return {"step": index, "users": users, "requests_per_s": rate, "output_tokens_per_s": rate * 4, "ttft_ms": pair}


def capacity() -> dict[str, Any]:
    loads = [
        (1, 8, 40.0, 60.0, True),
        (2, 16, 70.0, 400.0, False),
        (3, 12, 62.0, 210.0, True),
        (4, 14, 66.0, 320.0, False),
    ]
    steps = [{**step(*s[:4], s[4]), "passed": s[4], "e2e_ms": {"p95": 1.0}, "errors": 0} for s in loads]
    return {
        "max_users": 12,
        "lower_bound": False,
        "first_failed_users": 14,
        "first_failed_by": ["ttft p95 < 300ms: x"],
        "steps": steps,
    }


def test_the_section_has_the_answer_a_point_per_step_with_the_knee_and_the_table() -> None:
    answer, curve, table = capacity_html(capacity())
    assert "max_users 12; first failing 14 users: ttft p95 &lt; 300ms" in answer
    for users in ("8", "12", "14", "16"):
        assert f">{users}<" in curve
    assert KNEE.lower() in curve.lower() and "<figcaption>" in curve
    assert table.count("<tr>") == 5 and ">FAIL<" in table and ">held<" in table
    assert "drain before it" not in table, "no step drained"


def test_the_table_shows_the_drain_before_a_step_that_followed_a_failed_one() -> None:
    c = capacity()
    c["steps"][2] |= {"drain_s": 2.0, "drained": True}
    c["steps"][3] |= {"drain_s": 30.0, "drained": False}
    table = capacity_html(c)[2]
    assert "<th>drain before it</th>" in table and ">2.0 s<" in table and ">30.0 s, not drained<" in table


def test_the_report_shows_the_search_only_when_the_summary_has_one(tmp_path: Path) -> None:
    records = known_run()
    plain = summary_of(records)
    assert "Capacity search" not in report_of(tmp_path, records, plain)
    assert "Capacity search" in report_of(tmp_path, records, {**plain, "capacity": capacity()})
