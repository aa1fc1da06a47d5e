"""The run report's maths (loadlib.reports.run_stats, run_series): exact nearest-rank percentiles equal numpy's
inverted_cdf and the summary histograms' rank, time bins stay under ~600, requests in flight are exact time averages,
and the series of a known run hold its known values."""

from __future__ import annotations

import numpy as np
import pytest

from loadlib.histogram import Histogram
from loadlib.reports.records_in import read_records
from loadlib.reports.run_series import build_series
from loadlib.reports.run_stats import (
    cdf_points,
    grouped_percentiles,
    mean_in_flight,
    nearest_rank,
    peak_in_flight,
    per_bin_sum,
    subsample,
    time_step,
)
from tests.unit.reports.test_report import known_run, write_jsonl

PS = (0, 1, 10, 25, 50, 90, 95, 99, 99.9, 100)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 20, 99, 100, 1000, 1001, 4097])
def test_grouped_percentiles_are_numpys_inverted_cdf(n):
    rng = np.random.default_rng(n)
    values = rng.lognormal(4, 1, n)
    keys = rng.integers(0, 3, n)
    got = grouped_percentiles(keys, values, 4, PS)
    for k in range(3):
        mine = values[keys == k]
        if len(mine):
            assert got[k].tolist() == np.percentile(mine, PS, method="inverted_cdf").tolist()
        else:
            assert np.isnan(got[k]).all()
    assert np.isnan(got[3]).all()  # a key without values


def test_percentile_ranks_are_the_summary_histograms_ranks():
    """The same sample, so the histogram's value is within its 1/1024 of ours."""
    rng = np.random.default_rng(5)
    values = rng.lognormal(3, 1.2, 2000)
    h = Histogram()
    h.record_many(values.tolist())
    ours = grouped_percentiles(np.zeros(2000, np.int64), values, 1, PS)[0]
    for mine, theirs in zip(ours, h.percentiles(PS), strict=True):
        assert abs(mine - theirs) <= mine / 1024
    assert nearest_rank(99.9, np.array([1000]))[0] == 999  # not 1000 by float noise
    assert nearest_rank(95, np.array([20]))[0] == 19


def test_nan_values_are_left_out():
    values = np.array([np.nan, 3.0, 1.0, np.nan, 2.0])
    assert grouped_percentiles(np.zeros(5, np.int64), values, 1, (50, 100)).tolist() == [[2.0, 3.0]]


def test_cdf_points_are_exact_small_and_thinned_large():
    x, y = cdf_points(np.array([1.0, 2.0, 4.0]))
    assert x.tolist() == [1.0, 2.0, 4.0] and y.tolist() == pytest.approx([1 / 3, 2 / 3, 1.0])
    ordered = np.arange(1, 100_001, dtype=float)
    x, y = cdf_points(ordered, max_points=800)
    assert len(x) <= 800 and x[0] == 1.0 and x[-1] == 100_000.0 and y[-1] == 1.0
    assert np.all(np.diff(x) > 0) and np.allclose(y, x / 100_000)


@pytest.mark.parametrize(
    ("span", "step"),
    [(0, 1), (3.2, 1), (600, 1), (601, 2), (3600, 10), (86_400, 300), (10**7, 28_800), (10**9, 1_666_667)],
)
def test_time_bins_are_round_and_at_most_600(span, step):
    assert time_step(span) == step
    assert span / time_step(span) <= 600


def test_requests_in_flight_is_the_exact_time_average():
    starts, ends = np.array([0.0, 0.5, 1.5]), np.array([1.0, 2.5, 1.75])
    edges = np.array([0.0, 1.0, 2.0, 3.0])
    # [0,1): 1 s of the first + 0.5 s of the second; [1,2): 1 s + 0.25 s; [2,3): 0.5 s
    assert mean_in_flight(starts, ends, edges).tolist() == [1.5, 1.25, 0.5]
    assert peak_in_flight(starts, ends) == 2
    assert peak_in_flight(np.array([0.0, 1.0]), np.array([1.0, 2.0])) == 1  # one ends as the next starts


def test_per_bin_sum_and_subsample():
    sums = per_bin_sum(np.array([0, 1, 1, 0]), np.array([0, 0, 2, 0]), np.array([1.0, 2.0, np.nan, 4.0]), 2, 3)
    assert sums.tolist() == [[5.0, 0.0, 0.0], [2.0, 0.0, 0.0]]
    picked = subsample(1000, 100, seed=3)
    assert len(picked) == len(set(picked.tolist())) == 100 and np.all(np.diff(picked) > 0)
    assert picked.tolist() == subsample(1000, 100, seed=3).tolist()
    assert subsample(50, 100, seed=3).tolist() == list(range(50))


def test_series_of_the_known_run(tmp_path):
    """16 attempts started every 0.5 s from 0 s; the last ends at 7.5 s + 4.5 s."""
    series = build_series(read_records([write_jsonl(tmp_path / "r.jsonl", known_run())]))
    assert series.step_s == 1.0 and series.bins == 12 and series.x[0] == 0.0
    chat = 0
    assert series.ttft[chat, 0].tolist() == [10.0, 20.0]  # p50 and p95 of TTFT 10 and 20 ms, started in [0, 1)
    assert np.isnan(series.ttft[chat, 5]).all()  # the two failures started in [5, 6)
    assert series.tokens_per_s.sum() == 10 * 10 + 7 + 4 * 10  # every attempt's output tokens
    assert series.cost_cumulative[:, -1].sum() == pytest.approx(0.0145)
    assert series.errors_per_s.sum() == 16  # one row per status: ok included
    assert series.peak_in_flight >= 1 and series.in_flight.max() <= series.peak_in_flight
