"""Distribution-free confidence intervals for percentiles, from the merged histogram (docs/statistics.md).

Why: a p95 from 300 requests and one from 30,000 look alike on the console; the interval says how far the true p95
(that of the service under this load, of which the run is a sample) may be from the one measured. The method assumes
only independent samples from one continuous distribution (no normality): the number of samples at or below the
true q-quantile is Binomial(n, q), so the interval between the l-th and u-th smallest samples contains the quantile
with probability exactly F(u-1) - F(l-1), F the Binomial(n, q) CDF. The ranks follow from n, q and the level alone,
so a histogram merged from any number of workers gives the same interval as all the samples pooled.

Ranks: among the pairs whose coverage is at least the level, the narrowest (fewest ranks apart, then the least
coverage), searched around the equal-tailed pair. A side is unbounded (rank 0 or n+1, value None) when even the
most extreme sample cannot bound it at the level: a p99 from 100 requests has no upper bound at 95 %.

Values: the l-th and u-th smallest samples are read from the histogram (Histogram.ranked) within their bucket, as if
its samples were evenly spread there, so each end is within one bucket (0.2 %) of the exact-rank sample; the
interval is then widened, if need be, to hold the reported percentile (a bucket midpoint). Why not the bucket's
edges or midpoint: once an interval is only a few buckets wide (a light tail at 10,000 requests: 0.5 % wide) the
outer edges inflate its coverage to nearly 100 % and midpoints deflate it to about 92 % (bench/confidence_coverage.py);
placed within the bucket, the coverage stays at the level. An interval a bucket or two wide says only that the
percentile is known to the histogram's precision.

Why pure Python: the binomial CDF is summed exactly from the mode outwards (terms below 1e-17 of the peak dropped,
about 9 standard deviations out): scipy is not a dependency and would be one of ~40 MB for one function; numpy has no
binomial CDF. A table costs O(sqrt(n)) and is cached per (n, q).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from statistics import NormalDist
from typing import Literal

from loadlib.histogram import Histogram

DEFAULT_LEVEL = 0.95
_SEARCH = 64  # lower ranks tried on each side of the equal-tailed one
_TINY = 1e-17
_EXACT_UP_TO = 2_000_000  # requests_needed refines the normal estimate with exact ranks up to this many requests

Side = Literal["below", "above", "undecided"]


@dataclass(frozen=True)
class QuantileInterval:
    """A percentile's confidence interval: low/high are None where the data cannot bound that side."""

    low: float | None
    high: float | None
    low_rank: int  # 1-based rank of the sample giving `low`; 0 when unbounded below
    high_rank: int  # 1-based rank of the sample giving `high`; n + 1 when unbounded above
    coverage: float  # exact probability that the rank interval contains the true quantile (>= the level)

    def as_list(self) -> list[float | None]:
        """The JSON form, `[low, high]`, to 3 decimals like the summary's percentiles."""
        return [None if self.low is None else round(self.low, 3), None if self.high is None else round(self.high, 3)]


def binomial_cdf(k: int, n: int, q: float) -> float:
    """P(B <= k) for B ~ Binomial(n, q), 0 < q < 1, exact up to terms below 1e-17 of the peak."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    start, table = _cdf_table(n, q)
    if k < start:
        return 0.0
    return table[k - start] if k - start < len(table) else 1.0


def rank_interval(n: int, q: float, level: float = DEFAULT_LEVEL) -> tuple[int, int, float]:
    """(l, u, coverage): the 1-based ranks whose samples bound the q-quantile (0 < q < 1) of n samples at `level`.

    l == 0 means unbounded below, u == n + 1 unbounded above; coverage = F(u-1) - F(l-1) >= level. Of such pairs,
    the one with the fewest unbounded sides, then the fewest ranks apart, then the least coverage."""
    if n < 1 or not 0.0 < q < 1.0 or not 0.0 < level < 1.0:
        raise ValueError(f"need n >= 1, 0 < q < 1 and 0 < level < 1, got n={n!r}, q={q!r}, level={level!r}")
    return _rank_interval(n, q, level)


@lru_cache(maxsize=1024)
def _rank_interval(n: int, q: float, level: float) -> tuple[int, int, float]:
    alpha = 1.0 - level

    def f(rank: int) -> float:
        return binomial_cdf(rank - 1, n, q)

    l_eq = _last_rank_at_most(f, n, alpha / 2)
    best: tuple[tuple[int, int, float], int, int, float] | None = None
    for low in range(max(0, l_eq - _SEARCH), min(n, l_eq + _SEARCH) + 1):
        below = f(low)
        if below > alpha + 1e-15:
            break
        high = _first_rank_at_least(f, low + 1, n + 1, below + level - 1e-15)
        coverage = f(high) - below
        key = ((low == 0) + (high == n + 1), high - low, coverage)
        if best is None or key < best[0]:
            best = (key, low, high, coverage)
    assert best is not None  # low = 0 always qualifies
    return best[1], best[2], min(1.0, best[3])


def _last_rank_at_most(f: Callable[[int], float], n: int, target: float) -> int:
    """The largest rank r in 0..n with F(r-1) <= target (f(r) is F(r-1), non-decreasing in r)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if f(mid) <= target:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _first_rank_at_least(f: Callable[[int], float], lo: int, hi: int, target: float) -> int:
    """The smallest rank r in lo..hi with F(r-1) >= target; hi when none below it."""
    while lo < hi:
        mid = (lo + hi) // 2
        if f(mid) >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


