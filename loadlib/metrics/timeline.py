"""The run over time for the web UI's LLM charts: statistics cut into wall-clock-aligned time buckets, kept for the
whole run.

A bucket [t, t + step), t = floor(time / step) * step, holds a `Slice` (loadlib.metrics.slices) per series. On a local
run each record lands in the bucket it ends in. On a master each worker cuts its own records the same way and ships
the slices of its buckets with its reports (every 3 s); the master merges them by bucket time, so a bucket holds what
ended within it, whenever the reports arrive. A bucket is complete when every live worker has reported past its end
(each report says up to when it covers) or GRACE_S after its end, whichever comes first: a lost or stalled worker
holds the chart back by GRACE_S at most. A complete bucket closes into one point per series: numbers only, so memory
is at most MAX_POINTS points per series; the open ones are shown with their counts so far but no rate or percentiles
(a slice that comes after its bucket closed adds to that point). When a series is full the step doubles and
neighbouring points merge: counts add exactly; a merged point's percentiles are the count-weighted mean of its halves
(stated in docs/webui.md; the summary keeps the exact run-wide figures). A local run's open bucket is a live last
point, complete up to now: its tokens/s is over its age, shown once it is half a step old (over a few milliseconds
it reads 0, or one request's tokens as a spike, and the legend shows the last value). The bucket the run started in
is rated over its part after the start (`Point.span`), so a steady run's first point does not read low.
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from loadlib.metrics.slices import STEP_S, Slice, bucket_start
from loadlib.metrics.summary import TOTAL_NAME, row_name
from loadlib.records.record import RequestRecord

MAX_POINTS = 1800  # per series: one hour at 2 s before the first coarsening
LIVE_RATE_AGE = 0.5  # of a step: the open bucket's tokens/s is shown once it is this old, null before
GRACE_S = 10.0  # after a bucket's end: how long a master waits for a worker's report covering it
_PERCENTILES = ("ttft_p50", "ttft_p95", "tpot_p50")

__all__ = ["GRACE_S", "MAX_POINTS", "STEP_S", "Point", "Timeline", "coarsen", "merge_points"]


@dataclass(frozen=True, slots=True)
class Point:
    """One series' figures over one bucket [t, t + step); not `complete` while a master waits for reports on it."""

    t: float
    step: float
    requests: int
    ok: int
    completion_tokens: int
    errors: dict[str, int] = field(default_factory=dict)
    ttft_p50: float | None = None
    ttft_p95: float | None = None
    tpot_p50: float | None = None
    users: int | None = None
    complete: bool = True
    span: float | None = None  # seconds of [t, t + step) within the run when fewer than `step` (its first bucket)

    @property
    def seconds(self) -> float:
        """What a rate divides by: the part of the bucket the run covered."""
        return self.step if self.span is None else self.span


def merge_points(a: Point, b: Point, t: float, step: float, same: bool = False) -> Point:
    """Two points as one: counts add; percentiles are weighted by the successful attempts behind them. Neighbours
    (coarsening) add their seconds; two parts of the same bucket (`same`: reports of several workers) keep them."""
    errors = dict(a.errors)
    for cls, n in b.errors.items():
        errors[cls] = errors.get(cls, 0) + n
    values = {name: _weighted(getattr(a, name), a.ok, getattr(b, name), b.ok) for name in _PERCENTILES}
    users = b.users if b.users is not None else a.users
    return Point(
        t,
        step,
        a.requests + b.requests,
        a.ok + b.ok,
        a.completion_tokens + b.completion_tokens,
        errors,
        users=users,
        complete=a.complete and b.complete,
        span=_merged_span(a, b, step, same),
        **values,
    )


def _merged_span(a: Point, b: Point, step: float, same: bool) -> float | None:
    seconds = max(a.seconds, b.seconds) if same else a.seconds + b.seconds
    return None if seconds >= step else seconds


def _weighted(x: float | None, wx: int, y: float | None, wy: int) -> float | None:
    if x is None or y is None:
        return y if x is None else x
    return (x * wx + y * wy) / (wx + wy) if wx + wy else (x + y) / 2


def coarsen(points: list[Point], step: float) -> list[Point]:
    """Points of `step` regrouped on a grid of 2 x step; a lone point keeps its figures."""
    wide = 2 * step
    out: list[Point] = []
    for p in points:
        t = math.floor(p.t / wide) * wide
        if out and out[-1].t == t:
            out[-1] = merge_points(out[-1], p, t, wide)
        else:  # alone on the wider grid: the run's first or last point, whose other half is not in the run
            out.append(replace(p, t=t, step=wide, span=p.seconds))
    return out


