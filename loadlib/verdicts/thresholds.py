"""Threshold expressions on LLM metrics: one registry of what can be checked, and a strict parser (docs/thresholds.md).

Grammar (k6's thresholds, with the tag filter written into the expression)::

    METRIC[{TAG=VALUE,...}] [AGG] OP NUMBER[UNIT]

    ttft p95 < 150ms                      e2e p99 < 2s
    error_rate < 1%                       error_rate{class=rate_limited} < 5%
    ttft{scenario=support_chat,endpoint=primary} p95 <= 300ms
    output_tokens_per_s > 500             cost_per_1k_tokens <= 0.0015
    schema_valid >= 99%

Against a baseline run (--llm-baseline, docs/baseline.md), the limit is the baseline's own value, optionally
with a margin in %::

    ttft p95 < baseline + 10%             output_tokens_per_s > baseline - 5%
    e2e{endpoint=primary} p50 <= baseline

A latency percentile is then judged with both runs' intervals (loadlib.verdicts.relative); any other number by
its value against the baseline's.

- METRIC: a name of `METRICS` below. `goodput` is the share of requests that met every bound of the per-request SLO
  (--llm-request-slo, loadlib.verdicts.goodput); a goodput threshold without one is refused.
- TAG=VALUE (k6's `TAG:VALUE` also works): `scenario` and `endpoint` select summary rows; `class` (an error class of
  docs/metrics.md) narrows `error_rate` and `errors`. Rows carry no model, so `model` is refused: filter on the
  endpoint, which has one model. Values are names: letters, digits and `_ . - : @ / +`.
- AGG: latencies need an aggregate: any percentile `pN` (0 < N < 100: `p90`, `p99.9`, k6's `p(99.9)`), `mean`,
  and `max` (not for TTFB and first event, whose rows hold no max); `avg` and `med` are read as `mean` and `p50`.
  Percentiles the summary rows do not hold (they hold p50, p95, p99) are read from the run's histograms by the
  evaluator (loadlib.verdicts.evaluate). Other metrics take none.
- OP: `<`, `<=`, `>`, `>=`, `==`.
- NUMBER[UNIT]: a non-negative decimal. Latencies take `ms` or `s` (bare: ms); rates and shares take `%` (bare: a
  fraction 0..1, so a bare number above 1 is refused: `5` is not 5 %); counts, throughputs and costs take no unit.

k6 silently ignores a threshold on a metric that does not exist. Here every unknown or misplaced piece (metric,
aggregate, tag, tag value, unit, operator, number) is a ConfigError of one line naming the expression, what is
wrong, the closest valid word and every valid one; k6's metric names get the loadlib name (loadlib.verdicts.k6), and
two thresholds joined with ',' get the hint to use ';'.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Literal

from loadlib.errors import ConfigError, ErrorClass
from loadlib.verdicts.k6 import AGGREGATE_HINTS, METRIC_HINTS

Kind = Literal["latency", "rate", "throughput", "cost", "count", "share"]
Source = Literal["latency", "rows", "compliance"]


@dataclass(frozen=True)
class Metric:
    """One checkable number and how to read it from the summary.

    `source` says where: "latency" reads `latency_ms[read[0]]` of a row, "rows" sums the row fields `read` (divided
    by the summed fields `per` when given, times `scale`), "compliance" reads `scenarios.compliance[read[0]]` over
    `per[0]`. `sampled` numbers are estimates from samples and obey the sample rule; totals (counts, cost) do not.
    """

    name: str
    kind: Kind
    aggregates: tuple[str, ...]
    tags: tuple[str, ...]
    source: Source
    read: tuple[str, ...]
    per: tuple[str, ...] = ()
    scale: float = 1.0
    sampled: bool = True
    noun: str = "requests"
    anchor: str = "metrics.md#timing"


MAIN_AGGREGATES = ("p50", "p95", "p99", "max", "mean")
SIDE_AGGREGATES = ("p50", "p95", "mean")
ROW_TAGS = ("scenario", "endpoint")
ERROR_TAGS = (*ROW_TAGS, "class")
TAG_ORDER = (*ERROR_TAGS, "model")
OPS = ("<", "<=", ">", ">=", "==")
ERROR_CLASSES = tuple(c.value for c in ErrorClass if c not in (ErrorClass.OK, ErrorClass.CIRCUIT_OPEN))


_ERRORS = "metrics.md#error-classes"
_COST = "metrics.md#tokens-and-cost"
_COMPLIANCE = "scenarios.md#compliance-review"


def _latency(name: str, aggregates: tuple[str, ...] = MAIN_AGGREGATES, noun: str = "requests") -> Metric:
    return Metric(name, "latency", aggregates, ROW_TAGS, "latency", (name,), noun=noun)


def _rows(
    name: str, kind: Kind, read: str, per: tuple[str, ...] = (), tags: tuple[str, ...] = ROW_TAGS, **kw: Any
) -> Metric:
    return Metric(name, kind, (), tags, "rows", (read,), per, **kw)


def _compliance(name: str, per: str, noun: str) -> Metric:
    return Metric(name, "share", (), (), "compliance", (name,), (per,), noun=noun, anchor=_COMPLIANCE)


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        _latency("ttft"),
        _latency("ttfo"),
        _latency("tpot"),
        _latency("stream_tpot"),
        _latency("stream_tail"),
        _latency("itl", noun="inter-token gaps"),
        _latency("e2e"),
        _latency("ttfb", SIDE_AGGREGATES),
        _latency("first_event", SIDE_AGGREGATES),
        _rows("error_rate", "rate", "errors_total", ("count",), tags=ERROR_TAGS, anchor=_ERRORS),
        _rows("errors", "count", "errors_total", tags=ERROR_TAGS, sampled=False, anchor=_ERRORS),
        _rows("requests", "count", "count", sampled=False, anchor="metrics.md#statistics-and-the-summary"),
        _rows("output_tokens_per_s", "throughput", "output_tokens_per_s"),
        _rows("requests_per_s", "throughput", "requests_per_s"),
        _rows("cost_usd", "cost", "cost_usd", sampled=False, anchor=_COST),
        _rows(
            "cost_per_1k_tokens", "cost", "cost_usd", ("prompt_tokens", "completion_tokens"), scale=1000.0, anchor=_COST
        ),
        _rows("goodput", "share", "good_requests", ("count",), anchor="thresholds.md#goodput"),
        _rows(
            "cache_hit_rate",
            "share",
            "cached_prompt_tokens",
            ("cache_reported_prompt_tokens",),
            anchor="metrics.md#prompt-cache-hit-rate",
        ),
        _compliance("schema_valid", "checked", "checked outputs"),
        _compliance("deterministic", "repeat_pairs", "repeat pairs"),
    )
}

# unit -> factor to base units (ms for latencies, a fraction for rates and shares); "" is a bare number
UNITS: dict[str, dict[str, Decimal]] = {
    "latency": {"": Decimal(1), "ms": Decimal(1), "s": Decimal(1000)},
    "rate": {"": Decimal(1), "%": Decimal("0.01")},
    "share": {"": Decimal(1), "%": Decimal("0.01")},
    "throughput": {"": Decimal(1)},
    "cost": {"": Decimal(1)},
    "count": {"": Decimal(1)},
}
_ALIASES = {"avg": "mean", "med": "p50"}
_OP_FIXES = {"=": "==", "=<": "<=", "=>": ">=", "<<": "<", ">>": ">"}
_CLASS_HINTS = {"ok": "ok is the success, not an error", "circuit_open": "circuit_open is no attempt: no row counts it"}
_HEAD = re.compile(r"\s*([A-Za-z_]\w*)")
_TAIL = re.compile(r"\s*(?P<agg>[A-Za-z][\w().]*)?\s*(?P<op>[<>=!]+)\s*(?P<value>.*?)\s*$")
_TAG = re.compile(r"\s*(?P<key>\w+)\s*[=:]\s*(?P<value>.*?)\s*$")
_TAG_VALUE = re.compile(r"[\w.\-:@/+]+")
_NUMBER = re.compile(r"(?P<num>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(?P<unit>.*)")
_K6_PERCENTILE = re.compile(r"p\((\d+(?:\.\d+)?)\)")
_PERCENTILE = re.compile(r"p(\d+(?:\.\d+)?)")
_BASELINE = re.compile(r"baseline\s*(?:(?P<sign>[+-])\s*(?P<num>\d+(?:\.\d*)?|\.\d+)\s*(?P<unit>\S*))?\s*")
_JOINED = re.compile(r",\s*[A-Za-z_]\w*[^,]*?(?:[<>]|==)")
GRAMMAR = "METRIC[{TAG=VALUE,...}] [AGG] OP NUMBER[UNIT], e.g. 'ttft p95 < 150ms'"


@dataclass(frozen=True)
class Threshold:
    """A parsed threshold. `limit` is in base units (ms for latencies, a fraction for rates and shares); `unit` is
    the unit as written ("" for a bare number) so reports can speak the user's unit; `aggregate` is None for
    metrics that take none; `tags` are (name, value) pairs in the order scenario, endpoint, class; `origin` names a
    scenario SLO default ("support_chat SLO", loadlib.verdicts.slo), "" for the user's own. `abort_on_fail` and
    `abort_delay_s` are k6's abortOnFail and delayAbortEval of a threshold file's object form (seconds); None leaves
    them to --llm-abort-on-fail and --llm-abort-delay (loadlib.locust.abort). `relative` is the signed margin of a
    threshold against the baseline (`baseline + 10%`: 0.1; `baseline`: 0.0), None for a fixed limit; its `limit` is
    then the factor 1 + relative, made a value only by the baseline."""

    expression: str
    metric: str
    tags: tuple[tuple[str, str], ...]
    aggregate: str | None
    op: str
    limit: float
    unit: str
    origin: str = ""
    relative: float | None = None
    abort_on_fail: bool | None = None
    abort_delay_s: float | None = None


class _Refusal:
    """Builds the one-line ConfigError for one expression: where, the expression, the problem, a hint, the list."""

    def __init__(self, where: str, expr: str) -> None:
        self.prefix = f"{where} {expr!r}"

    def __call__(self, problem: str, got: str = "", valid: Sequence[str] = (), hint: str = "") -> ConfigError:
        close = difflib.get_close_matches(got.lower(), list(valid), n=1, cutoff=0.6) if got else []
        if close and close[0] != got:
            problem += f" (did you mean {close[0]!r}?)"
        parts = [f"{self.prefix}: {problem}"]
        if hint:
            parts.append(hint)
        if valid:
            parts.append("valid: " + ", ".join(valid))
        return ConfigError("; ".join(parts))


def parse(expr: str, where: str = "--llm-threshold") -> Threshold:
    """One expression to a Threshold, or a ConfigError naming what is wrong (module docstring: the grammar)."""
    refuse = _Refusal(where, expr)
    if not isinstance(expr, str) or not expr.strip():
        raise refuse("an empty threshold", hint=f"expected {GRAMMAR}")
    _check_joined(expr, refuse)
    head = _HEAD.match(expr)
    if head is None:
        raise refuse("does not start with a metric name", valid=list(METRICS))
    metric = _metric(head.group(1), refuse)
    tags, rest = _split_tags(expr[head.end() :], refuse)
    tail = _TAIL.fullmatch(rest)
    if tail is None:
        raise refuse(f"no comparison after {metric.name!r}", hint=f"expected {GRAMMAR}")
    relative = _relative(tail["value"], tail["op"], refuse)
    limit, unit = (1.0 + relative, "") if relative is not None else _limit(tail["value"], metric, refuse)
    return Threshold(
        expression=expr.strip(),
        metric=metric.name,
        tags=_tags(tags, metric, refuse),
        aggregate=_aggregate(tail["agg"], metric, refuse),
        op=_op(tail["op"], refuse),
        limit=limit,
        unit=unit,
        relative=relative,
    )


def _relative(text: str, op: str, refuse: _Refusal) -> float | None:
    """`baseline`, `baseline + 10%`, `baseline - 5%`: the signed margin as a fraction; None for a plain number."""
    if not text.lower().startswith("baseline"):
        return None
    m = _BASELINE.fullmatch(text)
    if m is None or (m["num"] and m["unit"] != "%"):
        raise refuse(f"{text!r} is not a baseline limit", hint="write 'baseline', 'baseline + 10%' or 'baseline - 5%'")
    if op == "==":
        raise refuse("'==' against a baseline is never judged", hint="use <, <=, > or >=", valid=OPS[:4])
    margin = float(Decimal(m["num"] or 0) / 100) * (-1.0 if m["sign"] == "-" else 1.0)
    if margin <= -1.0:
        raise refuse(f"{text!r} leaves nothing of the baseline", hint="a margin below the baseline is under 100%")
    return margin


def braces(pairs: Sequence[tuple[str, str]]) -> str:
    """A tag filter as written in an expression: `{scenario=chat,endpoint=primary}`."""
    return "{" + ",".join(f"{k}={v}" for k, v in pairs) + "}"


def parse_all(exprs: Sequence[str], where: str = "--llm-threshold") -> list[Threshold]:
    """Every expression, in order; the first bad one raises (its message names it)."""
    return [parse(e, where) for e in exprs]


def parse_option(text: str | None, where: str = "--llm-threshold") -> list[Threshold]:
    """The `;`-separated value of --llm-threshold (the flag repeated, locust.conf or LLM_THRESHOLD give one string).

    Empty pieces between thresholds are dropped, so a trailing `;` is harmless. But a value given with no threshold
    at all (`;`, ` ; `) is refused: whoever wrote it meant some threshold, and a run judged by none keeps Locust's
    exit code. An explicit empty string cannot be told from the option's default, so it means no thresholds."""
    text = str(text or "")
    written = [t for t in text.split(";") if t.strip()]
    if text and not written:
        raise ConfigError(
            f"{where} {text!r}: no threshold in it, only separators and spaces; write e.g. "
            f"'ttft p95 < 1s; error_rate < 1%', or leave {where} out"
        )
    return parse_all(written, where)


