"""The run report (docs/reports.md, "Run report"): one self-contained HTML page from a run's records and, when given,
its summary. Pure: columns and a summary dict in, the page as a string out; reading and writing are report_cli's.

Why records and not only the summary: the summary holds percentiles, not distributions or time. The records give
exact percentiles (nearest rank), which the page checks against the summary's histograms, and every plot."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from loadlib.metrics.confidence import DEFAULT_LEVEL
from loadlib.reports import run_figures as rf
from loadlib.reports.capacity_curve import capacity_html
from loadlib.reports.html import figure, page, section, table
from loadlib.reports.records_in import OK, Records
from loadlib.reports.run_scenarios import scenario_sections
from loadlib.reports.run_series import Series, build_series, relative_times
from loadlib.reports.run_stats import grouped_sort, subsample
from loadlib.reports.run_summary import client_html, meta_rows, para, verdict_html
from loadlib.reports.run_table import Row, disagreements, errors_table, rows_table, table_rows

SCATTER_POINTS = 20_000
SCATTER_SEED = 20_240_601


def plot(fig: Figure, caption: str) -> str:
    """A figure with its caption (html.svg leaves out matplotlib's metadata: the page names no URL)."""
    return figure(fig, caption)


def build_report(rec: Records, summary: Mapping[str, Any] | None, files: Sequence[str]) -> str:
    """The whole page."""
    duration = _duration(rec, summary)
    level = ((summary or {}).get("confidence") or {}).get("level") or DEFAULT_LEVEL
    rows = table_rows(rec, duration, float(level))
    series = build_series(rec)
    sections = [
        section("Run", _run_table(rec, summary, files, series, duration)),
        section("Verdict", verdict_html(summary)),
        section("Requests by scenario and endpoint", *_table_parts(rows, summary, duration)),
        *scenario_sections(summary),
        section("Latency distributions", *_distributions(rec)),
        section("Over time", *_over_time(rec, series)),
        section("Prompt size and TTFT", _prefill(rec)),
        section("Client health", client_html(summary)),
    ]
    if summary and summary.get("capacity"):
        sections.insert(2, section("Capacity search", *capacity_html(summary["capacity"])))
    run_id = _run_id(rec, summary)
    subtitle = f"run {run_id or '-'} · {len(rec)} attempts" + (f" · {duration:.1f} s" if duration else "")
    return page("loadlib run report", subtitle, sections)


def _run_id(rec: Records, summary: Mapping[str, Any] | None) -> str | None:
    return ((summary or {}).get("meta") or {}).get("run_id") or ", ".join(rec.runs) or None


def _duration(rec: Records, summary: Mapping[str, Any] | None) -> float | None:
    """The summary's duration (throughput divides by it there too), else the records' span: first start to last
    end."""
    if summary and summary.get("duration_s"):
        return float(summary["duration_s"])
    _, _, _, ends = relative_times(rec)
    return float(ends.max()) if len(ends) and ends.max() > 0 else None


def _run_table(
    rec: Records, summary: Mapping[str, Any] | None, files: Sequence[str], series: Series, duration: float | None
) -> str:
    records = f"{len(rec)} attempts in {len(files)} file(s) from {rec.workers} worker(s)"
    if rec.skipped_lines:
        records += f"; {rec.skipped_lines} line(s) that were not a JSON object skipped"
    pairs: list[tuple[str, Any]] = [("run id", _run_id(rec, summary)), ("records", records)]
    pairs += meta_rows(summary)
    if not summary and duration:
        pairs.append(("duration", f"{duration:.1f} s (the records' span: no summary)"))
    pairs.append(("peak requests in flight", series.peak_in_flight))
    out = table(("", ""), pairs)
    if len(rec.runs) > 1:
        out += para(f"The records come from {len(rec.runs)} runs: {', '.join(rec.runs)}.", "fail")
    return out


def _table_parts(rows: list[Row], summary: Mapping[str, Any] | None, duration: float | None) -> list[str]:
    per = "the summary's duration" if summary and summary.get("duration_s") else "the records' span"
    parts = [
        rows_table(rows),
        para(
            "Latencies in ms over successful attempts (exact nearest-rank percentiles of the records; [low–high]: "
            "the p95's confidence interval from the records' order statistics, docs/statistics.md); requests, "
            f"errors, tokens and cost over every attempt; output tok/s = output tokens / {per}"
            + (f" ({duration:.1f} s)." if duration else "."),
            "muted",
        ),
    ]
    errors = errors_table(rows)
    parts += [para("Failed attempts by error class:"), errors] if errors else [para("No attempt failed.")]
    if summary is not None:
        parts.append(_agreement(rows, summary))
    return parts


def _agreement(rows: list[Row], summary: Mapping[str, Any]) -> str:
    found = disagreements(rows, summary)
    if not found:
        return para(
            "Counts equal the summary's, and TTFT and E2E percentiles agree with its histograms within their 0.1 %.",
            "pass",
        )
    return para("Differs from the summary (is a worker's records file missing?): " + "; ".join(found), "fail")


def _distributions(rec: Records) -> list[str]:
    ok, n = rec.ok, len(rec.groups)
    ttft = grouped_sort(rec.group, np.where(ok, rec.ttft, np.nan), n)
    e2e = grouped_sort(rec.group, np.where(ok, rec.e2e, np.nan), n)
    gaps = int(rec.itl_counts.sum())
    return [
        plot(
            rf.cdf_figure("TTFT", rec.groups, *ttft),
            "TTFT CDF per scenario @ endpoint (log x): read any percentile where a line crosses its share; a step or "
            "a long right tail is a second mode (cold cache, queueing) or stalls.",
        ),
        plot(
            rf.cdf_figure("E2E", rec.groups, *e2e),
            "E2E CDF per scenario @ endpoint (log x): the whole answer's time; its spread is mostly output length "
            "times decode speed, so compare it with the TTFT CDF above.",
        ),
        plot(
            rf.itl_figure(rec.itl_counts, rec.itl_zeros),
            f"All {gaps + rec.itl_zeros} gaps between output events of successful attempts (log x; "
            f"{rec.itl_zeros} gaps of 0 ms, events read together, not drawn): one narrow hump is steady decoding, "
            "a hump far to the right is stalls or batch pauses.",
        ),
    ]


def _over_time(rec: Records, s: Series) -> list[str]:
    bins = f"{s.step_s:g} s bins by"
    return [
        plot(
            rf.ttft_over_time(s, rec.groups),
            f"TTFT p50 (solid) and p95 (dashed) of successful attempts, {bins} start: a line that climbs while the "
            "load holds still is a queue building at the server.",
        ),
        plot(
            rf.per_group_over_time(s, rec.groups, s.tokens_per_s, "Output tokens per second", "output tokens / s"),
            f"Output tokens per second, every attempt, {bins} end (when they were delivered): a plateau while "
            "requests in flight keep rising is the server's throughput ceiling.",
        ),
        plot(
            rf.in_flight_over_time(s),
            f"Requests in flight, the time average per {s.step_s:g} s bin, computed from each attempt's start and "
            f"E2E because records carry no user count (peak {s.peak_in_flight}): closed-loop runs hold it near the "
            "user count; dips are think time, back-off or errors that return fast.",
        ),
        plot(
            rf.errors_over_time(s, rec.statuses, OK),
            f"Failed attempts per second by error class, {bins} start: a burst that follows a TTFT climb is "
            "overload; a steady rate is a fault that does not depend on load.",
        ),
        plot(
            rf.cost_over_time(s, rec.groups),
            f"Cumulative cost in USD of every attempt (failed ones are billed too), {bins} end: the slope is the "
            "spend per second; a bend is a change of load or of output length.",
        ),
    ]


def _prefill(rec: Records) -> str:
    """Prompt tokens against TTFT for a seeded random subset of the successful attempts."""
    usable = np.flatnonzero(rec.ok & ~np.isnan(rec.prompt) & ~np.isnan(rec.ttft))
    pick = usable[subsample(len(usable), SCATTER_POINTS, SCATTER_SEED)]
    fig = rf.prefill_scatter(rec.prompt[pick], rec.ttft[pick], rec.group[pick], rec.groups)
    shown = f"{len(pick)} of {len(usable)}"
    if len(pick) < len(usable):
        shown += f", drawn at random with seed {SCATTER_SEED}"
    return plot(
        fig,
        f"Prompt tokens against TTFT of successful attempts ({shown}): a band rising to the right is prefill cost "
        "(support-chat turns growing, long documents); a flat cloud means prompt size does not drive TTFT.",
    )
