"""Thresholds against a run's JSON summary: one JSON-able result per threshold (docs/thresholds.md).

A result is `passed` True or False only when the summary can answer it; otherwise None with the reason, and the
caller treats the run as invalid rather than passed, because "no data" must never read as "fine".

Which rows: `scenario` and `endpoint` tags select summary rows (no tags: all). When they select every row, the
`total` row is used: its percentiles come from the merged histograms of all samples. Otherwise:
- counts, rates, throughputs and costs add up exactly: fields are summed over the rows, then divided;
- latency `mean` (weighted by count) and `max` combine exactly too;
- latency percentiles do not: a p95 of two rows is not any function of their p95s. So each selected row is judged on
  its own and the worst one is reported (the highest value for `<`/`<=`, the lowest for `>`/`>=`, the farthest for
  `==`): the threshold holds for the selection only if it holds for every row. A failing row decides even when
  another row has too few samples; with no failure, a row with too few samples makes the result None.

Percentiles the rows do not hold (they hold p50, p95, p99; TTFB and first event p50, p95) come from the run's merged
histograms (`histograms`, see `stats_histograms`): nearest-rank over the bucketed samples like every percentile of
the summary, so within the histogram's 0.1 % (loadlib.histogram), never interpolated between p95 and p99.
Without histograms (a summary read back from JSON) such a percentile cannot be judged.

The sample rule: a sampled number (latencies, rates, throughputs, shares, cost per token) needs `min_samples`
samples; a percentile pXX needs max(min_samples, ceil(100 / (100 - XX)) * 5), i.e. 5 samples beyond the
percentile on average (p50: 10, p95: 100, p99: 500, p99.9: 5,000), so a tail percentile is not one lucky request.
Totals (`errors`, `requests`, `cost_usd`) are exact counts and need none. A latency's samples are its histogram
count (successful requests; inter-token gaps for ITL), a share's the checked outputs or repeat pairs, anything
else's the requests.

By the interval (`confidence`, --llm-threshold-ci; docs/statistics.md): a latency percentile compared with `<`,
`<=`, `>` or `>=` passes only when its whole confidence interval is on the good side of the limit and fails only
when it is on the bad side; otherwise it is not judged (None), with about how many more requests would decide it.
The interval comes from the row's merged histogram when there is one, else from the summary's `pXX_ci`.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from loadlib.histogram import Histogram
from loadlib.metrics.confidence import (
    DEFAULT_LEVEL,
    more_requests_needed,
    quantile_interval,
    requests_needed_from_interval,
)
from loadlib.metrics.stats import TOTAL_KEY, LLMStats
from loadlib.metrics.summary import json_count, json_number, row_name
from loadlib.metrics.summary_types import ThresholdResult
from loadlib.verdicts.thresholds import METRICS, ROW_TAGS, UNITS, Metric, Threshold, braces

if TYPE_CHECKING:
    from loadlib.verdicts.relative import Baseline

_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
}
_UNMERGEABLE = "percentiles of rows cannot be merged"

# (scenario, endpoint, metric) -> the merged histogram of that row's metric; ("", "") is the total row
Histograms = Callable[[str, str, str], Histogram | None]


def stats_histograms(stats: LLMStats) -> Histograms:
    """The live statistics the summary was built from, as the evaluator's histogram source (a latency metric `m`
    is the entry's `m_ms` histogram)."""

    def find(scenario: str, endpoint: str, metric: str) -> Histogram | None:
        key = (scenario, endpoint)
        entry = stats.total if key == TOTAL_KEY else stats.entries.get(key)
        found = getattr(entry, f"{metric}_ms", None) if entry is not None else None
        return found if isinstance(found, Histogram) else None

    return find


@dataclass(frozen=True)
class _Measure:
    """A value read from the summary, the samples behind it, why it cannot be judged (`blocked`), and a note."""

    value: float | None
    samples: int
    blocked: str = ""
    note: str = ""
    interval: list[float | None] | None = None  # a percentile's confidence interval, when judged by it
    more: int | None = None  # about how many more requests would decide it (set when the interval could not)


def evaluate(
    thresholds: Sequence[Threshold],
    summary: Mapping[str, Any],
    min_samples: int = 20,
    histograms: Histograms | None = None,
    confidence: float | None = None,
    baseline: Baseline | None = None,
    level: float = DEFAULT_LEVEL,
) -> list[ThresholdResult]:
    """One result per threshold, in order (keys: expression, metric, aggregate, tags, op, limit, unit, value,
    passed, samples, reason, origin; interval and more_requests when judged by the interval). `histograms` answers
    percentiles the summary rows do not hold; `confidence` judges latency percentiles by their interval; `baseline`
    the thresholds against a baseline (loadlib.verdicts.relative), which share the false-alarm budget 1 - `level`
    (--llm-confidence), strictly (pass only within the margin) with `confidence`."""
    from loadlib.verdicts.relative import evaluate_relative, level_for

    shared = level_for(thresholds, level)
    return [
        evaluate_relative(t, summary, baseline, shared, min_samples, histograms, strict=confidence is not None)
        if t.relative is not None
        else evaluate_one(t, summary, min_samples, histograms, confidence)
        for t in thresholds
    ]


