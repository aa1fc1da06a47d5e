"""A master's chart series from its workers' bucket slices (loadlib/metrics/slices.py, timeline.py): merged by bucket
time, so a steady load is a flat line however the reports fall; buckets complete when every live worker has reported
past them or GRACE_S after they end; late slices add to their points; counts stay exact through coarsening."""

from __future__ import annotations

from typing import Any

import pytest

from loadlib.errors import ErrorClass
from loadlib.metrics.slices import BucketSlicer, Slice
from loadlib.metrics.timeline import GRACE_S, Timeline
from tests.support.records import make_record

T0 = 1024.0  # on the grid of every coarsened step in these tests
TOKENS = 20  # per request; each worker ends one request every 0.1 s: 200 tokens/s, 400 tokens/s for two


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def rec(**kw: Any):
    return make_record(**{"ttft_ms": 100.0, "tpot_ms": 10.0, "completion_tokens": TOKENS, **kw})


class Run:
    """Workers ending a request every 0.1 s each and reporting every 3 s, each at its own phase, to one master."""

    def __init__(self, phases: dict[str, float], max_points: int = 1800) -> None:
        self.clock = Clock()
        self.live = set(phases)
        self.master = Timeline(lambda: 10, clock=self.clock, max_points=max_points, workers=lambda: set(self.live))
        self.slicers = {w: BucketSlicer(self.clock) for w in phases}
        self.next_report = {w: T0 + phase for w, phase in phases.items()}
        self.silent: set[str] = set()  # stalled: records but no reports
        self.shipped = {"requests": 0, "errors": 0}  # what the workers' reports carried: what the series must add to

    def until(self, end: float) -> None:
        k = round((self.clock.t - T0) * 10)
        while T0 + (k + 0.5) / 10 < end:
            self.clock.t = T0 + (k + 0.5) / 10
            for slicer in self.slicers.values():
                slicer.add(rec(status=ErrorClass.HTTP_5XX if k % 10 == 0 else ErrorClass.OK))
            for w in self.slicers:
                if self.clock.t >= self.next_report[w] and w not in self.silent:
                    self.report(w)
            k += 1

    def report(self, w: str) -> None:
        data = self.slicers[w].ship()
        for part in (s for b in data["buckets"] for s in b["series"].values()):
            self.shipped["requests"] += part["n"]
            self.shipped["errors"] += sum((part.get("err") or {}).values())
        self.master.add_report(data, w)
        self.next_report[w] += 3.0

    def total(self) -> dict[str, Any]:
        return self.master.feed()["series"]["Aggregated"]


def complete_rates(total: dict[str, Any]) -> list[float]:
    return [r for r, done in zip(total["tokens_per_s"], total["complete"], strict=True) if done]


def test_a_steady_load_is_a_flat_line_whatever_the_report_phases() -> None:
    """Reports every 3 s into 2 s buckets: merged by arrival, a bucket in three got none from a worker and the others
    1.5 times its rate; merged by bucket time every complete bucket has exactly what ended in it."""
    run = Run({"w1": 0.4, "w2": 1.7})
    run.until(T0 + 30)
    total = run.total()
    rates = complete_rates(total)
    assert len(rates) >= 12 and set(rates) == {2 * 10 * TOKENS}, rates
    assert all(p is not None for p, done in zip(total["ttft_p50"], total["complete"], strict=True) if done)
    assert {u for u, done in zip(total["users"], total["complete"], strict=True) if done} == {10}
    assert sum(total["requests"]) == run.shipped["requests"] > 500
    assert sum(total["errors"]["http_5xx"]) == run.shipped["errors"] > 50


def test_a_bucket_is_complete_once_every_worker_has_reported_past_its_end() -> None:
    run = Run({"w1": 0.4, "w2": 1.7})
    run.until(T0 + 20)
    total = run.total()
    through = min(run.master.through.values())
    for t, done, rate, p95 in zip(total["t"], total["complete"], total["tokens_per_s"], total["ttft_p95"], strict=True):
        assert done == (t + 2.0 <= through), (t, through)
        assert done or (rate is None and p95 is None), "an incomplete bucket shows counts so far, no rate"
    assert total["complete"][-1] is False and total["requests"][-1] > 0


def test_a_stalled_worker_holds_the_chart_back_by_the_grace_at_most_and_its_late_slices_count() -> None:
    run = Run({"w1": 0.4, "w2": 1.7})
    run.until(T0 + 10)
    run.silent.add("w2")
    run.until(T0 + 30)
    total = run.total()
    done = [t for t, c in zip(total["t"], total["complete"], strict=True) if c]
    assert run.clock.t - GRACE_S - 2.0 < done[-1] + 2.0 <= run.clock.t - GRACE_S, "the grace, not w2's last report"
    assert complete_rates(total)[-1] == 10 * TOKENS, "what reached the master: w1's alone"
    run.silent.clear()
    run.next_report["w2"] = run.clock.t
    run.until(T0 + 33)
    total = run.total()
    t_rate = dict(zip(total["t"], total["tokens_per_s"], strict=True))
    assert all(t_rate[t] == 2 * 10 * TOKENS for t in done), "the late slices added to their closed points"
    assert sum(total["requests"]) == run.shipped["requests"]


def test_a_lost_worker_is_not_waited_for_and_a_silent_new_one_for_the_grace_only() -> None:
    run = Run({"w1": 0.4, "w2": 1.7})
    run.until(T0 + 10)
    run.live.discard("w2")  # missing: the runner no longer counts on it
    run.silent.add("w2")
    run.until(T0 + 20)
    assert run.master.frontier(run.clock.t) == run.master.through["w1"]
    run.live.add("w3")  # connected, never reported
    assert run.master.frontier(run.clock.t) == pytest.approx(run.clock.t - GRACE_S)


def test_counts_stay_exact_and_rates_true_through_coarsening() -> None:
    run = Run({"w1": 0.4, "w2": 1.7}, max_points=4)
    run.until(T0 + 64)
    feed = run.master.feed()
    total = feed["series"]["Aggregated"]
    assert feed["step_s"] >= 8.0 and len(total["t"]) <= 4 + 3
    assert set(complete_rates(total)) == {2 * 10 * TOKENS}, "a wider bucket is never left half closed"
    shipped = run.shipped["requests"]
    assert sum(total["requests"]) == shipped and sum(total["completion_tokens"]) == shipped * TOKENS


def test_a_slice_survives_its_trip_and_a_worker_ships_each_record_once() -> None:
    clock = Clock(T0 + 0.5)
    slicer = BucketSlicer(clock)
    slicer.add(rec(ttft_ms=120.0))
    slicer.add(rec(status=ErrorClass.RATE_LIMITED))
    clock.t = T0 + 2.5
    slicer.add(rec(ttft_ms=80.0))
    sent = slicer.ship()
    assert sent["through"] == T0 + 2.5 and [b["t"] for b in sent["buckets"]] == [T0, T0 + 2.0]
    first = Slice.from_dict(sent["buckets"][0]["series"]["chat @ mock"])
    assert (first.requests, first.ok, first.completion_tokens, first.errors) == (2, 1, 2 * TOKENS, {"rate_limited": 1})
    assert first.ttft.count == 1 and first.ttft.percentile(50) == pytest.approx(120.0, rel=1e-2)
    assert slicer.ship()["buckets"] == [], "shipped once"


def test_reset_forgets_the_open_buckets_and_the_workers_marks() -> None:
    run = Run({"w1": 0.4, "w2": 1.7})
    run.until(T0 + 8)
    run.master.reset()
    assert run.master.through == {} and run.total()["requests"] == []
