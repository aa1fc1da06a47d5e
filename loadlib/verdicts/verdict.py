"""The run's verdict and exit code (docs/outputs.md, "Exit codes"), from threshold results and the summary. Pure.

Thresholds decide only when a run has some (thresholds or drills); without them Locust's own rule stays (any failed
request: exit 1), so a run without thresholds keeps the exit code it always had.
"""

from __future__ import annotations

from typing import Any

from loadlib.verdicts.thresholds import METRICS

# 130 = 128 + SIGINT, what a shell reports for a command stopped with Ctrl-C (SIGTERM gives the same here)
EXIT_CODES = {"pass": 0, "fail": 99, "invalid": 3, "incomplete": 3, "config_error": 2, "interrupted": 130}


def verdict(results: list[dict[str, Any]], summary: dict[str, Any]) -> dict[str, Any] | None:
    """{"status", "exit_code", "reasons"}, or None when the run has neither thresholds nor drills and is complete.

    A run that lost a worker or ran under its intended load (loadlib.metrics.integrity) is `incomplete`, with or
    without thresholds: its numbers describe another run than the one asked for. An interrupted run (stopped by a
    signal before its end) is `interrupted` whatever its numbers say: it did not run the load it was meant to. A
    saturated client or a threshold that could not be judged (too few samples, no
    matching requests) makes the run invalid: its numbers cannot support a verdict, so even a failed threshold is
    reported as invalid, not as failed. A run aborted on a lost threshold failed, even if the threshold recovered
    with the last reports; thresholds left with too few samples by the abort do not make it invalid (a saturated
    client still does)."""
    drills = (summary.get("failover") or {}).get("drills") or []
    integrity = summary.get("integrity") or {}
    incomplete = [f"run incomplete: {r}" for r in integrity.get("reasons") or []]
    if not results and not drills and not incomplete:
        return None
    aborted = summary.get("aborted")
    invalid = _invalid_reasons([] if aborted else results, summary)
    failed = [f"{r['expression']}: {r['reason']}" for r in results if r["passed"] is False]
    failed += [f"drill {d['index']} on {d['endpoint']} failed its targets" for d in drills if d["passed"] is False]
    if aborted:
        failed.insert(0, f"aborted after {aborted['after_s']:.1f} s: {aborted['reasons'][0]}")
    if summary.get("interrupted"):
        status, reasons = "interrupted", [_interrupted(summary), *incomplete, *invalid, *failed]
    elif incomplete:
        status, reasons = "incomplete", [*incomplete, *invalid, *failed]
    else:
        status = "invalid" if invalid else "fail" if failed else "pass"
        reasons = invalid or failed
    return {"status": status, "exit_code": EXIT_CODES[status], "reasons": reasons}


def _interrupted(summary: dict[str, Any]) -> str:
    return (
        f"interrupted after {summary.get('duration_s') or 0:.1f} s (a signal stopped the run before its end): the "
        "thresholds describe a shorter run than intended"
    )


def lost(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The failed results a run can no longer win back. A sampled number (a percentile, a rate, a throughput) is
    judged as it stands, with its sample rule; a total (requests, errors, cost) only grows, so it is lost only when
    its upper bound is already passed: `requests > 1000` failing at 10 s is merely not reached yet."""
    out = []
    for r in results:
        if r["passed"] is not False:
            continue
        over = r["op"] in ("<", "<=") or (r["op"] == "==" and (r["value"] or 0) > r["limit"])
        if METRICS[r["metric"]].sampled or over:
            out.append(r)
    return out


def _invalid_reasons(results: list[dict[str, Any]], summary: dict[str, Any]) -> list[str]:
    reasons = [f"{r['expression']}: {r['reason']}{_default_hint(r)}" for r in results if r["passed"] is None]
    if summary.get("client_saturated"):
        why = (summary.get("client") or {}).get("reasons") or ["the load generator was saturated"]
        reasons.insert(0, f"client saturated: {'; '.join(map(str, why))}")
    return reasons


def _default_hint(r: dict[str, Any]) -> str:
    """A scenario default the user never wrote: say where it came from and the ways out."""
    if not r.get("origin"):
        return ""
    return f" ({r['origin']} default: run longer, or turn the defaults off with --scenario-slo off)"


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
