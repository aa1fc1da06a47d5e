"""The run over time for the web UI's LLM charts: statistics cut into time buckets, kept for the whole run.

A bucket holds a `Slice` per series of what arrived within one step (on the master: worker reports, each a delta
since that worker's previous one; on a local run: records). When the next step begins the bucket closes into one
point per scenario/endpoint and one for the total: numbers only, so memory is at most MAX_POINTS points per series.
When a series is full the step doubles and neighbouring points merge: counts add exactly; a merged point's
percentiles are the count-weighted mean of its halves (stated in docs/webui.md; the summary keeps the exact run-wide
figures). The feed adds the open bucket as a last, live point, so the points' counts add up to the statistics at any
moment; its tokens/s waits until it is half a step old (over a few milliseconds it reads 0, or one request's tokens
as a spike, and the legend shows the last value).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from loadlib.histogram import Histogram
from loadlib.metrics.summary import TOTAL_NAME, row_name
from loadlib.records.record import RequestRecord

STEP_S = 2.0
MAX_POINTS = 1800  # per series: one hour at 2 s before the first coarsening
LIVE_RATE_AGE = 0.5  # of a step: the open bucket's tokens/s is shown once it is this old, null before
_PERCENTILES = ("ttft_p50", "ttft_p95", "tpot_p50")


@dataclass(frozen=True, slots=True)
class Point:
    """One series' figures over one bucket [t, t + step)."""

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


class Slice:
    """What a point needs of one series over one bucket: counts, and the TTFT and TPOT histograms. Nothing per token
    (the ITL list is the statistics' costly part), so a local run pays two histogram records per request for its
    charts. The rules are the statistics' (loadlib.metrics.stats): latencies of successful attempts only."""

    __slots__ = ("completion_tokens", "errors", "ok", "requests", "tpot", "ttft")

    def __init__(self) -> None:
        self.requests = self.ok = self.completion_tokens = 0
        self.errors: dict[str, int] = {}
        self.ttft, self.tpot = Histogram(), Histogram()

    def add(self, r: RequestRecord) -> None:
        self.requests += 1
        self.completion_tokens += r.output_tokens or 0
        if r.status.is_error:
            self.errors[r.status.value] = self.errors.get(r.status.value, 0) + 1
            return
        self.ok += 1
        if r.ttft_ms is not None:
            self.ttft.record(r.ttft_ms)
        if r.tpot_ms is not None:
            self.tpot.record(r.tpot_ms)

    def merge_entry(self, d: dict[str, Any]) -> None:
        """One entry of a worker's serialized statistics (LLMStats.serialize)."""
        self.requests += int(d.get("requests", 0))
        self.ok += int(d.get("ok", 0))
        self.completion_tokens += int(d.get("completion_tokens_total", 0))
        for cls, n in (d.get("errors") or {}).items():
            self.errors[cls] = self.errors.get(cls, 0) + int(n)
        hist = d.get("hist") or {}
        for attr, key in (("ttft", "ttft_ms"), ("tpot", "tpot_ms")):
            if key in hist:
                getattr(self, attr).merge(Histogram.from_dict(hist[key]))

    def point(self, t: float, step: float, users: int | None) -> Point:
        values = {"ttft_p50": self.ttft.percentile(50), "ttft_p95": self.ttft.percentile(95)}
        values["tpot_p50"] = self.tpot.percentile(50)
        return Point(t, step, self.requests, self.ok, self.completion_tokens, dict(self.errors), users=users, **values)


def merge_points(a: Point, b: Point, t: float, step: float) -> Point:
    """Two neighbouring points as one: counts add; percentiles are weighted by the successful attempts behind them."""
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
        **values,
    )


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
        else:
            out.append(replace(p, t=t, step=wide))
    return out


class Timeline:
    """Time-bucketed LLM statistics. `users` gives the node's (or the whole run's) active users when asked."""

    def __init__(
        self,
        users: Callable[[], int] = lambda: 0,
        step_s: float = STEP_S,
        max_points: int = MAX_POINTS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.users, self.clock, self.max_points, self.base_step = users, clock, max_points, step_s
        self.reset()

    def reset(self) -> None:
        self.step = self.base_step
        self.points: dict[str, list[Point]] = {}
        self.bucket: dict[str, Slice] = {}
        self.total = Slice()
        self.bucket_t: float | None = None

    def add_record(self, record: RequestRecord) -> None:
        self._roll()
        self._slice(row_name(record.scenario, record.endpoint)).add(record)
        self.total.add(record)

    def add_serialized(self, data: dict[str, Any]) -> None:
        """A worker's report (LLMStats.serialize): a delta since its previous one."""
        self._roll()
        for d in data.get("entries") or ():
            self._slice(row_name(d["scenario"], d["endpoint"])).merge_entry(d)
        if data.get("total"):
            self.total.merge_entry(data["total"])

    def _slice(self, name: str) -> Slice:
        found = self.bucket.get(name)
        if found is None:
            found = self.bucket[name] = Slice()
        return found

    def _roll(self) -> None:
        now = self.clock()
        start = math.floor(now / self.step) * self.step
        if self.bucket_t is not None and start > self.bucket_t:
            self._close()
        if self.bucket_t is None or start > self.bucket_t:
            self.bucket_t = start

    def _close(self) -> None:
        if self.bucket_t is None:
            return
        for name, point in self._bucket_points(self.bucket_t, self.step):
            self.points.setdefault(name, []).append(point)
        self.bucket, self.total = {}, Slice()
        if max((len(v) for v in self.points.values()), default=0) > self.max_points:
            self.points = {name: coarsen(pts, self.step) for name, pts in self.points.items()}
            self.step *= 2

    def _bucket_points(self, t: float, step: float) -> Iterable[tuple[str, Point]]:
        users = self.users()
        for name, part in self.bucket.items():
            yield name, part.point(t, step, users)
        yield TOTAL_NAME, self.total.point(t, step, users)

    def feed(self) -> dict[str, Any]:
        """Every series as columns (JSON-able), the open bucket as a live last point (tokens/s over its age, null
        while it is younger than LIVE_RATE_AGE of a step)."""
        self._roll()
        now = self.clock()
        live = dict(self._bucket_points(self.bucket_t, max(now - self.bucket_t, 1e-3))) if self.bucket_t else {}
        names = sorted(set(self.points) | set(live), key=lambda n: (n != TOTAL_NAME, n))
        young = self.step * LIVE_RATE_AGE
        series = {
            name: _columns([*self.points.get(name, []), *([live[name]] if name in live else [])], young)
            for name in names
        }
        return {"step_s": self.step, "series": series}


def _columns(points: list[Point], young: float = 0.0) -> dict[str, Any]:
    """The points as columns; a point spanning less than `young` seconds (the live one, just opened) has no rate."""
    classes = sorted({cls for p in points for cls in p.errors})
    return {
        "t": [p.t for p in points],
        "requests": [p.requests for p in points],
        "ok": [p.ok for p in points],
        "completion_tokens": [p.completion_tokens for p in points],
        "tokens_per_s": [None if p.step < young else round(p.completion_tokens / p.step, 3) for p in points],
        "ttft_p50": [_r(p.ttft_p50) for p in points],
        "ttft_p95": [_r(p.ttft_p95) for p in points],
        "tpot_p50": [_r(p.tpot_p50) for p in points],
        "users": [p.users for p in points],
        "errors": {cls: [p.errors.get(cls, 0) for p in points] for cls in classes},
    }


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 3)
