"""Confidence intervals for paired measurements kept as integer sums: a ratio of two means (Fieller) and a mean
difference (Student's t), from n, Σx, Σy, Σx², Σy², Σxy (docs/metrics.md, "Structured-output amplification").

Why sums: workers count integer sums that the master adds, so the interval over all workers equals the interval over
all pairs pooled. The sample (co)variances are formed in exact integer arithmetic (n·Σx² − (Σx)²), so nearly equal
pairs do not cancel catastrophically.

Why Fieller for the ratio, not the delta method: the delta method's interval R ± t·se(R) is symmetric and assumes the
denominator's mean is far from 0 against its error; it under-covers when it is not. Fieller's interval is the set
of ratios ρ for which the mean of x − ρ·y is not significantly different from 0: exact when the pairs' means are
bivariate normal (the central limit theorem, for the tens of pairs a run gives), asymmetric where the ratio is, and
honest when the data cannot bound it. It is unbounded (None here) when the denominator's mean is not significantly
above 0 at the level (ȳ² ≤ t²·var(ȳ)); undefined (None) with fewer than 2 pairs. With every pair in the same
proportion (a jitter-free mock) it shrinks to the ratio itself.

Why pure Python: Student's t quantile is the only distribution function needed; scipy is not a dependency. Its CDF
for integer degrees of freedom has a closed form (a finite sum in cos θ), inverted by bisection; above 100 degrees a
Cornish-Fisher expansion in the normal quantile is exact to ~1e-8.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

_EXPANSION_FROM = 100  # degrees of freedom from which t_quantile uses the Cornish-Fisher expansion


def t_quantile(p: float, df: int) -> float:
    """The p-quantile (0.5 <= p < 1) of Student's t with `df` >= 1 degrees of freedom."""
    if df < 1 or not 0.5 <= p < 1.0:
        raise ValueError(f"need df >= 1 and 0.5 <= p < 1, got df={df!r}, p={p!r}")
    return _t_quantile(p, df)


@lru_cache(maxsize=256)
def _t_quantile(p: float, df: int) -> float:
    if df >= _EXPANSION_FROM:
        return _expansion(NormalDist().inv_cdf(p), df)
    target, lo, hi = 2.0 * p - 1.0, 0.0, 1.0
    while _central(hi, df) < target:
        hi *= 2.0
    for _ in range(100):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if _central(mid, df) < target else (lo, mid)
    return (lo + hi) / 2.0


def _central(t: float, df: int) -> float:
    """P(|T| < t) for T ~ Student's t with integer df (Abramowitz & Stegun 26.7.3 and 26.7.4)."""
    theta = math.atan(t / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for k in range(2, df, 2):
            term *= c2 * (k - 1) / k
            total += term
        return s * total
    if df == 1:
        return 2.0 * theta / math.pi
    term, total = 1.0, 1.0
    for k in range(3, df, 2):
        term *= c2 * (k - 1) / k
        total += term
    return 2.0 / math.pi * (theta + s * math.cos(theta) * total)


def _expansion(z: float, df: int) -> float:
    """Cornish-Fisher expansion of the t quantile in the normal quantile z (Abramowitz & Stegun 26.7.5)."""
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def _t(n: int, level: float) -> float:
    return t_quantile(1.0 - (1.0 - level) / 2.0, n - 1)


def ratio_interval(n: int, sx: int, sy: int, sxx: int, syy: int, sxy: int, level: float) -> tuple[float, float] | None:
    """Fieller's interval for mean(x) / mean(y) from n pairs' sums; None with fewer than 2 pairs or when the
    denominator's mean is not significantly above 0 (the interval would be unbounded)."""
    if n < 2 or sy <= 0:
        return None
    t2 = _t(n, level) ** 2
    scale = n * n * (n - 1)  # var(mean) = (n·Σx² − (Σx)²) / (n²(n−1))
    vxx, vyy, vxy = ((n * q - a * b) / scale for q, a, b in ((sxx, sx, sx), (syy, sy, sy), (sxy, sx, sy)))
    mx, my = sx / n, sy / n
    a = my * my - t2 * vyy
    if a <= 0:
        return None
    b = mx * my - t2 * vxy
    c = mx * mx - t2 * vxx
    root = math.sqrt(max(b * b - a * c, 0.0))
    return (b - root) / a, (b + root) / a


def mean_interval(n: int, s: int, ss: int, level: float) -> tuple[float, float] | None:
    """Student's t interval for the mean of n values from Σv and Σv²; None with fewer than 2 values."""
    if n < 2:
        return None
    half = _t(n, level) * math.sqrt(max(n * ss - s * s, 0) / (n * n * (n - 1)))
    return s / n - half, s / n + half
