"""The run report's time series (pure): every series on one grid of round bins (1 s or coarser, at most ~600 of
them) counted from the first record's start.

What goes in which bin: TTFT percentiles and errors by the attempt's start; output tokens and cost by its end
(start + E2E, the start when E2E is null), the moment they were delivered and billed. Requests in flight are the
exact time average of the attempts open in each bin, from start and E2E: records carry no user count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loadlib.reports.records_in import Records
from loadlib.reports.run_stats import (
    bin_count,
    bin_index,
    grouped_percentiles,
    mean_in_flight,
    peak_in_flight,
    per_bin_sum,
    time_step,
)


@dataclass(frozen=True)
class Series:
    t0_ns: int
    step_s: float
    x: np.ndarray  # each bin's start, s from t0
    ttft: np.ndarray  # (groups, bins, 2): p50 and p95 of successful attempts started in the bin, NaN when none
    tokens_per_s: np.ndarray  # (groups, bins)
    in_flight: np.ndarray  # (bins,)
    peak_in_flight: int
    errors_per_s: np.ndarray  # (statuses, bins): attempts per second of each status, ok included
    cost_cumulative: np.ndarray  # (groups, bins) USD, NaN costs counted as 0

    @property
    def bins(self) -> int:
        return len(self.x)


def relative_times(rec: Records) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """t0 (first known start, ns), and of the records with a known start: their mask, starts and ends in s."""
    known = rec.start_ns > 0
    t0 = int(rec.start_ns[known].min()) if known.any() else 0
    start = (rec.start_ns[known] - t0) / 1e9
    end = start + np.nan_to_num(rec.e2e[known]) / 1000.0
    return t0, known, start, end


def build_series(rec: Records, max_points: int = 600) -> Series:
    """Every time series of the report, from the records with a known start."""
    t0, known, start, end = relative_times(rec)
    span = float(end.max()) if len(end) else 0.0
    step = time_step(span, max_points)
    n = bin_count(span, step)
    b_start, b_end = bin_index(start, step, n), bin_index(end, step, n)
    groups, ngroups = rec.group[known], len(rec.groups)
    ttft = np.where(rec.ok[known], rec.ttft[known], np.nan)
    edges = np.arange(n + 1) * step
    return Series(
        t0_ns=t0,
        step_s=step,
        x=edges[:-1],
        ttft=grouped_percentiles(groups * n + b_start, ttft, ngroups * n, (50, 95)).reshape(ngroups, n, 2),
        tokens_per_s=per_bin_sum(groups, b_end, rec.output[known], ngroups, n) / step,
        in_flight=mean_in_flight(start, end, edges),
        peak_in_flight=peak_in_flight(start, end),
        errors_per_s=per_bin_sum(rec.status[known], b_start, np.ones(len(start)), len(rec.statuses), n) / step,
        cost_cumulative=np.cumsum(per_bin_sum(groups, b_end, rec.cost[known], ngroups, n), axis=1),
    )
