"""One step of the search: its measuring window's statistics, merged exactly from every node, and its judgement.

A step's window holds the requests that ended inside its measuring window and started after its load was set (the
warm-up's first moment): requests that saw the previous load are left out. Its loop-lag and CPU samples (each
node's worst lag of each second, its CPU of each second) say whether the client kept up. The step is judged with
the run's thresholds over a summary of the window alone."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loadlib.histogram import Histogram
from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary
from loadlib.metrics.summary_types import Summary, ThresholdResult
from loadlib.verdicts.evaluate import evaluate, required_samples, stats_histograms
from loadlib.verdicts.slo import applicable
from loadlib.verdicts.thresholds import Threshold

Z95 = 1.96  # the two-sided 95 % confidence of a percentile's interval
MIN_SAMPLES = 20  # the sample rule's base, as `evaluate` applies it to the step's thresholds
SATURATED_SHARE = 50.0  # a step's client is saturated when half its seconds are over a limit: one stall is not it


@dataclass
class StepWindow:
    """A step's measuring window: statistics and client samples, added on a node or merged from many."""

    stats: LLMStats = field(default_factory=LLMStats)
    lag: Histogram = field(default_factory=Histogram)
    cpu: Histogram = field(default_factory=Histogram)

    def serialize(self) -> dict[str, Any]:
        return {"stats": self.stats.serialize(), "lag": self.lag.to_dict(), "cpu": self.cpu.to_dict()}

    def merge_serialized(self, data: dict[str, Any]) -> None:
        self.stats.merge_serialized(data["stats"])
        self.lag.merge(Histogram.from_dict(data["lag"]))
        self.cpu.merge(Histogram.from_dict(data["cpu"]))

    def empty(self) -> bool:
        return not self.stats.total.requests and not self.lag.count


@dataclass(frozen=True)
class Limits:
    """What a step is judged by: the thresholds, the client's loop-lag and CPU limits, the percentile precision."""

    thresholds: Sequence[Threshold]
    lag_ms: float = 50.0
    cpu_percent: float = 90.0
    precision: float = 0.05
    request_slo: str = ""  # --llm-request-slo as written: the step's rows then count goodput
    confidence: float | None = None  # --llm-threshold-ci: a step holds only when the interval shows it


def step_summary(window: StepWindow, duration_s: float, request_slo: str = "") -> Summary:
    """The window as a run summary (rows and total), which thresholds are evaluated over."""
    return build_summary(window.stats, max(duration_s, 1e-9), None, {}, request_slo)


def judge(window: StepWindow, duration_s: float, limits: Limits) -> list[ThresholdResult]:
    """Every threshold over the window; one with too few samples is judged on its value as it stands (its reason
    says so): the step has to decide. With --llm-threshold-ci (`limits.confidence`) a percentile is judged by its
    interval, as the run's verdict judges it, and one whose interval still holds the limit when the window ends has
    not shown that the load holds: the step fails (the answer is the largest load shown to hold)."""
    summary = step_summary(window, duration_s, limits.request_slo)
    histograms = stats_histograms(window.stats)
    chosen = applicable(limits.thresholds, summary)
    results = evaluate(chosen, summary, MIN_SAMPLES, histograms, confidence=limits.confidence)
    return [_decided(r, _sampled(t, r)) for t, r in zip(chosen, results, strict=True)]


def _sampled(t: Threshold, r: ThresholdResult) -> bool:
    """The result had the samples its aggregate needs (so an undecided one was undecided by its interval)."""
    return (r.get("samples") or 0) >= required_samples(t, MIN_SAMPLES)


def _decided(r: ThresholdResult, sampled: bool = True) -> ThresholdResult:
    if r["passed"] is not None or r["value"] is None:
        return r
    if sampled and r.get("interval") is not None:  # judged by the interval, which holds the limit
        return {**r, "passed": False, "reason": f"{r['reason']} (not shown to hold when the window ended)"}
    return {**r, "passed": holds(r["value"], r["op"], r["limit"]), "reason": f"{r['reason']} (judged as it stands)"}


def holds(value: float, op: str, limit: float) -> bool:
    ops = {"<": value < limit, "<=": value <= limit, ">": value > limit, ">=": value >= limit, "==": value == limit}
    return ops[op]


def failed(results: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The results that make the step fail: failed, or with nothing to judge (no request succeeded)."""
    return [r for r in results if r["passed"] is not True]


def saturated(window: StepWindow, limits: Limits) -> str | None:
    """Why the client could not keep up during the step, or None: half its seconds (or more) over a limit. A short
    window has few seconds, so one stall (a collection, a spawn) must not stop the search; a client that cannot keep
    up lags in most of them."""
    lag = window.lag.percentile(SATURATED_SHARE)
    cpu = window.cpu.percentile(SATURATED_SHARE)
    if lag is not None and lag > limits.lag_ms:
        return f"loop lag over {limits.lag_ms:g} ms in half the step's seconds or more (median {lag:.1f} ms)"
    if cpu is not None and cpu > limits.cpu_percent:
        return f"CPU over {limits.cpu_percent:g} % in half the step's seconds or more (median {cpu:.0f} %)"
    return None


def settled(window: StepWindow, limits: Limits) -> bool:
    """Whether the window may end before its time: every threshold has its samples, and every percentile is known
    within the precision (its 95 % confidence interval's half-width) or lies wholly on one side of its limit."""
    if not limits.thresholds:
        return False
    strict = limits.confidence is not None
    return all(_settled_one(window, t, limits.precision, strict) for t in limits.thresholds)


def _settled_one(window: StepWindow, t: Threshold, precision: float, strict: bool) -> bool:
    total = window.stats.total
    hist = getattr(total, f"{t.metric}_ms", None)
    count = hist.count if isinstance(hist, Histogram) else total.requests
    if count < required_samples(t, MIN_SAMPLES):
        return False
    aggregate = t.aggregate or ""
    if not isinstance(hist, Histogram) or not aggregate.startswith("p"):
        return True
    return interval_settled(hist, float(aggregate.removeprefix("p")), t.limit, precision, strict)


def interval_settled(hist: Histogram, pct: float, limit: float, precision: float, strict: bool = False) -> bool:
    """The percentile's distribution-free 95 % interval (the order statistics at q ± 1.96 √(q(1−q)/n)) is within
    `precision` of its value, or does not contain the limit; `strict` (--llm-threshold-ci), only the latter: a
    narrow interval that holds the limit decides nothing by that rule, so the window goes on."""
    q = pct / 100.0
    half = Z95 * math.sqrt(q * (1.0 - q) / hist.count)
    lo, mid, hi = hist.percentiles((max(0.0, q - half) * 100, pct, min(1.0, q + half) * 100))
    if lo is None or mid is None or hi is None:
        return False
    return (not strict and (hi - lo) / 2 <= precision * mid) or hi < limit or lo > limit
