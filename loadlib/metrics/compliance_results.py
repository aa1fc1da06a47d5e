"""The compliance-review scenario's results: schema validity, determinism of repeats, the audit files and the
structured-output amplification of JSON/plain pairs (loadlib.metrics.amplification), recorded by
its users (loadlib.scenarios.compliance, review.py) and declared by its ScenarioSpec as `SECTION`. The thresholds
`schema_valid` and `deterministic` read this section (loadlib.verdicts.thresholds)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadlib.metrics import amplification
from loadlib.metrics.confidence import DEFAULT_LEVEL
from loadlib.metrics.scenarios import SEP, ScenarioResults, Section, key, num, select, share


def compliance_check(r: ScenarioResults, valid: bool) -> None:
    r.count(key("compliance", "schema", "valid" if valid else "invalid"))


def compliance_compare(r: ScenarioResults, matched: bool) -> None:
    r.count(key("compliance", "compare", "matched" if matched else "differed"))


def audit_written(r: ScenarioResults, path: str) -> None:
    r.count(key("compliance", "audit", path))


def summarize(r: ScenarioResults, summary: Mapping[str, Any]) -> dict[str, Any] | None:
    schema = {k[0]: v for k, v in select(r, "compliance", "schema").items()}
    compare = {k[0]: v for k, v in select(r, "compliance", "compare").items()}
    audit = select(r, "compliance", "audit")
    amp = amplification.summarize(r, float((summary.get("confidence") or {}).get("level") or DEFAULT_LEVEL))
    if not (schema or compare or audit or amp):
        return None
    valid, invalid = schema.get("valid", 0), schema.get("invalid", 0)
    matched, differed = compare.get("matched", 0), compare.get("differed", 0)
    return {
        "checked": valid + invalid,
        "schema_valid": valid,
        "schema_invalid": invalid,
        "schema_valid_share": share(valid, valid + invalid),
        "repeat_pairs": matched + differed,
        "deterministic": matched,
        "nondeterministic": differed,
        "deterministic_share": share(matched, matched + differed),
        "audit_files": [{"path": SEP.join(k), "lines": n} for k, n in sorted(audit.items())],
        **({"amplification": amp} if amp else {}),
    }


def render(comp: dict[str, Any]) -> list[str]:
    """Schema validity and determinism shares, then each audit file."""
    valid = comp.get("schema_valid_share")
    det = comp.get("deterministic_share")
    out = [
        f"compliance: {num(comp['checked'])} outputs checked, schema-valid "
        f"{num(valid * 100 if valid is not None else None)} %; deterministic "
        f"{num(det * 100 if det is not None else None)} % of {num(comp['repeat_pairs'])} repeats"
    ]
    out += amplification.render(comp["amplification"]) if comp.get("amplification") else []
    return out + [f"  audit file: {a['path']} ({num(a['lines'])} lines)" for a in comp.get("audit_files") or []]


SECTION = Section(summarize, render)
