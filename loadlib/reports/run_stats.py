"""The run report's maths on record columns (pure numpy): exact percentiles per group, CDF points, time bins,
requests in flight, subsampling.

Percentiles are nearest-rank (numpy's method="inverted_cdf"), with the rank rounded as loadlib's histograms round it
(loadlib.histogram._rank), so an exact percentile here and a summary's bucketed one name the same sample.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from loadlib.metrics.confidence import rank_interval

NICE_STEPS_S = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400)


def nearest_rank(p: float, counts: np.ndarray) -> np.ndarray:
    """1-based rank ceil(p/100 * n), at least 1, per count (rounded first so float noise cannot add one)."""
    return np.maximum(1, np.ceil(np.round(p * counts / 100.0, 9))).astype(np.int64)


def grouped_sort(keys: np.ndarray, values: np.ndarray, nkeys: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Values without NaN sorted by (key, value), with each key's offset and count into them."""
    keep = ~np.isnan(values)
    k, v = keys[keep], values[keep]
    ordered = v[np.lexsort((v, k))]
    counts = np.bincount(k, minlength=nkeys)[:nkeys]
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    return ordered, offsets, counts


def grouped_percentiles(keys: np.ndarray, values: np.ndarray, nkeys: int, ps: Sequence[float]) -> np.ndarray:
    """Exact nearest-rank percentiles of `values` (NaN skipped) per key 0..nkeys-1: shape (nkeys, len(ps)), NaN
    for a key without values."""
    ordered, offsets, counts = grouped_sort(keys, values, nkeys)
    out = np.full((nkeys, len(ps)), np.nan)
    has = counts > 0
    for j, p in enumerate(ps):
        out[has, j] = ordered[offsets[has] + nearest_rank(p, counts[has]) - 1]
    return out


def grouped_intervals(
    keys: np.ndarray, values: np.ndarray, nkeys: int, p: float, level: float
) -> list[list[float | None] | None]:
    """The p-th percentile's confidence interval per key from the exact order statistics (the ranks of
    loadlib.metrics.confidence, which the summary reads from its histograms instead): [low, high] with None for a
    side the samples cannot bound, None for a key without values."""
    ordered, offsets, counts = grouped_sort(keys, values, nkeys)
    out: list[list[float | None] | None] = []
    for offset, n in zip(offsets.tolist(), counts.tolist(), strict=True):
        if not n:
            out.append(None)
            continue
        low, high, _ = rank_interval(n, p / 100.0, level)
        out.append([float(ordered[offset + r - 1]) if 1 <= r <= n else None for r in (low, high)])
    return out


def cdf_points(ordered: np.ndarray, max_points: int = 800) -> tuple[np.ndarray, np.ndarray]:
    """(value, share of samples at or below it) for an ascending array, thinned to at most max_points steps."""
    n = len(ordered)
    if n <= max_points:
        return ordered, np.arange(1, n + 1) / max(n, 1)
    ranks = np.unique(np.ceil(np.linspace(1, n, max_points)).astype(np.int64))
    return ordered[ranks - 1], ranks / n


def time_step(span_s: float, max_points: int = 600) -> float:
    """The bin width: the first round step of at least 1 s that cuts `span_s` into at most max_points bins."""
    for step in NICE_STEPS_S:
        if span_s / step <= max_points:
            return float(step)
    return float(math.ceil(span_s / max_points))


def bin_count(span_s: float, step: float) -> int:
    return max(1, math.ceil(span_s / step))


def bin_index(t_s: np.ndarray, step: float, nbins: int) -> np.ndarray:
    """Bin of each time (s from the first start); the end of the last bin belongs to it."""
    return np.clip(np.floor(t_s / step), 0, nbins - 1).astype(np.int64)


def per_bin_sum(keys: np.ndarray, bins: np.ndarray, weights: np.ndarray, nkeys: int, nbins: int) -> np.ndarray:
    """Sum of weights (NaN as 0) per (key, bin): shape (nkeys, nbins)."""
    flat = np.bincount(keys * nbins + bins, weights=np.nan_to_num(weights), minlength=nkeys * nbins)
    return flat[: nkeys * nbins].reshape(nkeys, nbins)


def mean_in_flight(starts_s: np.ndarray, ends_s: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Time-averaged count of intervals [start, end) open within each bin between consecutive edges (exact)."""
    area = _area_below(np.sort(starts_s), edges) - _area_below(np.sort(ends_s), edges)
    return np.diff(area) / np.diff(edges)


def _area_below(ordered: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The integral up to each x of #{t <= u}: the sum of (x - t) over t < x."""
    k = np.searchsorted(ordered, x, side="right")
    csum = np.concatenate(([0.0], np.cumsum(ordered)))
    return k * x - csum[k]


def peak_in_flight(starts_s: np.ndarray, ends_s: np.ndarray) -> int:
    """The most intervals open at once (an attempt ending as another starts is not counted twice)."""
    if not len(starts_s):
        return 0
    s, e = np.sort(starts_s), np.sort(ends_s)
    opened = np.searchsorted(s, s, side="right")
    closed = np.searchsorted(e, s, side="right")
    return int(np.max(opened - closed))


def subsample(n: int, limit: int, seed: int) -> np.ndarray:
    """Indices of at most `limit` of n items, drawn without replacement with a fixed seed, in ascending order."""
    if n <= limit:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size=limit, replace=False))
