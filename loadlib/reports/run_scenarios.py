"""The scenario tables of the run report and the web UI's charts page, from the summary (pure): what the scenarios
found beyond latency that reads best as a table (structured-output amplification, what busts the cache). Nothing when
the run had none."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadlib.metrics import amplification
from loadlib.metrics import cache_probe_results as probe
from loadlib.reports.html import section, table
from loadlib.reports.run_summary import para


def scenario_sections(summary: Mapping[str, Any] | None) -> list[str]:
    """The report's sections of scenario tables present in the summary."""
    scenarios = (summary or {}).get("scenarios") or {}
    amp = (scenarios.get("compliance") or {}).get("amplification")
    busts = scenarios.get("cache_probe")
    return [*([_amplification(amp)] if amp else []), *([_cache_probe(busts)] if busts else [])]


def tabled_lines(summary: Mapping[str, Any] | None) -> set[str]:
    """The printed summary's lines that scenario_sections() shows as tables (the cache probe's text table and its
    verdict lines, the amplification lines), and the "Scenario results" heading when nothing else is under it."""
    scenarios = (summary or {}).get("scenarios") or {}
    amp = (scenarios.get("compliance") or {}).get("amplification")
    found = scenarios.get("cache_probe")
    lines = {*(amplification.render(dict(amp)) if amp else ()), *(probe.render(dict(found)) if found else ())}
    return lines | ({"Scenario results"} if set(scenarios) == {"cache_probe"} else set())


def _amplification(amp: Mapping[str, Any]) -> str:
    note = para(
        "The same compliance cases asked for JSON and for plain prose (--compliance-plain-share): ratios of sums over "
        "the pairs whose two answers succeeded; TTFT and E2E as the JSON answers' mean minus the prose answers'. "
        "In brackets: the confidence interval at the run's level (Fieller's for the ratios, Student's t for the "
        "differences; ? when fewer than 2 pairs or a denominator not clearly above 0 leave it unbounded)."
    )
    rows = table(amplification.TABLE_HEADER, amplification.table_rows(dict(amp)), [False, *[True] * 6])
    return section("Structured-output amplification", note, rows)


def _cache_probe(found: Mapping[str, Any]) -> str:
    note = para(
        f"{found['rounds']} rounds of a fresh shared prefix, cold first, then one request per variation. "
        "Response-cache hits from the gateway's headers"
        + (
            " (none came: inferred from answers that repeat an earlier one's text with all their events at once)"
            if found["response_cache_source"] == "inferred"
            else ""
        )
        + "; the prompt-cache share over the requests that reached the model; savings against the cold request."
    )
    lines = [para(line[0].upper() + line[1:]) for line in probe.verdicts(found)]
    rows = table(probe.TABLE_HEADER, probe.table_rows(dict(found)), [False, True, False, False, True, True])
    return section("What busts the cache", note, rows, *lines)
