"""The run report's table per scenario and endpoint, computed from the records (pure).

Who counts where follows docs/metrics.md, "Statistics and the summary": latencies over successful attempts only,
counts, tokens and cost over every attempt. Percentiles are exact (nearest rank); output tokens/s divide by the
summary's duration when there is one, as the summary does, else by the records' span.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from loadlib.histogram import RELATIVE_ERROR
from loadlib.metrics.confidence import DEFAULT_LEVEL
from loadlib.metrics.summary import TOTAL_NAME, interval_text
from loadlib.reports.html import table
from loadlib.reports.records_in import NOT_ERRORS, Records
from loadlib.reports.run_stats import grouped_intervals, grouped_percentiles

HEADERS = (
    "scenario @ endpoint",
    "requests",
    "errors",
    "TTFT p50",
    "TTFT p95 [interval]",
    "TTFT p99",
    "E2E p50",
    "E2E p95 [interval]",
    "TPOT p50",
    "stream TPOT p50",
    "output tok/s",
    "cost $",
)
SUMMARY_ABS_MS = 1e-3  # the summary rounds to 3 decimals


@dataclass(frozen=True)
class Row:
    name: str
    requests: int
    errors: int
    ttft: tuple[float, float, float]  # p50, p95, p99 in ms; NaN without successful attempts
    e2e: tuple[float, float]  # p50, p95
    tpot_p50: float
    stream_tpot_p50: float
    output_tokens: float
    tokens_per_s: float | None
    cost_usd: float | None  # None when no attempt was priced
    errors_by_class: dict[str, int]
    ttft_p95_ci: list[float | None] | None = None  # the p95s' confidence intervals (docs/statistics.md)
    e2e_p95_ci: list[float | None] | None = None


def table_rows(rec: Records, duration_s: float | None, level: float = DEFAULT_LEVEL) -> list[Row]:
    """One row per scenario and endpoint (sorted), then the total named as the summary names it; the p95s with
    their confidence intervals at `level`."""
    ok = rec.ok
    total = np.zeros(len(rec), np.int32)
    return [
        *_rows(rec, ok, rec.group, rec.groups, duration_s, level),
        *_rows(rec, ok, total, (TOTAL_NAME,), duration_s, level),
    ]


def _rows(
    rec: Records, ok: np.ndarray, keys: np.ndarray, names: Sequence[str], duration_s: float | None, level: float
) -> list[Row]:
    n = len(names)
    ttft_ci = grouped_intervals(keys, np.where(ok, rec.ttft, np.nan), n, 95, level)
    e2e_ci = grouped_intervals(keys, np.where(ok, rec.e2e, np.nan), n, 95, level)

    def pct(values: np.ndarray, ps: tuple[float, ...]) -> np.ndarray:
        return grouped_percentiles(keys, np.where(ok, values, np.nan), n, ps)

    ttft, e2e = pct(rec.ttft, (50, 95, 99)), pct(rec.e2e, (50, 95))
    tpot, stream = pct(rec.tpot, (50,)), pct(rec.stream_tpot, (50,))
    requests, errors = np.bincount(keys, minlength=n), np.bincount(keys[rec.errors], minlength=n)
    tokens = np.bincount(keys, weights=np.nan_to_num(rec.output), minlength=n)
    priced = ~np.isnan(rec.cost)
    cost = np.bincount(keys[priced], weights=rec.cost[priced], minlength=n)
    any_priced = np.bincount(keys[priced], minlength=n) > 0
    classes = _by_class(rec, keys, n)
    return [
        Row(
            name=names[i],
            requests=int(requests[i]),
            errors=int(errors[i]),
            ttft=(ttft[i, 0], ttft[i, 1], ttft[i, 2]),
            e2e=(e2e[i, 0], e2e[i, 1]),
            tpot_p50=tpot[i, 0],
            stream_tpot_p50=stream[i, 0],
            output_tokens=float(tokens[i]),
            tokens_per_s=float(tokens[i]) / duration_s if duration_s else None,
            cost_usd=float(cost[i]) if any_priced[i] else None,
            errors_by_class=classes[i],
            ttft_p95_ci=ttft_ci[i],
            e2e_p95_ci=e2e_ci[i],
        )
        for i in range(n)
    ]


def _by_class(rec: Records, keys: np.ndarray, n: int) -> list[dict[str, int]]:
    """Attempts per error class for each key, most frequent first."""
    s = len(rec.statuses)
    counts = np.bincount(keys.astype(np.int64) * s + rec.status, minlength=n * s)[: n * s].reshape(n, s)
    out = []
    for i in range(n):
        found = {rec.statuses[j]: int(c) for j, c in enumerate(counts[i]) if c and rec.statuses[j] not in NOT_ERRORS}
        out.append(dict(sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))))
    return out


def ms_text(v: float | None) -> str:
    """Six significant digits at most and three decimals at most: exact enough to check against the summary's 0.1 %,
    short enough to read."""
    if v is None or math.isnan(v):
        return "-"
    if v == 0:
        return "0"
    decimals = min(3, max(0, 5 - math.floor(math.log10(abs(v)))))
    return f"{v:.{decimals}f}"


def usd_text(v: float | None) -> str:
    """Dollars to the cent above $100, to a millionth of a dollar below (a single request costs fractions of a cent)."""
    if v is None:
        return "-"
    return f"{v:.2f}" if abs(v) >= 100 else f"{v:.6f}"


def rows_table(rows: Sequence[Row]) -> str:
    """The HTML table, the total row last."""
    cells = [
        [
            r.name,
            r.requests,
            r.errors,
            ms_text(r.ttft[0]),
            _with_interval(r.ttft[1], r.ttft_p95_ci),
            *(ms_text(v) for v in (r.ttft[2], r.e2e[0])),
            _with_interval(r.e2e[1], r.e2e_p95_ci),
            *(ms_text(v) for v in (r.tpot_p50, r.stream_tpot_p50)),
            "-" if r.tokens_per_s is None else f"{r.tokens_per_s:.1f}",
            usd_text(r.cost_usd),
        ]
        for r in rows
    ]
    return table(HEADERS, cells, numeric=[False, *([True] * (len(HEADERS) - 1))])


def _with_interval(value: float, ci: list[float | None] | None) -> str:
    """`180.123 [172–191]`: the exact p95 and its interval as the console shows intervals."""
    text = ms_text(value)
    return f"{text} {interval_text(ci)}" if ci and text != "-" else text


def errors_table(rows: Sequence[Row]) -> str | None:
    """Attempts per error class and row; None when there were no errors."""
    classes = sorted({c for r in rows for c in r.errors_by_class})
    if not classes:
        return None
    cells = [[r.name, *(r.errors_by_class.get(c, 0) for c in classes)] for r in rows if r.errors]
    return table(["scenario @ endpoint", *classes], cells, numeric=[False, *([True] * len(classes))])


def disagreements(rows: Sequence[Row], summary: Mapping[str, Any]) -> list[str]:
    """Where the table differs from the summary beyond the histograms' precision (0.1 %): attempts or errors not
    counted in both (a worker's records file missing), or a percentile off."""
    theirs = {r.get("name"): r for r in [*(summary.get("rows") or []), summary.get("total") or {}] if r}
    out = []
    for row in rows:
        other = theirs.get(row.name)
        if other is None:
            out.append(f"{row.name}: not in the summary")
            continue
        out += _row_disagreements(row, other)
    return out


def _row_disagreements(row: Row, other: Mapping[str, Any]) -> list[str]:
    out = []
    for what, mine, key in (("requests", row.requests, "count"), ("errors", row.errors, "errors_total")):
        if other.get(key) != mine:
            out.append(f"{row.name}: {mine} {what} in the records, {other.get(key)} in the summary")
    lat = other.get("latency_ms") or {}
    ours = {("ttft", "p50"): row.ttft[0], ("ttft", "p95"): row.ttft[1], ("ttft", "p99"): row.ttft[2]}
    ours |= {("e2e", "p50"): row.e2e[0], ("e2e", "p95"): row.e2e[1]}
    for (metric, p), here in ours.items():
        given = (lat.get(metric) or {}).get(p)
        if not _close(here, given):
            out.append(f"{row.name}: {metric.upper()} {p} {ms_text(here)} ms here, {given} ms in the summary")
    for metric, ci in (("ttft", row.ttft_p95_ci), ("e2e", row.e2e_p95_ci)):
        given = (lat.get(metric) or {}).get("p95_ci")
        if given is not None and not _same_interval(ci, given):
            out.append(f"{row.name}: {metric.upper()} p95 interval {interval_text(ci)} here, {given} in the summary")
    return out


def _same_interval(mine: list[float | None] | None, given: list[float | None]) -> bool:
    """Both ends equal within the histograms' precision (an unbounded side unbounded in both)."""
    ends = mine or [None, None]
    return all(
        (a is None and b is None) or (a is not None and b is not None and _close(a, b))
        for a, b in zip(ends, given, strict=True)
    )


def _close(mine: float, given: float | None) -> bool:
    if given is None or math.isnan(mine):
        return given is None and math.isnan(mine)
    return abs(mine - given) <= RELATIVE_ERROR * abs(mine) + SUMMARY_ABS_MS
