"""The latency–cost chart: every priced endpoint at (blended $ per 1K tokens, latency p95), the Pareto front marked,
joined and labelled, and the bars as dashed lines, so "which is worth its price" can be read at a glance.

A matplotlib `Figure` built directly (never pyplot: no display, no global state); loadlib.reports.html turns it into
inline SVG."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from loadlib.reports.compare import Verdict, points, usd

FRONT, OTHER, BAR = "#178038", "#9e9e9e", "#c62828"


def chart(v: Verdict) -> Figure | None:
    """None when no endpoint has both a cost and a latency."""
    pts = points(v.assessed, v.bars.latency)
    if not pts:
        return None
    fig = Figure(figsize=(7.5, 4.6))
    ax = fig.add_subplot()
    _points(ax, pts, v)
    _front_line(ax, pts, v.front)
    _bars(ax, v)
    _scales(ax, pts, v)
    ax.set_xlabel("blended $ per 1K tokens (at each run's own token mix)")
    ax.set_ylabel(f"{v.bars.latency.upper()} p95 (ms)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="best", fontsize=8, frameon=False)
    return fig


def _points(ax, pts: dict[str, tuple[float, float]], v: Verdict) -> None:
    front = {n: pts[n] for n in v.front}
    others = {n: p for n, p in pts.items() if n not in front}
    if others:
        ax.scatter(*zip(*others.values(), strict=True), s=36, color=OTHER, label="dominated", zorder=3)
    ax.scatter(*zip(*front.values(), strict=True), s=90, marker="*", color=FRONT, label="Pareto front", zorder=4)
    if v.recommended in pts:
        x, y = pts[v.recommended]
        ax.scatter([x], [y], s=260, facecolors="none", edgecolors="#212121", label="recommended", zorder=5)
    for name, (x, y) in pts.items():
        weight = "bold" if name in front else "normal"
        ax.annotate(name, (x, y), xytext=(6, 6), textcoords="offset points", fontsize=9, fontweight=weight)


def _front_line(ax, pts: dict[str, tuple[float, float]], front: list[str]) -> None:
    """The front as a staircase from the cheapest to the fastest: every point above and right of it is dominated."""
    ordered = sorted((pts[n] for n in front), key=lambda p: (p[0], -p[1]))
    if len(ordered) > 1:
        xs, ys = zip(*ordered, strict=True)
        ax.step(xs, ys, where="post", color=FRONT, linewidth=1.2, alpha=0.7, zorder=2)


def _bars(ax, v: Verdict) -> None:
    cost, latency = v.bars.max_usd_per_1k, v.bars.max_latency_ms
    if cost is not None:
        ax.axvline(cost, color=BAR, linestyle="--", linewidth=1, label=f"cost bar {usd(cost)}")
    if latency is not None:
        ax.axhline(latency, color=BAR, linestyle=":", linewidth=1, label=f"latency bar {latency:g} ms")


def _scales(ax, pts: dict[str, tuple[float, float]], v: Verdict) -> None:
    """Log scales when every figure is positive (costs and latencies span magnitudes); the bars stay in view."""
    xs = [p[0] for p in pts.values()] + [b for b in (v.bars.max_usd_per_1k,) if b]
    ys = [p[1] for p in pts.values()] + [b for b in (v.bars.max_latency_ms,) if b]
    _scale(ax.xaxis, xs, ax.set_xscale, ax.set_xlim, lambda x, _: usd(x))
    _scale(ax.yaxis, ys, ax.set_yscale, ax.set_ylim, lambda y, _: f"{y:g}")


def _scale(axis, values: list[float], set_scale, set_lim, label) -> None:
    lo, hi = min(values), max(values)
    if lo > 0:
        set_scale("log")
        set_lim(lo / 1.8, hi * 1.8)
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_minor_formatter(NullFormatter())
    else:
        set_lim(0, hi * 1.15 or 1.0)
    axis.set_major_formatter(FuncFormatter(label))