class Bucket:
    """An open bucket: a slice per series and their total."""

    __slots__ = ("series", "total")

    def __init__(self) -> None:
        self.series: dict[str, Slice] = {}
        self.total = Slice()

    def slice(self, name: str) -> Slice:
        found = self.series.get(name)
        if found is None:
            found = self.series[name] = Slice()
        return found

    def merge(self, other: Bucket) -> None:
        for name, part in other.series.items():
            self.slice(name).merge(part)
        self.total.merge(other.total)

    @classmethod
    def from_dict(cls, series: dict[str, Any]) -> Bucket:
        """A worker's slices of one bucket; the total is their sum."""
        bucket = cls()
        for name, d in series.items():
            part = bucket.series[str(name)] = Slice.from_dict(d)
            bucket.total.merge(part)
        return bucket

    def points(
        self, t: float, step: float, users: int | None, span: float | None = None
    ) -> Iterable[tuple[str, Point]]:
        for name, part in self.series.items():
            yield name, _point(part, t, step, users, span=span)
        yield TOTAL_NAME, _point(self.total, t, step, users, span=span)


def _point(
    part: Slice, t: float, step: float, users: int | None, complete: bool = True, span: float | None = None
) -> Point:
    if not complete:
        return Point(t, step, part.requests, part.ok, part.completion_tokens, dict(part.errors), complete=False)
    ttft, tpot = part.ttft.percentile, part.tpot.percentile
    counts = (part.requests, part.ok, part.completion_tokens, dict(part.errors))
    return Point(t, step, *counts, ttft_p50=ttft(50), ttft_p95=ttft(95), tpot_p50=tpot(50), users=users, span=span)


