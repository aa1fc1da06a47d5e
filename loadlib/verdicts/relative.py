"""Thresholds against a baseline run (`ttft p95 < baseline + 10%`, docs/baseline.md): judged from both runs. Pure.

A latency percentile is judged with both runs' intervals (loadlib.verdicts.baseline: the ratio's interval from the
two, MOVER): `<`/`<=` fail only when the whole ratio interval lies above 1 + margin (the run is slower than allowed
beyond its sampling error), `>`/`>=` only when it lies wholly below; otherwise they pass. Several such thresholds
share the false-alarm budget (Bonferroni: each at level 1 - (1 - confidence) / k), so a run like its baseline fails
one of them with probability under (1 - confidence) / 2. Selections of several rows judge each row against the
same row of the baseline; the worst decides, as for fixed limits.

Any other number (a throughput, a rate, a mean) has no interval: its limit is the baseline's value times
1 + margin (the mean over the baseline's summaries when there are several), judged like a fixed limit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loadlib.histogram import Histogram
from loadlib.metrics.summary_types import ThresholdResult
from loadlib.verdicts.baseline import NOT_JUDGED, TOTAL_ROW, Change, Pooled, compare, comparison_level
from loadlib.verdicts.evaluate import Histograms, _Measure, _result, _row_name, _select, _show, evaluate_one
from loadlib.verdicts.evaluate import required_samples as _required
from loadlib.verdicts.thresholds import METRICS, Threshold


@dataclass(frozen=True)
class Baseline:
    """The baseline run(s): their summaries, every row's histograms pooled over them, and the files they came from."""

    summaries: tuple[Mapping[str, Any], ...]
    pooled: Pooled
    files: tuple[str, ...]

    def histograms(self) -> Histograms:
        def find(scenario: str, endpoint: str, metric: str) -> Histogram | None:
            return self.pooled.get((scenario, endpoint), {}).get(metric)

        return find


def by_interval(t: Threshold) -> bool:
    """Whether a baseline threshold is judged with intervals: a latency percentile."""
    return t.relative is not None and METRICS[t.metric].source == "latency" and (t.aggregate or "")[:1] == "p"


def level_for(thresholds: Sequence[Threshold], confidence: float) -> float:
    """Each interval's level when `thresholds` share the false-alarm budget 1 - confidence."""
    return comparison_level(sum(1 for t in thresholds if by_interval(t)), 1.0 - confidence)


def evaluate_relative(
    t: Threshold,
    summary: Mapping[str, Any],
    baseline: Baseline | None,
    level: float,
    min_samples: int = 20,
    histograms: Histograms | None = None,
    strict: bool = False,
) -> ThresholdResult:
    """One baseline threshold against the run (module docstring: the rule; `strict`: --llm-threshold-ci)."""
    if baseline is None:
        why = "a threshold against the baseline needs --llm-baseline SUMMARY.json"
        return _result(t, _Measure(None, 0), None, why)
    if by_interval(t):
        return _by_interval(t, summary, baseline, level, min_samples, histograms, strict)
    return _by_value(t, summary, baseline, min_samples, histograms)


def _by_value(
    t: Threshold, summary: Mapping[str, Any], baseline: Baseline, min_samples: int, histograms: Histograms | None
) -> ThresholdResult:
    """The baseline's value (mean over its summaries) times 1 + margin as a fixed limit."""
    fixed = dataclasses.replace(t, relative=None, limit=0.0)
    found = [evaluate_one(fixed, s, min_samples, baseline.histograms())["value"] for s in baseline.summaries]
    values = [v for v in found if v is not None]
    if not values:
        return _result(t, _Measure(None, 0), None, f"the baseline has no value for {_what(t)}")
    base = sum(values) / len(values)
    assert t.relative is not None
    out = evaluate_one(dataclasses.replace(fixed, limit=base * (1.0 + t.relative)), summary, min_samples, histograms)
    out["expression"], out["reason"] = t.expression, f"{out['reason']}; baseline {_show(t, base)}{_margin(t)}"
    return out


