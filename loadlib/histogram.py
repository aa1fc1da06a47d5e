"""Mergeable log-bucketed histogram for latencies (ms) and other non-negative values (tokens, tokens/s, $).

Why not Locust's buckets: they round to 2 significant digits (147 ms becomes 150 ms); docs/metrics.md, "Statistics and
the summary" asks for at least 3. Why not averaging per-worker percentiles: it is wrong. Each worker ships its buckets,
the master adds them, and merged percentiles are those of all samples, within the bucket precision.

Buckets (HdrHistogram-like, computed from the float's bits, so no logarithm is taken per value): the bucket index is
the IEEE-754 double's top bits, exponent plus the first 9 mantissa bits (`bits >> 43`). Each power of two is cut into
512 equal buckets, and a bucket reports its midpoint. Precision: every reported value is within a relative error of
1/1024 = 0.098 % of the true sample (better than 3 significant digits), from 2.2e-308 to 1.8e308, with no floor or
range to configure. 0.0 (and subnormals below 2.2e-308) share the zero bucket, reported as 0.0. Negative values (only
a bug or a misused clock produces them) are clamped to 0.0 and counted in `negative`, so they show up rather than
vanish. NaN and infinity raise ValueError.

count, min and max are exact, and percentiles are clamped into [min, max], so p0 and p100 are exact. sum is a float
sum: merging partial sums in another order can differ in the last bit. Memory is one entry per occupied bucket:
values spanning 1 ms to 100 s occupy at most ~8,700 buckets; one request's ITLs, a few hundred.
"""

from __future__ import annotations

import math
import struct
from array import array
from collections.abc import Iterable, Sequence
from itertools import pairwise, repeat
from operator import rshift
from typing import Any

try:
    from collections import _count_elements  # type: ignore[attr-defined]  # the C loop behind Counter.update
except ImportError:  # pragma: no cover - only on Pythons without the C helper

    def _count_elements(mapping: dict[int, int], iterable: Iterable[int]) -> None:
        get = mapping.get
        for i in iterable:
            mapping[i] = get(i, 0) + 1


SUB_BUCKET_BITS = 9
RELATIVE_ERROR = 1.0 / (1 << (SUB_BUCKET_BITS + 1))
_SHIFT = 52 - SUB_BUCKET_BITS
_SUB = 1 << SUB_BUCKET_BITS
_NON_FINITE = 2047 << SUB_BUCKET_BITS  # exponent field all ones: infinity or NaN
_MINUS_ZERO = -(1 << (63 - _SHIFT))  # index of -0.0 (sign bit only), folded into the zero bucket
_PACK = struct.Struct("<d").pack
_BITS = struct.Struct("<q").unpack
_FORMAT = 1


class Histogram:
    """Counts of values in log buckets plus exact count, sum, min and max. Not thread-safe (greenlets are fine)."""

    __slots__ = ("_buckets", "count", "max", "min", "negative", "sum")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self._buckets: dict[int, int] = {}
        self.negative = 0
        self.count = 0
        self.sum = 0.0
        self.min = math.inf
        self.max = -math.inf

    def record(self, v: float) -> None:
        """Add one value."""
        if v <= 0.0:
            if v < 0.0:
                if v == -math.inf:
                    raise ValueError(f"histogram values must be finite, got {v!r}")
                self.negative += 1
            v = 0.0
        i = _BITS(_PACK(v))[0] >> _SHIFT
        if not 0 <= i < _NON_FINITE:
            raise ValueError(f"histogram values must be finite, got {v!r}")
        b = self._buckets
        b[i] = b.get(i, 0) + 1
        self.count += 1
        self.sum += v
        if v < self.min:
            self.min = v
        if v > self.max:
            self.max = v

    def record_many(self, values: Iterable[float]) -> None:
        """Add many values: the per-token path (every inter-token gap goes through here), done in C builtins."""
        record_many_into((self,), values)

    def merge(self, other: Histogram) -> None:
        """Add another histogram's samples to this one (e.g. a worker's report on the master)."""
        b = self._buckets
        get = b.get
        for i, n in other._buckets.items():
            b[i] = get(i, 0) + n
        self.negative += other.negative
        self.count += other.count
        self.sum += other.sum
        if other.min < self.min:
            self.min = other.min
        if other.max > self.max:
            self.max = other.max

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count else None

    def percentile(self, p: float) -> float | None:
        """Nearest-rank percentile (p in 0..100) of the bucketed samples; None when empty."""
        return self.percentiles((p,))[0]

    def percentiles(self, ps: Sequence[float]) -> list[float | None]:
        """Several nearest-rank percentiles with one sort of the buckets; None for each when empty."""
        for p in ps:
            if not 0.0 <= p <= 100.0:
                raise ValueError(f"percentile must be in 0..100, got {p!r}")
        out: list[float | None] = [None] * len(ps)
        if not self.count:
            return out
        ranks = [_rank(p, self.count) for p in ps]
        b = self._buckets
        keys = sorted(b)
        seen = 0
        k = 0
        for j in sorted(range(len(ps)), key=ranks.__getitem__):
            rank = ranks[j]
            if rank <= 1:
                out[j] = self.min
            elif rank >= self.count:
                out[j] = self.max
            else:
                while seen < rank:
                    seen += b[keys[k]]
                    k += 1
                out[j] = min(max(_bucket_value(keys[k - 1]), self.min), self.max)
        return out

    def ranked(self, ranks: Sequence[int]) -> list[float]:
        """The rank-th smallest sample (1-based) for each rank, placed within its bucket as if the bucket's samples
        were evenly spread (the j-th of c at (j - 0.5) / c of its width), clamped into [min, max]: within the
        bucket, so within 2 x RELATIVE_ERROR of the sample, and finer than the midpoint where many samples share a
        bucket (the ends of a percentile's confidence interval, loadlib.metrics.confidence)."""
        for rank in ranks:
            if not 1 <= rank <= self.count:
                raise ValueError(f"rank must be in 1..{self.count}, got {rank!r}")
        out = [self.min] * len(ranks)
        b = self._buckets
        keys = sorted(b)
        seen = 0
        k = 0
        for j in sorted(range(len(ranks)), key=ranks.__getitem__):
            while seen < ranks[j]:
                seen += b[keys[k]]
                k += 1
            n = b[keys[k - 1]]
            low, high = _bucket_edges(keys[k - 1])
            value = low + (high - low) * (ranks[j] - (seen - n) - 0.5) / n
            out[j] = min(max(value, self.min), self.max)
        return out

    def occupied(self) -> list[tuple[float, int]]:
        """(bucket midpoint, count) of every occupied bucket, in ascending order: the distribution's shape."""
        return [(_bucket_value(i), n) for i, n in sorted(self._buckets.items()) if n]

    def to_dict(self) -> dict[str, Any]:
        """msgpack/JSON-safe state: str keys; occupied bucket indexes as sorted deltas next to their counts."""
        b = self._buckets
        keys = sorted(k for k, n in b.items() if n)
        deltas = [keys[0]] + [y - x for x, y in pairwise(keys)] if keys else []
        return {
            "v": _FORMAT,
            "count": self.count,
            "sum": self.sum,
            "min": self.min if self.count else None,
            "max": self.max if self.count else None,
            "negative": self.negative,
            "idx": deltas,
            "n": [b[i] for i in keys],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Histogram:
        if d.get("v") != _FORMAT:
            raise ValueError(f"unsupported histogram format {d.get('v')!r} (expected {_FORMAT})")
        h = cls()
        b = h._buckets
        idx = 0
        for delta, n in zip(d["idx"], d["n"], strict=True):
            idx += delta
            b[idx] = n
        h.negative = d["negative"]
        h.count = d["count"]
        h.sum = float(d["sum"])
        if h.count:
            h.min = float(d["min"])
            h.max = float(d["max"])
        return h

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Histogram) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Histogram(count={self.count}, min={self.min}, max={self.max}, buckets={len(self._buckets)})"


