"""The run's verdict and exit code (docs/outputs.md, "Exit codes"), from threshold results and the summary. Pure.

Thresholds decide only when a run has some (thresholds or drills); without them Locust's own rule stays (any failed
request: exit 1), so a run without thresholds keeps the exit code it always had.
"""

from __future__ import annotations

from typing import Any

EXIT_CODES = {"pass": 0, "fail": 99, "invalid": 3, "config_error": 2}


def verdict(results: list[dict[str, Any]], summary: dict[str, Any]) -> dict[str, Any] | None:
    """{"status", "exit_code", "reasons"}, or None when the run has neither thresholds nor drills.

    A saturated client or a threshold that could not be judged (too few samples, no matching requests) makes the run
    invalid: its numbers cannot support a verdict, so even a failed threshold is reported as invalid, not as failed."""
    drills = (summary.get("failover") or {}).get("drills") or []
    if not results and not drills:
        return None
    invalid = _invalid_reasons(results, summary)
    failed = [f"{r['expression']}: {r['reason']}" for r in results if r["passed"] is False]
    failed += [f"drill {d['index']} on {d['endpoint']} failed its targets" for d in drills if d["passed"] is False]
    status = "invalid" if invalid else "fail" if failed else "pass"
    return {"status": status, "exit_code": EXIT_CODES[status], "reasons": invalid or failed}


def _invalid_reasons(results: list[dict[str, Any]], summary: dict[str, Any]) -> list[str]:
    reasons = [f"{r['expression']}: {r['reason']}" for r in results if r["passed"] is None]
    if summary.get("client_saturated"):
        why = (summary.get("client") or {}).get("reasons") or ["the load generator was saturated"]
        reasons.insert(0, f"client saturated: {'; '.join(map(str, why))}")
    return reasons


def lines(results: list[dict[str, Any]], outcome: dict[str, Any] | None) -> list[str]:
    """The console's verdict table: one line per threshold, then the verdict with its exit code."""
    if outcome is None:
        return []
    mark = {True: "pass", False: "FAIL", None: "n/a "}
    out = [f"  {mark[r['passed']]}  {r['expression']}: {r['reason']}" for r in results]
    head = f"Verdict: {outcome['status'].upper()} (exit code {outcome['exit_code']})"
    if outcome["status"] != "pass" and outcome["reasons"]:
        head += f": {outcome['reasons'][0]}"
    return ["Thresholds:", *out, head] if results else [head]
