"""The run report's scenario tables, from the summary (pure): what the scenarios found beyond latency that reads
best as a table (structured-output amplification). Nothing when the run had none."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadlib.metrics import amplification
from loadlib.reports.html import section, table
from loadlib.reports.run_summary import para


def scenario_sections(summary: Mapping[str, Any] | None) -> list[str]:
    """The report's sections of scenario tables present in the summary."""
    scenarios = (summary or {}).get("scenarios") or {}
    amp = (scenarios.get("compliance") or {}).get("amplification")
    return [_amplification(amp)] if amp else []


def _amplification(amp: Mapping[str, Any]) -> str:
    note = para(
        "The same compliance cases asked for JSON and for plain prose (--compliance-plain-share): ratios of sums over "
        "the pairs whose two answers succeeded; TTFT and E2E as the JSON answers' mean minus the prose answers'. "
        "No confidence intervals yet."
    )
    rows = table(amplification.TABLE_HEADER, amplification.table_rows(dict(amp)), [False, *[True] * 6])
    return section("Structured-output amplification", note, rows)