def evaluate_one(
    t: Threshold,
    summary: Mapping[str, Any],
    min_samples: int = 20,
    histograms: Histograms | None = None,
    confidence: float | None = None,
) -> ThresholdResult:
    metric = METRICS[t.metric]
    if metric.source == "compliance":
        return _judge(t, _share(metric, summary), min_samples)
    rows = _select(t, summary)
    if isinstance(rows, str):
        return _result(t, _Measure(None, 0), None, rows)
    by_interval = confidence if t.op != "==" else None
    if metric.source == "latency" and len(rows) > 1 and _percentile(t.aggregate) is not None:
        return _worst(t, metric, rows, min_samples, histograms, by_interval)
    if metric.source == "latency" and len(rows) == 1 and _percentile(t.aggregate) is not None:
        m = _row_percentile(t, rows[0], metric, histograms, by_interval)
        return _judge(t, m, min_samples, by_interval)
    if metric.source == "latency":
        return _judge(t, _merged_latency(metric, t.aggregate or "", rows), min_samples)
    return _judge(t, _summed(t, metric, rows), min_samples)


# which rows


def _select(t: Threshold, summary: Mapping[str, Any]) -> list[dict[str, Any]] | str:
    """The rows the tags select, [total] when that is every row, or why none matches."""
    rows = [r for r in summary.get("rows") or [] if isinstance(r, dict)]
    filters = [(k, v) for k, v in t.tags if k in ROW_TAGS]
    picked = [r for r in rows if all(str(r.get(k)) == v for k, v in filters)]
    if filters and not picked:
        return _no_match(filters, rows)
    total = summary.get("total")
    if len(picked) == len(rows) and isinstance(total, dict):
        return [total]
    return picked


def _no_match(filters: list[tuple[str, str]], rows: list[dict[str, Any]]) -> str:
    """Say what the run does have, so a typo in a tag value is easy to see."""
    hints = []
    for k, v in filters:
        have = sorted({str(r.get(k)) for r in rows})
        if v not in have:
            hints.append(f"{k}s in this run: {', '.join(have) or 'none'}")
    tail = "; ".join(hints) if hints else "no row has all of them"
    return f"no requests match {braces(filters)}; {tail}"


# reading values


def _share(metric: Metric, summary: Mapping[str, Any]) -> _Measure:
    block = (summary.get("scenarios") or {}).get("compliance")
    if not isinstance(block, dict):
        why = f"no compliance results in this run ({metric.name} comes from the compliance scenario)"
        return _Measure(None, 0, blocked=why)
    whole, part = json_count(block.get(metric.per[0])), json_count(block.get(metric.read[0]))
    return _Measure(part / whole if whole else None, whole)


def _summed(t: Threshold, metric: Metric, rows: list[dict[str, Any]]) -> _Measure:
    """Sum the metric's fields over the rows, then divide: exact however many rows."""
    requests = sum(json_count(r.get("count")) for r in rows)
    cls = dict(t.tags).get("class")
    default = 0.0 if metric.kind == "cost" else None
    part = _sum_field(rows, metric.read[0], cls, default)
    if metric.per:
        whole = sum(_sum_field(rows, f, None, 0.0) or 0.0 for f in metric.per)
        part = part / whole * metric.scale if part is not None and whole else None
    return _Measure(part, requests, blocked=_unpriced(metric, rows))


def _sum_field(rows: list[dict[str, Any]], name: str, cls: str | None, default: float | None) -> float | None:
    """Sum of a row field (None when no row has it); `errors_total` narrowed to one error class when `cls` is set."""
    values = [_field(r, name, cls, default) for r in rows]
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _field(row: dict[str, Any], name: str, cls: str | None, default: float | None) -> float | None:
    if cls is not None and name == "errors_total":
        return json_number((row.get("errors") or {}).get(cls, 0))
    value = json_number(row.get(name))
    return default if value is None else value


def _unpriced(metric: Metric, rows: list[dict[str, Any]]) -> str:
    """A cost that leaves requests out would pass a budget by accident: such a cost is not judged."""
    n = sum(json_count(r.get("unpriced_requests")) for r in rows) if metric.kind == "cost" else 0
    if not n:
        return ""
    return f"cost leaves out {n:,} request{'s' if n != 1 else ''} of models missing from the price table"


def _latency_block(row: dict[str, Any], metric: Metric) -> dict[str, Any]:
    return (row.get("latency_ms") or {}).get(metric.read[0]) or {}