def _check_joined(expr: str, refuse: _Refusal) -> None:
    """`ttft p95 < 1s, error_rate < 1%`: a comma outside a tag filter followed by another comparison."""
    if _JOINED.search(re.sub(r"\{[^}]*\}", "{}", expr)):
        raise refuse(
            "two thresholds joined with ','", hint="separate thresholds with ';': 'ttft p95 < 1s; error_rate < 1%'"
        )


def _metric(name: str, refuse: _Refusal) -> Metric:
    if name in METRICS:
        return METRICS[name]
    hint = METRIC_HINTS.get(name, "")
    raise refuse(
        f"unknown metric {name!r}" + (f": {hint}" if hint else ""), got="" if hint else name, valid=list(METRICS)
    )


def _split_tags(rest: str, refuse: _Refusal) -> tuple[str | None, str]:
    """The text inside `{...}` right after the metric name (None without braces) and what follows it."""
    stripped = rest.lstrip()
    if not stripped.startswith("{"):
        return None, rest
    end = stripped.find("}")
    if end < 0:
        raise refuse("the tag filter '{' is never closed with '}'")
    return stripped[1:end], stripped[end + 1 :]


def _tags(text: str | None, metric: Metric, refuse: _Refusal) -> tuple[tuple[str, str], ...]:
    if text is None:
        return ()
    if not text.strip():
        raise refuse("an empty tag filter '{}'", hint="drop the braces or write {TAG=VALUE}", valid=metric.tags)
    pairs: dict[str, str] = {}
    for item in text.split(","):
        key, value = _tag(item, metric, refuse)
        if key in pairs:
            raise refuse(f"tag {key!r} given twice", hint="a filter selects one value per tag")
        pairs[key] = value
    return tuple((k, pairs[k]) for k in TAG_ORDER if k in pairs)


