"""The search's answer as the summary holds it (`capacity`: schemas/summary-v1.schema.json) and as the console
prints it: the largest load that held, the first that failed and why, whether the answer is only a lower bound, and
one row per step."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loadlib.capacity import drain
from loadlib.capacity.search import RATE, Search
from loadlib.capacity.step import StepWindow, step_summary
from loadlib.verdicts.verdict import (
    capacity_answer,
    capacity_drain,
    capacity_first_failed,
    capacity_load,
    capacity_text,
)


def step_row(
    index: int,
    users: int,
    window: StepWindow,
    duration_s: float,
    results: Sequence[Mapping[str, Any]],
    client: str | None,
    request_slo: str = "",
    rate: float | None = None,
) -> dict[str, Any]:
    """One step of the table: its load (users, and the arrival rate of a rate search), what the window measured,
    which thresholds failed, the client's state."""
    total = step_summary(window, duration_s, request_slo)["total"]
    lat = total["latency_ms"]
    failing = [f"{r['expression']}: {r['reason']}" for r in results if r["passed"] is not True]
    lag = window.stats.total.schedule_lag_ms
    return {
        "step": index,
        "users": users,
        "rate_per_s": rate,
        "confirm": False,
        "remeasured": None,
        **drain.fields(None),
        "schedule_lag_ms": _pair({"p50": lag.percentile(50), "p95": lag.percentile(95)}) if lag.count else None,
        "window_s": round(duration_s, 3),
        "requests": total["count"],
        "requests_per_s": total["requests_per_s"],
        "output_tokens_per_s": total["output_tokens_per_s"],
        "ttft_ms": _pair(lat["ttft"]),
        "tpot_ms": _pair(lat["tpot"]),
        "e2e_ms": _pair(lat["e2e"]),
        "errors": total["errors_total"],
        "error_rate": total["error_rate"],
        "goodput": total.get("goodput"),
        "client_saturated": client is not None,
        "client_reason": client,
        "passed": not failing and client is None,
        "failed": failing,
    }


def slipped(row: Mapping[str, Any], lag_limit_ms: float) -> str | None:
    """Why a failed step of a rate search is measured again, or None: its requests went out late (schedule lag p95
    over the loop-lag limit), so the endpoint saw bursts the rate does not make (a stalled client releasing its
    backlog), not the rate. Once: a step that fails again counts."""
    lag = (row.get("schedule_lag_ms") or {}).get("p95")
    if row["passed"] or row.get("rate_per_s") is None or lag is None or lag <= lag_limit_ms:
        return None
    return f"arrivals late (schedule lag p95 {lag:.0f} ms > {lag_limit_ms:g} ms): measured again"


def _pair(dist: Mapping[str, Any]) -> dict[str, Any]:
    return {"p50": dist.get("p50"), "p95": dist.get("p95")}


def section(
    search: Search,
    steps: Sequence[dict[str, Any]],
    stop: str | None,
    minimum: float | None,
    confirmed: bool | None = None,
) -> dict[str, Any]:
    """The summary's `capacity`: `stop` says why the search ended early (its answer is then a lower bound);
    `confirmed` whether the hold at the answer held (None: no hold)."""
    rate = search.control == RATE
    key = "rate_per_s" if rate else "users"
    first_fail = next((s for s in steps if s[key] == search.failed and not s["passed"]), None)
    return {
        "mode": search.control,
        "max_users": None if rate else int(search.held),
        "max_rate_per_s": search.held if rate else None,
        "lower_bound": stop is not None,
        "stopped": stop,
        "first_failed_users": None if rate or search.failed is None else int(search.failed),
        "first_failed_rate_per_s": search.failed if rate else None,
        "first_failed_by": (first_fail or {}).get("failed") or None,
        "precision": search.precision,
        "minimum": minimum,
        "gate_passed": None if minimum is None else search.held >= minimum,
        "confirmed": confirmed,
        "steps": list(steps),
    }


def lines(capacity: dict[str, Any] | None) -> list[str]:
    """The console's capacity block: the answer, then one line per step."""
    if not capacity:
        return []
    out = ["Capacity search:", f"  {answer_line(capacity)}"]
    return out + [step_line(s) for s in capacity["steps"]]


def step_line(s: dict[str, Any]) -> str:
    """One step as the console (and an InfluxDB annotation) shows it."""
    mark = ("held" if s["passed"] else "FAIL") + (" (confirm)" if s.get("confirm") else "")
    return (
        f"  step {s['step']:>2} {capacity_load(s):>12}  {mark}  {_num(s['requests_per_s'])} req/s  "
        f"{_num(s['output_tokens_per_s'])} out tok/s  TTFT p50/p95 {_num(s['ttft_ms']['p50'])}/"
        f"{_num(s['ttft_ms']['p95'])} ms  E2E p95 {_num(s['e2e_ms']['p95'])} ms  errors {s['errors']}"
        f"{'  client saturated' if s['client_saturated'] else ''}{'  measured again' if s.get('remeasured') else ''}"
        f"{f'  after a drain of {capacity_drain(s)}' if s.get('drain_s') is not None else ''}"
    )


def so_far(c: Mapping[str, Any]) -> str:
    """`search under way: 8 held so far, 16 failed`: the answer while the search runs (its published answer says
    "the run ended" until the search ends)."""
    rate = c.get("mode") == RATE
    held = c.get("max_rate_per_s") if rate else c.get("max_users")
    failed = c.get("first_failed_rate_per_s") if rate else c.get("first_failed_users")
    unit = " req/s" if rate else ""
    text = f"search under way: {_load(held)}{unit} held so far"
    return text + (f", {_load(failed)}{unit} failed" if failed is not None else "")


def _load(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def brief(c: Mapping[str, Any], running: bool) -> str:
    """The search in a few words for the progress display: where it stands, or its answer once the run is over."""
    return f"capacity {so_far(c)}" if running else capacity_text(c)


def answer_line(c: dict[str, Any]) -> str:
    """`max_users 24 (within 5 %); first failing 26 users: ttft p95 < 500ms: ...`, or a lower bound and why; then
    what the hold at the answer found, when there was one."""
    head = capacity_answer(c)
    hold = {None: "", True: "; the hold at it confirmed it", False: "; the hold at it did NOT confirm it"}
    if c["lower_bound"]:
        return f"{head} (a lower bound only: {c['stopped']}){hold[c.get('confirmed')]}"
    why = "; ".join(c["first_failed_by"] or []) or "the client"
    failed = capacity_first_failed(c)
    return f"{head} (within {c['precision'] * 100:g} %); first failing {failed}: {why}{hold[c.get('confirmed')]}"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:,.1f}"
