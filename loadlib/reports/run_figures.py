"""The run report's plots as matplotlib `Figure` objects (never pyplot: no display, no global state), drawn from
arrays the other run_* modules computed. Each returns the Figure; turning it into inline SVG is html.figure's job."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from loadlib.reports.records_in import ITL_EDGES
from loadlib.reports.run_series import Series
from loadlib.reports.run_stats import cdf_points

SIZE = (9.5, 3.3)
DPI = 110  # the raster of the scatter plot only; everything else stays vector


def _axes(title: str, xlabel: str, ylabel: str) -> tuple[Figure, Axes]:
    fig = Figure(figsize=SIZE, dpi=DPI)
    ax = fig.subplots()
    ax.set_title(title, fontsize="medium", loc="left")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    return fig, ax


class _PlainLog(LogFormatter):
    """LogFormatter's choice of which ticks to label, in plain numbers (0.5, 50.25, 100,000)."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        if not super().__call__(x, pos):
            return ""
        return f"{x:,.0f}" if x >= 1000 else f"{x:g}"


def _log(ax: Axes, which: str) -> None:
    """Log scale on "x", "y" or "xy" with plain numbers (50.5, 100), not 5.05 × 10¹; a range under a decade labels
    its minor ticks."""
    if "x" in which:
        ax.set_xscale("log")
    if "y" in which:
        ax.set_yscale("log")
    for axis in [ax.xaxis] * ("x" in which) + [ax.yaxis] * ("y" in which):
        axis.set_major_formatter(_PlainLog(labelOnlyBase=False))
        axis.set_minor_formatter(_PlainLog(labelOnlyBase=False, minor_thresholds=(2, 0.5)))


def _time_limits(ax: Axes, x: np.ndarray, width: float) -> None:
    ax.set_xlim(float(x[0]), float(x[-1]) + width)
    ax.set_ylim(bottom=0)


def _steps(ax: Axes, x: np.ndarray, y: np.ndarray, width: float, **style: Any) -> None:
    """One flat step per bin, the last one drawn to its end too."""
    ax.plot(np.append(x, x[-1] + width), np.append(y, y[-1]), drawstyle="steps-post", **style)


def _color(i: int) -> str:
    return f"C{i % 10}"


def _legend(ax: Axes) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False)


def _empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="#757575")


def time_axis(series: Series) -> tuple[np.ndarray, str, float]:
    """Bin starts in a readable unit: seconds, minutes past 20 min, hours past 5 h; and the divisor used."""
    span = float(series.x[-1] + series.step_s) if series.bins else 0.0
    unit, div = ("h", 3600.0) if span > 5 * 3600 else ("min", 60.0) if span > 1200 else ("s", 1.0)
    return series.x / div, f"time since the first request ({unit})", div


def cdf_figure(
    metric: str, groups: Sequence[str], ordered: np.ndarray, offsets: np.ndarray, counts: np.ndarray
) -> Figure:
    """One empirical CDF line per group, log x; `ordered`, `offsets`, `counts` as run_stats.grouped_sort gives them."""
    fig, ax = _axes(f"{metric} CDF, successful attempts", f"{metric} (ms, log scale)", "share of attempts")
    for i, name in enumerate(groups):
        values = ordered[offsets[i] : offsets[i] + counts[i]]
        if len(values):
            x, y = cdf_points(np.maximum(values, 1e-3))
            ax.step(x, y, where="post", color=_color(i), label=f"{name} (n={len(values)})")
    if counts.sum():
        _log(ax, "x")
        ax.set_ylim(0, 1.01)
    else:
        _empty(ax, "no successful attempts")
    _legend(ax)
    return fig


def ttft_over_time(series: Series, groups: Sequence[str]) -> Figure:
    """TTFT p50 (solid) and p95 (dashed) per group and bin."""
    x, label, div = time_axis(series)
    width = series.step_s / div
    fig, ax = _axes("TTFT over time, successful attempts", label, "TTFT (ms)")
    for i, name in enumerate(groups):
        if np.isfinite(series.ttft[i]).any():
            _steps(ax, x, series.ttft[i, :, 0], width, color=_color(i), lw=1.2, label=f"{name} p50")
            _steps(ax, x, series.ttft[i, :, 1], width, color=_color(i), lw=1.0, ls="--", label=f"{name} p95")
    if not np.isfinite(series.ttft).any():
        _empty(ax, "no successful attempts")
    _time_limits(ax, x, series.step_s / div)
    _legend(ax)
    return fig