def _tag(item: str, metric: Metric, refuse: _Refusal) -> tuple[str, str]:
    m = _TAG.fullmatch(item)
    if m is None:
        raise refuse(f"tag filter item {item.strip()!r} is not TAG=VALUE", valid=metric.tags)
    key, value = m["key"], m["value"]
    _check_tag_name(key, metric, refuse)
    if not _TAG_VALUE.fullmatch(value):
        raise refuse(f"tag {key!r} has the value {value!r}", hint="values are names: letters, digits, _ . - : @ / +")
    if key == "class" and value not in ERROR_CLASSES:
        hint = _CLASS_HINTS.get(value, "")
        raise refuse(f"unknown error class {value!r}", got=value, valid=ERROR_CLASSES, hint=hint)
    return key, value


def _check_tag_name(key: str, metric: Metric, refuse: _Refusal) -> None:
    if key in metric.tags:
        return
    if key == "model":
        hint = "summary rows are per scenario and endpoint and carry no model: filter on the endpoint"
        raise refuse("tag 'model' is not available", hint=hint, valid=metric.tags)
    if key == "class":
        why = "latencies come from successful requests only" if metric.kind == "latency" else "it is no error metric"
        raise refuse(
            f"tag 'class' does not apply to {metric.name}: {why}", hint="use error_rate{class=...}", valid=metric.tags
        )
    if not metric.tags:
        raise refuse(f"{metric.name} takes no tags: it is a run-wide share of the compliance scenario")
    known = key in TAG_ORDER
    problem = f"tag {key!r} does not apply to {metric.name}" if known else f"unknown tag {key!r}"
    raise refuse(problem, got=key, valid=metric.tags)