def _merged_latency(metric: Metric, aggregate: str, rows: list[dict[str, Any]]) -> _Measure:
    """One row as it is; several rows' `mean` weighted by count and `max` as the largest (both exact)."""
    blocks = [_latency_block(r, metric) for r in rows]
    samples = sum(json_count(b.get("count")) for b in blocks)
    if len(blocks) == 1:
        return _Measure(json_number(blocks[0].get(aggregate)), samples)
    pairs = [(v, json_count(b.get("count"))) for b in blocks if (v := json_number(b.get(aggregate))) is not None]
    pairs = [(v, n) for v, n in pairs if n]
    if not pairs:
        return _Measure(None, samples)
    if aggregate == "max":
        return _Measure(max(v for v, _ in pairs), samples, note=f", over {len(rows)} matching rows")
    mean = sum(v * n for v, n in pairs) / sum(n for _, n in pairs)
    return _Measure(mean, samples, note=f", count-weighted over {len(rows)} matching rows")


def _row_percentile(
    t: Threshold, row: dict[str, Any], metric: Metric, histograms: Histograms | None, confidence: float | None
) -> _Measure:
    """A percentile of one row: as the summary holds it, else from the row's merged histogram; with `confidence`,
    its interval too (from the histogram when there is one, else the summary's `pXX_ci`)."""
    aggregate = t.aggregate or ""
    block = _latency_block(row, metric)
    h = histograms(str(row.get("scenario", "")), str(row.get("endpoint", "")), metric.name) if histograms else None
    if aggregate in block:
        m = _Measure(json_number(block.get(aggregate)), json_count(block.get("count")))
    elif h is None:
        why = f"the summary holds no {aggregate} of {metric.name} and this evaluation has no histograms to read it from"
        return _Measure(None, json_count(block.get("count")), blocked=why)
    else:
        value = h.percentile(float(aggregate[1:]))
        m = _Measure(None if value is None else round(value, 3), h.count, note=", from the histogram")
    return m if confidence is None else _with_interval(t, m, block, h, confidence)


def _with_interval(
    t: Threshold, m: _Measure, block: dict[str, Any], h: Histogram | None, confidence: float
) -> _Measure:
    """The measure with its interval and, when that holds the limit, the estimate of the requests still needed."""
    p = float((t.aggregate or "p")[1:])
    found = quantile_interval(h, p, confidence) if h is not None and h.count else None
    interval = found.as_list() if found else block.get(f"{t.aggregate}_ci")
    if not isinstance(interval, list) or len(interval) != 2:
        return replace(m, blocked=f"the summary holds no confidence interval of {_label(t)} to judge it by")
    more = None
    if _interval_verdict(t, interval) is None:
        if h is not None and h.count:
            more = more_requests_needed(h, p, t.limit, confidence)
        else:
            more = requests_needed_from_interval(m.samples, m.value, interval, t.limit)
    return replace(m, interval=interval, more=more)


def _worst(
    t: Threshold,
    metric: Metric,
    rows: list[dict[str, Any]],
    min_samples: int,
    histograms: Histograms | None,
    confidence: float | None,
) -> ThresholdResult:
    """Judge each row's percentile on its own and report the one that decides (module docstring)."""
    judged = []
    for row in rows:
        m = _row_percentile(t, row, metric, histograms, confidence)
        judged.append((_row_name(row), m, *_verdict(t, m, min_samples, confidence)))
    failing = [j for j in judged if j[2] is False]
    undecided = [j for j in judged if j[2] is None]
    if failing or not undecided:
        name, m, passed, reason = max(failing or judged, key=lambda j: _badness(t, j[1].value))
        return _result(t, m, passed, f"{reason} at {name}, the worst of {len(rows)} matching rows ({_UNMERGEABLE})")
    name, m, passed, reason = undecided[0]
    return _result(t, m, None, f"{reason}, at {name} (one of {len(rows)} matching rows; {_UNMERGEABLE})")


def _badness(t: Threshold, value: float | None) -> float:
    if value is None:
        return -math.inf
    if t.op in ("<", "<="):
        return value
    if t.op in (">", ">="):
        return -value
    return abs(value - t.limit)


# judging and wording


def _judge(t: Threshold, m: _Measure, min_samples: int, confidence: float | None = None) -> ThresholdResult:
    return _result(t, m, *_verdict(t, m, min_samples, confidence))