def record_many_into(histograms: Sequence[Histogram], values: Iterable[float]) -> None:
    """Add the same values to several histograms, computing bucket indexes once.

    The stats feed a per-key and the total histogram from each request's inter-token gaps. The per-value work runs in
    C: min/max/sum, the float-to-bits reinterpretation through `array`, the shift and Counter.update's counting loop.
    """
    vals = values if isinstance(values, list | tuple) else list(values)
    if not vals or not histograms:
        return
    total = sum(vals)
    if not math.isfinite(total):
        bad = next((v for v in vals if not math.isfinite(v)), total)
        raise ValueError(f"histogram values must be finite, got {bad!r}")
    lo = min(vals) + 0.0  # + 0.0 turns -0.0 into 0.0
    negative = 0
    if lo < 0.0:
        negative = sum(1 for v in vals if v < 0.0)
        vals = [v if v >= 0.0 else 0.0 for v in vals]
        lo = min(vals) + 0.0
        total = sum(vals)
    hi = max(vals) + 0.0
    idx: Iterable[int] = map(rshift, array("q", array("d", vals).tobytes()), repeat(_SHIFT))
    if len(histograms) > 1:
        idx = list(idx)
    n = len(vals)
    for h in histograms:
        b = h._buckets
        _count_elements(b, idx)
        if lo == 0.0 and _MINUS_ZERO in b:
            b[0] = b.get(0, 0) + b.pop(_MINUS_ZERO)
        h.negative += negative
        h.count += n
        h.sum += total
        if lo < h.min:
            h.min = lo
        if hi > h.max:
            h.max = hi


def _rank(p: float, count: int) -> int:
    """1-based nearest rank ceil(p/100 * N), rounded first so that 99.9 % of 1000 is 999, not 1000 by float noise."""
    return max(1, math.ceil(round(p * count / 100.0, 9)))


def _bucket_value(i: int) -> float:
    """Midpoint of bucket i; the zero bucket (exponent field 0: zero and subnormals) reports 0.0."""
    exponent = i >> SUB_BUCKET_BITS
    if exponent <= 0:
        return 0.0
    return math.ldexp(1.0 + ((i & (_SUB - 1)) + 0.5) / _SUB, exponent - 1023)


def _bucket_edges(i: int) -> tuple[float, float]:
    """[low, high) of bucket i; the zero bucket (zero and subnormals) is [0, 0]: its samples are reported as 0.0."""
    exponent = i >> SUB_BUCKET_BITS
    if exponent <= 0:
        return 0.0, 0.0
    sub = i & (_SUB - 1)
    return math.ldexp(1.0 + sub / _SUB, exponent - 1023), math.ldexp(1.0 + (sub + 1) / _SUB, exponent - 1023)