def per_group_over_time(series: Series, groups: Sequence[str], values: np.ndarray, title: str, ylabel: str) -> Figure:
    """One line per group and, with several groups, their total."""
    x, label, div = time_axis(series)
    fig, ax = _axes(title, label, ylabel)
    width = series.step_s / div
    for i, name in enumerate(groups):
        _steps(ax, x, values[i], width, color=_color(i), lw=1.2, label=name)
    if len(groups) > 1:
        _steps(ax, x, values.sum(axis=0), width, color="#212121", lw=1.0, ls=":", label="all")
    _time_limits(ax, x, series.step_s / div)
    _legend(ax)
    return fig


def in_flight_over_time(series: Series) -> Figure:
    x, label, div = time_axis(series)
    fig, ax = _axes("Requests in flight (from start and E2E)", label, "requests in flight")
    _steps(ax, x, series.in_flight, series.step_s / div, color="C0", lw=1.2)
    _time_limits(ax, x, series.step_s / div)
    return fig


def errors_over_time(series: Series, statuses: Sequence[str], ok: str) -> Figure:
    """Failed attempts per second, one line per error class that occurred."""
    x, label, div = time_axis(series)
    fig, ax = _axes("Errors by class over time", label, "failed attempts / s")
    drawn = 0
    for j, status in enumerate(statuses):
        if status != ok and series.errors_per_s[j].any():
            _steps(ax, x, series.errors_per_s[j], series.step_s / div, color=_color(drawn), lw=1.2, label=status)
            drawn += 1
    if not drawn:
        _empty(ax, "no failed attempts")
    _time_limits(ax, x, series.step_s / div)
    _legend(ax)
    return fig


def itl_figure(counts: np.ndarray, zeros: int) -> Figure:
    """The histogram of every inter-token gap on log bins (zero gaps cannot sit on a log axis; the caption says how
    many there were)."""
    fig, ax = _axes("Inter-token latency, successful attempts", "gap between output events (ms, log scale)", "gaps")
    used = np.flatnonzero(counts)
    if len(used):
        a, b = used[0], used[-1] + 1
        ax.stairs(counts[a:b], ITL_EDGES[a : b + 1], fill=True, color="C0", alpha=0.8)
        _log(ax, "x")
    else:
        _empty(ax, "no gaps above 0 ms" if zeros else "no inter-token gaps")
    return fig


def prefill_scatter(prompt: np.ndarray, ttft: np.ndarray, group: np.ndarray, groups: Sequence[str]) -> Figure:
    """Prompt tokens against TTFT, one colour per group, log-log; the points are rasterised so 20,000 of them
    stay a small image inside the SVG."""
    fig, ax = _axes("Prompt tokens against TTFT, successful attempts", "prompt tokens (log scale)", "TTFT (ms, log)")
    for i, name in enumerate(groups):
        mine = group == i
        if mine.any():
            ax.scatter(prompt[mine], ttft[mine], s=5, alpha=0.5, lw=0, color=_color(i), label=name, rasterized=True)
    if len(prompt) and (prompt > 0).any() and (ttft > 0).any():
        _log(ax, "xy")
    else:
        _empty(ax, "no successful attempt with prompt tokens and a TTFT")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small", frameon=False, markerscale=3)
    return fig


def cost_over_time(series: Series, groups: Sequence[str]) -> Figure:
    x, label, div = time_axis(series)
    fig, ax = _axes("Cumulative cost", label, "USD")
    ends = np.append(x[:1], x + series.step_s / div)  # the run's start at 0, then each bin's end
    for i, name in enumerate(groups):
        ax.plot(ends, np.append(0.0, series.cost_cumulative[i]), color=_color(i), lw=1.2, label=name)
    if len(groups) > 1:
        total = np.append(0.0, series.cost_cumulative.sum(axis=0))
        ax.plot(ends, total, color="#212121", lw=1.0, ls=":", label="all")
    if not series.cost_cumulative.any():
        _empty(ax, "nothing was priced (no cost_usd in the records)")
    _time_limits(ax, x, series.step_s / div)
    _legend(ax)
    return fig