class Timeline:
    """Time-bucketed LLM statistics. `users` gives the node's (or the whole run's) active users when asked;
    `workers`, on a master, the ids of the workers it counts on (connected and not missing); None on a local run."""

    def __init__(
        self,
        users: Callable[[], int] = lambda: 0,
        step_s: float = STEP_S,
        max_points: int = MAX_POINTS,
        clock: Callable[[], float] = time.time,
        workers: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        self.users, self.clock, self.max_points, self.base_step = users, clock, max_points, step_s
        self.workers = workers
        self.reset()

    def reset(self) -> None:
        self.started = self.clock()  # the run's start: its first bucket's rates are over the part after it
        self.step = self.base_step
        self.points: dict[str, list[Point]] = {}
        self.open: dict[float, Bucket] = {}
        self.closed_until: float | None = None  # every bucket before it is closed into points
        self.through: dict[str, float] = {}  # each worker's latest report covers what ended before this time
        self.users_at: dict[float, int] = {}  # the users seen during each open base-step bucket

    def add_record(self, record: RequestRecord) -> None:
        """A record of this node (a local run), in the bucket of the time it ends (never before the closed ones)."""
        now = self.clock()
        t = now if self.closed_until is None else max(now, self.closed_until)
        if bucket_start(now, self.base_step) not in self.users_at:
            self._look(now)
        bucket = self.open.get(bucket_start(t, self.step))
        if bucket is None:
            self._settle(now)
            bucket = self.open.setdefault(bucket_start(t, self.step), Bucket())
        bucket.slice(row_name(record.scenario, record.endpoint)).add(record)
        bucket.total.add(record)

    def add_report(self, data: dict[str, Any], worker: str) -> None:
        """A worker's slices (loadlib.metrics.slices.BucketSlicer.ship) and up to when they cover its records."""
        for b in data.get("buckets") or ():
            self._take(float(b["t"]), Bucket.from_dict(b.get("series") or {}))
        through = float(data["through"])
        self.through[worker] = max(through, self.through.get(worker, through))
        now = self.clock()
        self._look(now)
        self._settle(now)

    def _take(self, t: float, bucket: Bucket) -> None:
        """A worker's bucket: into the open one of its time, or, if that has closed, added to its points."""
        key = bucket_start(t, self.step)
        if self.closed_until is None or t >= self.closed_until:
            found = self.open.get(key)
            if found is None:
                self.open[key] = bucket
            else:
                found.merge(bucket)
            return
        for name, point in bucket.points(key, self.step, None, self._span(key, self.step)):
            self._put(name, point)

    def _look(self, now: float) -> None:
        self.users_at[bucket_start(now, self.base_step)] = self.users()

    def frontier(self, now: float) -> float:
        """Every bucket that ends by this time is complete: now on a local run; on a master the earliest time up to
        which every worker it counts on has reported, but not earlier than GRACE_S ago."""
        if self.workers is None:
            return now
        waited = [self.through.get(w, -math.inf) for w in self.workers()]
        return min(now, max(now - GRACE_S, min(waited, default=now)))

    def _settle(self, now: float) -> None:
        """Close, in order, every bucket that is complete (an empty one is a point of zero counts)."""
        if self.closed_until is None:
            if not self.open:
                return
            self.closed_until = min(self.open)
        frontier = self.frontier(now)
        while (t := bucket_start(self.closed_until, self.step)) + self.step <= frontier:
            self._close(t, self.open.pop(t) if t in self.open else Bucket())
            self.closed_until = end = t + self.step
            full = max((len(v) for v in self.points.values()), default=0) >= self.max_points
            if full and bucket_start(end, 2 * self.step) == end:  # no wider bucket is left half closed
                self._coarsen()

    def _close(self, t: float, bucket: Bucket) -> None:
        seen = [k for k in self.users_at if k < t + self.step]
        users = self.users_at[max(seen)] if seen else self.users()
        for k in seen:
            del self.users_at[k]
        for name, point in bucket.points(t, self.step, users, self._span(t, self.step)):
            self._put(name, point)

    def _span(self, t: float, step: float) -> float | None:
        """The seconds of [t, t + step) after the run's start, when it started within that bucket."""
        return t + step - self.started if t < self.started < t + step else None

    def _put(self, name: str, point: Point) -> None:
        """A point into its series in time order, added to the one of the same time if there is one."""
        pts = self.points.setdefault(name, [])
        i = len(pts) if not pts or pts[-1].t < point.t else bisect.bisect_left(pts, point.t, key=lambda p: p.t)
        if i < len(pts) and pts[i].t == point.t:
            pts[i] = merge_points(pts[i], point, point.t, point.step, same=True)
        else:
            pts.insert(i, point)

    def _coarsen(self) -> None:
        """Double the step: the points merge in pairs, the open buckets regroup on the wider grid."""
        self.points = {name: coarsen(pts, self.step) for name, pts in self.points.items()}
        self.step *= 2
        regrouped: dict[float, Bucket] = {}
        for t, bucket in sorted(self.open.items()):
            key = bucket_start(t, self.step)
            if key in regrouped:
                regrouped[key].merge(bucket)
            else:
                regrouped[key] = bucket
        self.open = regrouped

    def feed(self) -> dict[str, Any]:
        """Every series as columns (JSON-able). On a local run the open bucket is a live last point (tokens/s over
        its age, null while it is younger than LIVE_RATE_AGE of a step); on a master the buckets not yet complete
        close the series with their counts so far, no rate and no percentiles (`complete` false)."""
        now = self.clock()
        self._look(now)
        if self.workers is None:
            self.open.setdefault(bucket_start(max(now, self.closed_until or now), self.step), Bucket())
        self._settle(now)
        tail: dict[str, list[Point]] = {}
        for t, bucket in sorted(self.open.items()):
            for name, point in self._open_points(t, bucket, now):
                tail.setdefault(name, []).append(point)
        names = sorted({TOTAL_NAME, *self.points, *tail}, key=lambda n: (n != TOTAL_NAME, n))
        young = self.step * LIVE_RATE_AGE
        series = {name: _columns([*self.points.get(name, []), *tail.get(name, [])], young) for name in names}
        return {"step_s": self.step, "series": series}

    def _open_points(self, t: float, bucket: Bucket, now: float) -> Iterable[tuple[str, Point]]:
        if self.workers is None:
            return bucket.points(t, max(now - max(t, self.started), 1e-3), self.users())
        parts = [*bucket.series.items(), (TOTAL_NAME, bucket.total)]
        return [(name, _point(part, t, self.step, None, complete=False)) for name, part in parts]


def _columns(points: list[Point], young: float = 0.0) -> dict[str, Any]:
    """The points as columns; a point spanning less than `young` seconds (the live one, just opened) or not complete
    has no rate."""
    classes = sorted({cls for p in points for cls in p.errors})
    return {
        "t": [p.t for p in points],
        "requests": [p.requests for p in points],
        "ok": [p.ok for p in points],
        "completion_tokens": [p.completion_tokens for p in points],
        "tokens_per_s": [round(p.completion_tokens / p.seconds, 3) if _rated(p, young) else None for p in points],
        "ttft_p50": [_r(p.ttft_p50) for p in points],
        "ttft_p95": [_r(p.ttft_p95) for p in points],
        "tpot_p50": [_r(p.tpot_p50) for p in points],
        "users": [p.users for p in points],
        "complete": [p.complete for p in points],
        "errors": {cls: [p.errors.get(cls, 0) for p in points] for cls in classes},
    }


def _rated(p: Point, young: float) -> bool:
    return p.complete and p.seconds >= young


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 3)