def _verdict(t: Threshold, m: _Measure, min_samples: int, confidence: float | None = None) -> tuple[bool | None, str]:
    """Passed (None: cannot say) and the one-line reason."""
    metric = METRICS[t.metric]
    if m.blocked:
        return None, m.blocked
    if m.samples == 0 and (m.value is None or metric.sampled):
        return None, f"no {metric.noun} behind {_label(t)}"
    needed = required_samples(t, min_samples)
    if m.samples < needed:
        why = f" for a {t.aggregate}" if _percentile(t.aggregate) is not None and needed > min_samples else ""
        return None, f"only {m.samples:,} {metric.noun} for {_label(t)}: at least {needed:,} needed{why}"
    if m.value is None:
        return None, f"the summary has no value for {_label(t)}"
    if confidence is not None and m.interval is not None:
        return _by_interval(t, m, confidence)
    passed = _COMPARE[t.op](m.value, t.limit)
    return passed, _describe(t, m)


def _interval_verdict(t: Threshold, interval: Sequence[float | None]) -> bool | None:
    """True when the whole interval meets the limit, False when none of it does, None when it holds the limit (or
    the side that would decide is unbounded)."""
    low, high = interval
    good, bad = (high, low) if t.op in ("<", "<=") else (low, high)
    if good is not None and _COMPARE[t.op](good, t.limit):
        return True
    if bad is not None and not _COMPARE[t.op](bad, t.limit):
        return False
    return None


def _by_interval(t: Threshold, m: _Measure, confidence: float) -> tuple[bool | None, str]:
    """e.g. 'ttft p95 = 180 ms < 200 ms (...); its 95 % interval [172–191] is within the limit', or, not judged
    (the console marks it n/a, JUnit and Markdown "not judged"), '...holds 200 ms; about 1,200 more requests needed
    to judge it'."""
    interval = m.interval or [None, None]
    passed = _interval_verdict(t, interval)
    shown = "–".join("?" if v is None else _show(t, v).rsplit(" ", 1)[0] for v in interval)
    level = f"{confidence * 100:g} % interval [{shown}]"
    if passed is not None:
        return passed, f"{_describe(t, m)}; its {level} is {'within' if passed else 'beyond'} the limit"
    more = f"about {m.more:,} more requests needed to judge it" if m.more else "too few to say how many more would do"
    if m.more is None and m.value is not None and m.samples and m.interval and None not in m.interval:
        more = "no number of requests would: the percentile sits on the limit"
    return None, f"{_label(t)} = {_show(t, m.value or 0.0)}, its {level} holds {_show(t, t.limit)}; {more}"


def required_samples(t: Threshold, min_samples: int) -> int:
    """The sample rule of the module docstring: 0 for totals, min_samples, more for a tail percentile."""
    if not METRICS[t.metric].sampled:
        return 0
    q = _percentile(t.aggregate)
    if q is None:
        return min_samples
    return max(min_samples, math.ceil(Decimal(100) / (100 - q)) * 5)


def _percentile(aggregate: str | None) -> Decimal | None:
    """The N of `pN`, exact (p99.9 must need 5,000 samples, not 5,005 by float noise)."""
    if aggregate and aggregate.startswith("p"):
        return Decimal(aggregate[1:])
    return None


def _describe(t: Threshold, m: _Measure) -> str:
    """e.g. 'ttft p95 = 162.3 ms > 150 ms (1,204 requests)': the value against the limit, in the unit written."""
    value = m.value if m.value is not None else math.nan
    rel = "<" if value < t.limit else (">" if value > t.limit else "==")
    noun = METRICS[t.metric].noun
    return f"{_label(t)} = {_show(t, value)} {rel} {_show(t, t.limit)} ({m.samples:,} {noun}{m.note})"


def _show(t: Threshold, base: float) -> str:
    """A base-unit number in the unit the threshold was written in (bare latencies in ms)."""
    kind = METRICS[t.metric].kind
    unit = t.unit or ("ms" if kind == "latency" else "")
    shown = base / float(UNITS[kind][unit])
    text = f"{shown:,.0f}" if abs(shown) >= 1e4 else f"{shown:,.4g}"
    return text + ("%" if unit == "%" else f" {unit}" if unit else "")


def _label(t: Threshold) -> str:
    tags = braces(list(t.tags)) if t.tags else ""
    return f"{t.metric}{tags}" + (f" {t.aggregate}" if t.aggregate else "")


def _row_name(row: dict[str, Any]) -> str:
    return str(row.get("name") or row_name(row.get("scenario"), row.get("endpoint")))


def _result(t: Threshold, m: _Measure, passed: bool | None, reason: str) -> ThresholdResult:
    result: ThresholdResult = {
        "expression": t.expression,
        "metric": t.metric,
        "aggregate": t.aggregate,
        "tags": dict(t.tags),
        "op": t.op,
        "limit": t.limit,
        "unit": t.unit,
        "value": m.value,
        "passed": passed,
        "samples": m.samples,
        "reason": reason,
        "origin": t.origin,
    }
    if m.interval is not None:
        result["interval"] = m.interval
        result["more_requests"] = m.more if passed is None else None
    return result