def _by_interval(
    t: Threshold,
    summary: Mapping[str, Any],
    baseline: Baseline,
    level: float,
    min_samples: int,
    histograms: Histograms | None,
    strict: bool,
) -> ThresholdResult:
    rows = _select(t, summary)
    if isinstance(rows, str):
        return _result(t, _Measure(None, 0), None, rows)
    judged = [_judge_row(t, row, summary, baseline, (level, strict), min_samples, histograms) for row in rows]
    failed = [j for j in judged if j[0] is False]
    open_ = [j for j in judged if j[0] is None]
    sign = 1.0 if t.op in ("<", "<=") else -1.0  # the worst row: the slowest for an upper bound, else the fastest
    worst = max(judged, key=lambda j: sign * (j[1].value or 0.0))
    passed, measure, reason, limit = (failed or open_ or [worst])[0]
    if len(rows) > 1:
        reason += f" (the deciding one of {len(rows)} matching rows)"
    out = _result(t, measure, passed, reason)
    out["limit"] = limit
    return out


def _judge_row(
    t: Threshold,
    row: dict[str, Any],
    summary: Mapping[str, Any],
    baseline: Baseline,
    how: tuple[float, bool],
    min_samples: int,
    histograms: Histograms | None,
) -> tuple[bool | None, _Measure, str, float]:
    """(passed, the run's value and samples, the reason, the limit: the baseline's value x (1 + margin)) for one
    row against the same row of the baseline."""
    key = TOTAL_ROW if row is summary.get("total") else (str(row["scenario"]), str(row["endpoint"]))
    cand = _histogram(row, key, t.metric, histograms)
    base = baseline.pooled.get(key, {}).get(t.metric)
    where = _row_name(row)
    if base is None or cand is None:
        side = "the baseline" if base is None else "this run"
        why = f"{side} has no {t.metric} histogram for {where}"
        return None, _Measure(None, cand.count if cand else 0), why, t.limit
    needed = _required(t, min_samples)
    if min(base.count, cand.count) < needed:
        n = f"{cand.count:,} requests here, {base.count:,} in the baseline"
        why = f"{n} for {_what(t)} at {where}: at least {needed:,} each needed"
        return None, _Measure(None, cand.count), why, t.limit
    change = compare(base, cand, float((t.aggregate or "p")[1:]), how[0])
    return _decide(t, change, (cand.count, base.count), how[1])


def _decide(t: Threshold, c: Change, counts: tuple[int, int], strict: bool) -> tuple[bool | None, _Measure, str, float]:
    """Fail beyond the margin; pass otherwise, or with `strict` only wholly within it (else not judged)."""
    assert t.relative is not None
    n, n_base = counts
    bound = 1.0 + t.relative
    m = _Measure(c.cand, n)
    if c.verdict == NOT_JUDGED or c.low is None or c.high is None or c.base is None or c.cand is None:
        return None, m, f"{_what(t)}: {c.why}", t.limit
    lower = t.op in ("<", "<=")
    failed = c.low > bound if lower else c.high < bound
    within = c.high < bound if lower else c.low > bound
    rel = ("above" if lower else "below") if failed else ("within" if within else "across")
    reason = (
        f"{_what(t)} = {_show(t, c.cand)} against the baseline's {_show(t, c.base)}: x{c.ratio or 0:.3f} "
        f"[{c.low:.3f}-{c.high:.3f}] at {c.level:.4g}, {rel} x{bound:.3f} ({n:,} vs {n_base:,} requests)"
    )
    passed = False if failed else (True if within or not strict else None)
    strict_note = "; --llm-threshold-ci decides only with the whole interval on one side of it"
    return passed, m, reason + ("" if passed is not None else strict_note), c.base * bound


def _histogram(
    row: dict[str, Any], key: tuple[str, str], metric: str, histograms: Histograms | None
) -> Histogram | None:
    """The run's histogram of a row: the live one, else the one its summary file kept."""
    if histograms is not None:
        found = histograms(key[0], key[1], metric)
        if found is not None:
            return found
    data = (row.get("histograms") or {}).get(metric)
    return Histogram.from_dict(data) if isinstance(data, dict) else None


def _what(t: Threshold) -> str:
    return f"{t.metric} {t.aggregate}" if t.aggregate else t.metric


def _margin(t: Threshold) -> str:
    r = t.relative or 0.0
    return f" {'+' if r >= 0 else '-'} {abs(r) * 100:g}%" if r else ""