def _aggregate(written: str | None, metric: Metric, refuse: _Refusal) -> str | None:
    if not metric.aggregates:
        if written:
            hint = AGGREGATE_HINTS.get(written) or f"it is a {metric.kind}: write '{metric.name} OP NUMBER'"
            raise refuse(f"{metric.name} takes no aggregate, got {written!r}", hint=hint)
        return None
    valid = aggregate_names(metric)
    if not written:
        raise refuse(f"{metric.name} needs an aggregate", hint=f"e.g. '{metric.name} p95 < 150ms'", valid=valid)
    k6 = _K6_PERCENTILE.fullmatch(written)
    name = f"p{k6.group(1)}" if k6 else _ALIASES.get(written, written)
    if _PERCENTILE.fullmatch(name):
        return _percentile_name(name, written, refuse)
    if name not in metric.aggregates:
        raise refuse(f"unknown aggregate {written!r} for {metric.name}", got=name, valid=valid)
    return name


def aggregate_names(metric: Metric) -> list[str]:
    """A latency's aggregates as the refusals list them: the summary's percentiles, then any other, max, mean."""
    named = [a for a in metric.aggregates if a.startswith("p")]
    return [*named, "pN (any percentile, e.g. p90, p99.9, p(99.9))", *(a for a in metric.aggregates if a not in named)]


