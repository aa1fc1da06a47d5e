"""Scenario SLO defaults as thresholds (docs/thresholds.md, "Scenario SLOs").

A scenario declares its SLOs as threshold expressions written without a scenario tag (`ttft p95 < 150ms`); here they
get the tag (`ttft{scenario=support_chat} p95 < 150ms`) so they judge that scenario's rows only. A user threshold on
the same metric, tags and aggregate replaces the default; `--scenario-slo off` drops every default. A default whose
scenario sent nothing in the run (a class left out in the web UI's picker) is not judged: no requests of it were
intended. Pure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from loadlib.verdicts.thresholds import METRICS, TAG_ORDER, Threshold, braces, parse

SWITCH = ("on", "off")


def scenario_defaults(slos: Mapping[str, Sequence[str]]) -> list[Threshold]:
    """Every scenario's SLO expressions, tagged with the scenario where the metric takes tags."""
    return [_tagged(parse(expr, f"the {name} scenario's SLO"), name) for name, exprs in slos.items() for expr in exprs]


def _tagged(t: Threshold, scenario: str) -> Threshold:
    origin = f"{scenario} SLO"
    if "scenario" not in METRICS[t.metric].tags:
        return dataclasses.replace(t, origin=origin)
    tags = tuple(sorted({**dict(t.tags), "scenario": scenario}.items(), key=lambda kv: TAG_ORDER.index(kv[0])))
    tail = t.expression[len(t.metric) :].lstrip()
    if tail.startswith("{"):
        tail = tail[tail.index("}") + 1 :].lstrip()
    return dataclasses.replace(t, tags=tags, expression=f"{t.metric}{braces(tags)} {tail}", origin=origin)


def combine(user: Sequence[Threshold], defaults: Iterable[Threshold]) -> list[Threshold]:
    """The user's thresholds, then each default the user did not restate (same metric, tags and aggregate)."""
    taken = {_key(t) for t in user}
    return [*user, *(d for d in defaults if _key(d) not in taken)]


def _key(t: Threshold) -> tuple[Any, ...]:
    return (t.metric, t.tags, t.aggregate)


def applicable(thresholds: Sequence[Threshold], summary: Mapping[str, Any]) -> list[Threshold]:
    """Drop the defaults of scenarios without a row in the summary (they did not run); keep every user threshold."""
    ran = {str(r.get("scenario")) for r in summary.get("rows") or [] if isinstance(r, dict)}
    return [t for t in thresholds if not t.origin or t.origin.removesuffix(" SLO") in ran]