# One interval's search reads one table many times; tables of an n already searched are never read again (the
# interval is cached): keeping a few bounds what a long run holds (a p50 of 10 million samples: ~28,000 doubles)
@lru_cache(maxsize=4)
def _cdf_table(n: int, q: float) -> tuple[int, array[float]]:
    """(start, [F(start), F(start+1), ...]): the CDF over the ranks holding all but ~1e-17 of the mass."""
    mode = min(n, math.floor((n + 1) * q))
    peak = math.exp(
        math.lgamma(n + 1)
        - math.lgamma(mode + 1)
        - math.lgamma(n - mode + 1)
        + mode * math.log(q)
        + (n - mode) * math.log1p(-q)
    )
    odds = q / (1.0 - q)
    right, term, k = [], peak, mode
    while k < n and term > _TINY * peak:
        term *= (n - k) / (k + 1) * odds
        k += 1
        right.append(term)
    left, term, k = [], peak, mode
    while k > 0 and term > _TINY * peak:
        term *= k / (n - k + 1) / odds
        k -= 1
        left.append(term)
    pmf = [*reversed(left), peak, *right]
    total = math.fsum(pmf)
    return mode - len(left), array("d", (c / total for c in accumulate(pmf)))


def quantile_interval(h: Histogram, p: float, level: float = DEFAULT_LEVEL) -> QuantileInterval | None:
    """The confidence interval of the nearest-rank p-th percentile (0 < p < 100) of the histogram's samples at
    `level`; None when the histogram is empty."""
    return quantile_intervals(h, (p,), level)[0]


def quantile_intervals(
    h: Histogram, ps: Sequence[float], level: float = DEFAULT_LEVEL
) -> list[QuantileInterval | None]:
    """quantile_interval for several percentiles with two walks of the buckets (the summary asks for p50, p95 and
    p99 of every latency each time the web UI polls)."""
    for p in ps:
        if not 0.0 < p < 100.0:
            raise ValueError(f"percentile must be strictly between 0 and 100, got {p!r}")
    n = h.count
    if not n:
        return [None] * len(ps)
    found = [rank_interval(n, p / 100.0, level) for p in ps]
    ranks = sorted({r for low, high, _ in found for r in (low, high) if 1 <= r <= n})
    values = dict(zip(ranks, h.ranked(ranks), strict=True))
    out: list[QuantileInterval | None] = []
    for (low, high, coverage), point in zip(found, h.percentiles(ps), strict=True):
        low_value, high_value = values.get(low), values.get(high)
        if point is not None:  # the reported percentile (a bucket midpoint) stays inside its interval
            low_value = None if low_value is None else min(low_value, point)
            high_value = None if high_value is None else max(high_value, point)
        out.append(QuantileInterval(low_value, high_value, low, high, coverage))
    return out


def side_of(interval: QuantileInterval | list[float | None] | None, limit: float) -> Side:
    """Where the whole interval lies against a limit: "below" (high < limit), "above" (low > limit) or "undecided"
    (the limit is inside, or a side that would decide is unbounded)."""
    if interval is None:
        return "undecided"
    low, high = (interval.low, interval.high) if isinstance(interval, QuantileInterval) else interval
    if high is not None and high < limit:
        return "below"
    if low is not None and low > limit:
        return "above"
    return "undecided"


def requests_needed(n: int, below: int, q: float, level: float = DEFAULT_LEVEL) -> int | None:
    """About how many requests in all would decide whether the q-quantile is under a limit, given that `below` of
    the n samples so far are under it, if that share holds as the run goes on; None when it never would (the share
    is exactly q: the quantile sits on the limit). Normal approximation n = z^2 q(1-q) / (share - q)^2, refined with
    the exact ranks up to 2 million requests."""
    if n < 1 or not 0 <= below <= n:
        raise ValueError(f"need n >= 1 and 0 <= below <= n, got n={n!r}, below={below!r}")
    share = below / n
    if share == q:
        return None
    z = NormalDist().inv_cdf(1.0 - (1.0 - level) / 2.0)
    total = max(n, math.ceil(z * z * q * (1.0 - q) / (share - q) ** 2))
    for _ in range(200):
        if total > _EXACT_UP_TO or _decided(total, share, q, level):
            return total
        total = max(total + 1, math.ceil(total * 1.05))
    return total


def _decided(total: int, share: float, q: float, level: float) -> bool:
    """Would `total` requests with this share under the limit put the whole interval on one side of it?"""
    low, high, _ = rank_interval(total, q, level)
    under = share * total
    return (high <= total and high <= under) or (low >= 1 and low > under)


def requests_needed_from_interval(
    n: int, value: float | None, interval: Sequence[float | None], limit: float
) -> int | None:
    """More requests to decide "the percentile against `limit`" from a summary alone (no histogram): the side of the
    interval facing the limit shrinks as 1/sqrt(n), so about n * (that side's width / distance to the limit)^2 in
    all. None when it cannot be told (no value, an unbounded side, the value on the limit)."""
    low, high = interval
    if value is None or n < 1 or value == limit:
        return None
    edge = high if limit > value else low
    if edge is None:
        return None
    side = abs(edge - value)
    total = math.ceil(n * (side / abs(limit - value)) ** 2)
    return max(1, total - n)


def more_requests_needed(h: Histogram, p: float, limit: float, level: float = DEFAULT_LEVEL) -> int | None:
    """How many more requests (beyond h.count) would decide "percentile p < limit" at `level`, estimated from the
    share of samples under the limit so far (bucket midpoints); 0 when already decided, None when never."""
    if not h.count:
        return None
    below = sum(n for value, n in h.occupied() if value < limit)
    total = requests_needed(h.count, below, p / 100.0, level)
    if total is None:
        return None
    return 0 if side_of(quantile_interval(h, p, level), limit) != "undecided" else max(1, total - h.count)
