"""Bucket slices: what one series of the web UI's charts holds over one time bucket, and how a worker ships them.

Buckets are aligned on the wall clock, [floor(t / step) * step, + step), so every node cuts the same buckets. A
worker cuts its own records into buckets of the base step as they end and ships, with each report, the slices of the
buckets it touched since its previous report and the time the report was cut (`through`): it has shipped everything
that ended before then. The master merges the slices by bucket time (loadlib.metrics.timeline), so a steady load draws
a steady line however the reports fall. A slice carries counts and the TTFT and TPOT histograms: nothing per token.
The master adds a bucket's total from its series, so the total is not shipped.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from loadlib.histogram import Histogram
from loadlib.metrics.summary import row_name
from loadlib.records.record import RequestRecord

STEP_S = 2.0  # the base step: every node cuts its buckets by it


def bucket_start(t: float, step: float) -> float:
    """The start of the wall-clock-aligned bucket of `step` seconds that holds time `t`."""
    return math.floor(t / step) * step


class Slice:
    """What a point needs of one series over one bucket: counts, and the TTFT and TPOT histograms. The rules are the
    statistics' (loadlib.metrics.stats): latencies of successful attempts only."""

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

    def merge(self, other: Slice) -> None:
        self.requests += other.requests
        self.ok += other.ok
        self.completion_tokens += other.completion_tokens
        for cls, n in other.errors.items():
            self.errors[cls] = self.errors.get(cls, 0) + n
        self.ttft.merge(other.ttft)
        self.tpot.merge(other.tpot)

    def merge_entry(self, d: dict[str, Any]) -> None:
        """One entry of a worker's serialized statistics (LLMStats.serialize): a report from a worker that ships
        no slices."""
        self.requests += int(d.get("requests", 0))
        self.ok += int(d.get("ok", 0))
        self.completion_tokens += int(d.get("completion_tokens_total", 0))
        for cls, n in (d.get("errors") or {}).items():
            self.errors[cls] = self.errors.get(cls, 0) + int(n)
        hist = d.get("hist") or {}
        for attr, key in (("ttft", "ttft_ms"), ("tpot", "tpot_ms")):
            if key in hist:
                getattr(self, attr).merge(Histogram.from_dict(hist[key]))

    def to_dict(self) -> dict[str, Any]:
        """msgpack/JSON-safe; an empty histogram or no errors is left out."""
        d: dict[str, Any] = {"n": self.requests, "ok": self.ok, "tok": self.completion_tokens}
        if self.errors:
            d["err"] = dict(self.errors)
        for key, hist in (("ttft", self.ttft), ("tpot", self.tpot)):
            if hist.count:
                d[key] = hist.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Slice:
        s = cls()
        s.requests, s.ok, s.completion_tokens = int(d["n"]), int(d["ok"]), int(d["tok"])
        s.errors = {str(k): int(v) for k, v in (d.get("err") or {}).items()}
        for key in ("ttft", "tpot"):
            if key in d:
                setattr(s, key, Histogram.from_dict(d[key]))
        return s


class BucketSlicer:
    """A worker's records cut into buckets of the base step, by the time each one ends (is added)."""

    def __init__(self, clock: Callable[[], float] = time.time, step_s: float = STEP_S) -> None:
        self.clock, self.step = clock, step_s
        self.buckets: dict[float, dict[str, Slice]] = {}

    def add(self, record: RequestRecord) -> None:
        bucket = self.buckets.setdefault(bucket_start(self.clock(), self.step), {})
        name = row_name(record.scenario, record.endpoint)
        found = bucket.get(name)
        if found is None:
            found = bucket[name] = Slice()
        found.add(record)

    def ship(self) -> dict[str, Any]:
        """The slices since the previous report, and the time they were cut (every record that ended before it is in
        this report or an earlier one); they are then forgotten."""
        through = self.clock()
        buckets = [
            {"t": t, "series": {name: s.to_dict() for name, s in bucket.items()}}
            for t, bucket in sorted(self.buckets.items())
        ]
        self.buckets = {}
        return {"step": self.step, "through": through, "buckets": buckets}

    def reset(self) -> None:
        self.buckets = {}
