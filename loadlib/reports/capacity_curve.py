"""The run report's capacity section (docs/capacity.md): each step of a capacity search as a point of achieved
requests per second against TTFT p95, in the order the search tried them, the steps that held apart from those that
failed, and the knee, the largest load that held, marked. Pure: the summary's `capacity` in, HTML out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure

from loadlib.metrics.server_metrics import STEP_HEADERS, step_cells
from loadlib.reports.html import esc, figure, table
from loadlib.verdicts.verdict import capacity_answer, capacity_drain, capacity_first_failed, capacity_load

HELD, FAILED, KNEE = "#2e7d32", "#c62828", "#1565c0"


def _load(step: Mapping[str, Any]) -> float:
    """What the search set: a step's arrival rate (a rate search) or its users."""
    rate = step.get("rate_per_s")
    return float(step["users"] if rate is None else rate)


def capacity_curve(steps: Sequence[Mapping[str, Any]], answer: float) -> Figure:
    """Throughput against latency, one point per step labelled with its load (users or req/s), sorted by load."""
    fig = Figure(figsize=(9.5, 3.6))
    ax = fig.subplots()
    ax.set_title("Capacity search: achieved throughput against TTFT p95", fontsize="medium", loc="left")
    ax.set_xlabel("requests / s (the step's window)")
    ax.set_ylabel("TTFT p95 (ms)")
    ax.grid(True, alpha=0.3)
    points = sorted((s for s in steps if s.get("ttft_ms", {}).get("p95") is not None), key=_load)
    ax.plot([s["requests_per_s"] or 0 for s in points], [s["ttft_ms"]["p95"] for s in points], color="#9e9e9e", lw=1)
    for s in points:
        x, y = s["requests_per_s"] or 0, s["ttft_ms"]["p95"]
        color = KNEE if _load(s) == answer and s["passed"] else HELD if s["passed"] else FAILED
        ax.scatter([x], [y], color=color, s=36 if color == KNEE else 18, zorder=3)
        ax.annotate(f"{_load(s):g}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize="small")
    return fig


def capacity_html(capacity: Mapping[str, Any] | None) -> list[str]:
    """The section's parts: the answer, the curve, the step table; nothing for a run without a search."""
    if not capacity:
        return []
    steps = capacity.get("steps") or []
    rows = [_row(s) for s in steps]
    headers = ["step", "load", "result", "req/s", "out tok/s", "TTFT p50", "TTFT p95", "E2E p95", "errors"]
    caption = (
        "Each step's window: green held its SLOs, red failed, blue is the answer (the knee: the largest load that "
        "held); numbers are the loads (users, or requests/s of a rate search). Past the knee throughput stops "
        "growing while latency climbs."
    )
    numeric = [True, True, False, True, True, True, True, True, True]
    if any(s.get("drain_s") is not None for s in steps):  # a rate search drained the queue of a failed step
        rows = [[*row, capacity_drain(s) or "-"] for row, s in zip(rows, steps, strict=True)]
        headers, numeric = [*headers, "drain before it"], [*numeric, True]
    if any(s.get("server") for s in steps):  # --llm-server-metrics: the server's own view of each step
        rows = [[*row, *step_cells(s)] for row, s in zip(rows, steps, strict=True)]
        headers, numeric = [*headers, *STEP_HEADERS], [*numeric, True, True, True, True]
    return [
        f"<p>{esc(_answer(capacity))}</p>",
        figure(capacity_curve(steps, _answer_load(capacity)), caption),
        table(headers, rows, numeric),
    ]


def _answer_load(c: Mapping[str, Any]) -> float:
    return float(c.get("max_rate_per_s") or c.get("max_users") or 0)


def _answer(c: Mapping[str, Any]) -> str:
    if c.get("lower_bound"):
        return f"{capacity_answer(c)}, a lower bound only: {c.get('stopped')}"
    why = "; ".join(c.get("first_failed_by") or [])
    return f"{capacity_answer(c)}; first failing {capacity_first_failed(c)}: {why}"


def _row(s: Mapping[str, Any]) -> list[Any]:
    result = "held" if s.get("passed") else ("client saturated" if s.get("client_saturated") else "FAIL")
    ttft, e2e = s.get("ttft_ms") or {}, s.get("e2e_ms") or {}
    head = [s.get("step"), capacity_load(s), result, s.get("requests_per_s"), s.get("output_tokens_per_s")]
    return [*head, ttft.get("p50"), ttft.get("p95"), e2e.get("p95"), s.get("errors")]