def _percentile_name(name: str, written: str, refuse: _Refusal) -> str:
    """`p99.90` and `p(99.9)` as `p99.9`; 0 and 100 are no percentiles to judge (p100 is `max`)."""
    q = Decimal(name[1:])
    if not 0 < q < 100:
        hint = "p100 is the maximum: write 'max'" if q >= 100 else "p0 is the minimum, which no threshold reads"
        raise refuse(f"percentile {written!r} is not between 0 and 100", hint=hint)
    return f"p{q.normalize():f}"


def _op(written: str, refuse: _Refusal) -> str:
    if written in OPS:
        return written
    fix = _OP_FIXES.get(written)
    raise refuse(f"unknown operator {written!r}", hint=f"did you mean {fix!r}?" if fix else "", valid=OPS)


def _limit(text: str, metric: Metric, refuse: _Refusal) -> tuple[float, str]:
    """The number in base units and the unit as written."""
    m = _NUMBER.fullmatch(text)
    if m is None:
        raise refuse(f"{text!r} is not a number", hint="write a non-negative decimal such as 150, 0.5 or 1e-3")
    units = UNITS[metric.kind]
    unit = m["unit"].strip()
    if re.search(r"[\d,.]", unit):
        raise refuse(f"{text!r} is not a number", hint="write a plain decimal such as 1.5, without separators")
    if unit not in units:
        raise refuse(f"unit {unit!r} does not fit {metric.name} (a {metric.kind})", got=unit, valid=_unit_list(metric))
    try:
        value = Decimal(m["num"]) * units[unit]
    except InvalidOperation:
        raise refuse(f"{text!r} is not a number") from None
    _check_range(value, unit, metric, refuse)
    return float(value), unit


def _check_range(value: Decimal, unit: str, metric: Metric, refuse: _Refusal) -> None:
    if not math.isfinite(float(value)):
        raise refuse("the limit is too large a number")
    if metric.kind in ("rate", "share") and value > 1:
        hint = "a bare number is a fraction 0..1: write 5% or 0.05" if not unit else "it cannot pass 100%"
        raise refuse(f"{metric.name} is a {metric.kind} between 0 and 1 (100%), the limit is above it", hint=hint)


def _unit_list(metric: Metric) -> list[str]:
    """Valid units with what a bare number means, for the error message."""
    bare = {"latency": "(none) = ms", "rate": "(none) = a fraction 0..1", "share": "(none) = a fraction 0..1"}
    return [u for u in UNITS[metric.kind] if u] + [bare.get(metric.kind, "(none)")]


def load_file(path: str | Path) -> list[Threshold]:
    """--llm-thresholds-file's thresholds (loadlib.verdicts.threshold_file: the shapes, k6's object form). Imported
    here when called, because that module builds on this one's parser."""
    from loadlib.verdicts.threshold_file import load_file as load

    return load(path)
