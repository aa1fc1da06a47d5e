"""The incidents table of the Markdown summary and the run report: one row of plain text per incident
(docs/failover.md, "Incidents"); each output escapes the cells its own way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HEADER = ("incident", "workers", "detect p50 / max s", "failover p50 / max s", "failback max s", "user errors")


def incident_row(f: Mapping[str, Any]) -> list[str]:
    """The incident's endpoint and span, its workers, its per-worker times and the user-visible errors within it."""
    what = f"{f.get('index')}: {f.get('endpoint')}"
    if f.get("at_s") is not None:
        what += f" at +{f['at_s']:.1f} s"
    what += " (still open)" if f.get("ongoing") else f" for {_s(f.get('duration_s'))} s"
    if f.get("drill") is not None:
        what += f", drill {f['drill']}"
    rate = f.get("user_error_rate")
    errors = f"{f.get('user_errors')} of {f.get('user_requests')}" + ("" if rate is None else f" ({rate * 100:.2f} %)")
    return [
        what,
        str(len(f.get("workers") or [])),
        _pair(f.get("detect_s")),
        _pair(f.get("failover_s")),
        _s((f.get("failback_s") or {}).get("max")),
        errors,
    ]


def _pair(spread: Mapping[str, Any] | None) -> str:
    spread = spread or {}
    return f"{_s(spread.get('p50'))} / {_s(spread.get('max'))}"


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"
