"""End-of-run summary (docs/influxdb.md): a JSON-able dict for machines and a fixed-width table for terminals.

`build_summary` turns merged `LLMStats` into plain numbers; `render_table` only reads that dict (so it also renders a
summary loaded back from JSON) and prints "-" for anything missing. Latencies are milliseconds rounded to 3 decimals
(the histograms are exact to 0.1 %), throughputs are per second of `duration_s`, costs are USD.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

from loadlib.histogram import RELATIVE_ERROR, Histogram
from loadlib.metrics.confidence import DEFAULT_LEVEL, quantile_intervals
from loadlib.metrics.decode import decode_facts, tpot_gap_line
from loadlib.metrics.modes import latency_modes, modes_line
from loadlib.metrics.saturation import Verdict
from loadlib.metrics.stats import LLMStats, LLMStatsEntry
from loadlib.metrics.summary_types import Distribution, Row, Summary

TOTAL_NAME = "Aggregated"
_MAIN_LATENCIES = (
    ("ttft", "ttft_ms"),
    ("ttfo", "ttfo_ms"),
    ("e2e", "e2e_ms"),
    ("tpot", "tpot_ms"),
    ("stream_tpot", "stream_tpot_ms"),
    ("stream_tail", "stream_tail_ms"),
    ("itl", "itl_ms"),
)
_SIDE_LATENCIES = (("first_event", "first_event_ms"), ("ttfb", "ttfb_ms"))
_MODAL = (("ttft", "ttft_ms"), ("e2e", "e2e_ms"))  # checked for separate modes (loadlib.metrics.modes)
# latencies whose histograms the summary file keeps (`with_histograms`): the percentiles with an interval
HISTOGRAM_LATENCIES = ("ttft", "ttfo", "tpot", "stream_tpot", "itl", "e2e")


def cache_hit_rate(cached: int, reported: int) -> float | None:
    """Cached prompt tokens over the whole prompts of the attempts that reported a cached count (docs/metrics.md,
    "Prompt-cache hit rate"); None when none did."""
    return _r(cached / reported, 6) if reported else None


def build_summary(
    stats: LLMStats,
    duration_s: float,
    saturation: Verdict | None,
    meta: dict[str, Any],
    request_slo: str = "",
    confidence: float = DEFAULT_LEVEL,
) -> Summary:
    """One row per (scenario, endpoint), sorted, plus the total row and the client-saturation verdict.

    Top level: meta, duration_s, rows, total, client_saturated (None: not checked), client (Verdict.to_dict or None).
    A row: name, scenario, endpoint, count, ok, cancelled (hedge losers, not errors), cut_off (still running at the end,
    not errors), errors_total, error_rate, errors {class: n}, latency_ms {ttft, ttfo, e2e, tpot, stream_tpot,
    stream_tail, itl: count/mean/p50/p95/p99/max; first_event, ttfb: count/mean/p50/p95; each percentile with its
    confidence interval at `confidence`, p50_ci/p95_ci/p99_ci (loadlib.metrics.confidence)},
    decode {tokens_per_event, tail_per_token_ms} (loadlib.metrics.decode), requests_per_s, ok_per_s,
    output_tokens_per_s (completion tokens of every attempt / duration_s), decode_tokens_per_s {p10, p50, p90},
    prompt/completion/cached_prompt token totals, cost_usd (None when nothing was priced), cost_per_1k_requests
    (priced cost per 1,000 attempts), unpriced_requests, stale_connection_retries (attempts sent again on a new
    connection after a stale kept-alive one: not errors), token_estimate {prompt, completion}, open_loop (None for
    closed-loop runs), modes {ttft, e2e: the modes of a multimodal distribution}, first_start_unix_ns,
    last_end_unix_ns, and with a per-request SLO (`request_slo`, its text)
    good_requests and goodput (their share of all attempts), else None.
    """
    rows = [_row(stats.entries[key], duration_s, confidence) for key in sorted(stats.entries)]
    total = _row(stats.total, duration_s, confidence, name=TOTAL_NAME)
    for row, e in zip([*rows, total], [*(stats.entries[k] for k in sorted(stats.entries)), stats.total], strict=True):
        row["good_requests"] = e.good if request_slo else None
        row["goodput"] = _r(e.good / e.requests, 6) if request_slo and e.requests else None
    return {
        "meta": dict(meta),
        "request_slo": request_slo or None,
        "duration_s": duration_s,
        "rows": rows,
        "total": total,
        "client_saturated": saturation.saturated if saturation is not None else None,
        "client": saturation.to_dict() if saturation is not None else None,
        "confidence": confidence_block(confidence),
    }


def confidence_block(level: float) -> dict[str, Any]:
    """The summary's `confidence`: how every p50_ci/p95_ci/p99_ci was computed (docs/statistics.md)."""
    return {
        "level": level,
        "method": "exact binomial ranks of order statistics, read from the merged histogram as bucket edges",
        "bucket_relative_width": round(2 * RELATIVE_ERROR, 6),
    }


def with_histograms(summary: Mapping[str, Any], stats: LLMStats) -> dict[str, Any]:
    """The summary with each row's (and the total's) latency histograms in `histograms` (Histogram.to_dict, only
    those with samples): what a later comparison pools and reads intervals from (docs/baseline.md). Only the summary
    file carries them: the web UI and the console need no buckets."""
    out = dict(summary)
    rows = summary.get("rows") or []
    out["rows"] = [_with_buckets(r, stats.entries.get((r["scenario"], r["endpoint"]))) for r in rows]
    if "total" in summary:
        out["total"] = _with_buckets(summary["total"], stats.total)
    return out


def _with_buckets(row: Row, e: LLMStatsEntry | None) -> Row:
    found = {k: getattr(e, f"{k}_ms") for k in HISTOGRAM_LATENCIES} if e is not None else {}
    return cast(Row, {**row, "histograms": {k: h.to_dict() for k, h in found.items() if h.count}})


def row_name(scenario: Any, endpoint: Any) -> str:
    """How a row is named everywhere (console, JSON, web UI, charts, reports): 'scenario @ endpoint'."""
    return f"{scenario} @ {endpoint}"


def _row(e: LLMStatsEntry, duration_s: float, confidence: float, name: str | None = None) -> Row:
    per_s = 1.0 / duration_s if duration_s > 0 else None
    latency: dict[str, Any] = {}
    for key, attr in _MAIN_LATENCIES:
        latency[key] = _dist(getattr(e, attr), (50, 95, 99), with_max=True, confidence=confidence)
    for key, attr in _SIDE_LATENCIES:
        latency[key] = _dist(getattr(e, attr), (50, 95), confidence=confidence)
    cost = e.cost_usd if e.priced else None
    return {
        "name": name or row_name(e.scenario, e.endpoint),
        "scenario": e.scenario,
        "endpoint": e.endpoint,
        "count": e.requests,
        "ok": e.ok,
        "cancelled": e.cancelled,
        "cut_off": e.cut_off,
        "errors_total": e.failed,
        "error_rate": _r(e.failed / e.requests, 6) if e.requests else None,
        "errors": dict(sorted(e.errors.items())),
        "latency_ms": latency,
        "decode": decode_facts(e.tpot_tokens, e.tpot_events, e.tpot_ms.count, e.stream_tail_ms.mean),
        "requests_per_s": _r(e.requests * per_s) if per_s is not None else None,
        "ok_per_s": _r(e.ok * per_s) if per_s is not None else None,
        "output_tokens_per_s": _r(e.completion_tokens_total * per_s) if per_s is not None else None,
        "decode_tokens_per_s": _dist(e.decode_tps, (10, 50, 90)),
        "prompt_tokens": e.prompt_tokens_total,
        "completion_tokens": e.completion_tokens_total,
        "cached_prompt_tokens": e.cached_prompt_tokens_total,
        "cache_reported_prompt_tokens": e.cache_reported_prompt_tokens_total,
        "cache_hit_rate": cache_hit_rate(e.cached_prompt_tokens_total, e.cache_reported_prompt_tokens_total),
        "cache_write_tokens": e.cache_write_tokens_total,
        "cost_usd": cost,
        "cost_per_1k_requests": cost / e.requests * 1000.0 if cost is not None and e.requests else None,
        "unpriced_requests": e.unpriced,
        "usage_rejected": e.usage_rejected,
        "stale_connection_retries": e.stale_connection_retries,
        "token_estimate": {
            "prompt": _deviation(e.prompt_dev_pct, e.prompt_dev_over_10pct, e.prompt_usage_ratio),
            "completion": _deviation(e.completion_dev_pct, e.completion_dev_over_10pct, e.completion_usage_ratio),
        },
        "open_loop": _open_loop(e),
        "modes": {key: found for key, attr in _MODAL if (found := latency_modes(getattr(e, attr)))},
        "first_start_unix_ns": e.first_start_unix_ns,
        "last_end_unix_ns": e.last_end_unix_ns,
    }


def _dist(h: Histogram, ps: Sequence[int], with_max: bool = False, confidence: float | None = None) -> Distribution:
    """count, mean, the percentiles `ps` (with their intervals when `confidence` is given) and perhaps max."""
    d: dict[str, Any] = {"count": h.count, "mean": _r(h.mean)}
    intervals = quantile_intervals(h, ps, confidence) if confidence is not None else [None] * len(ps)
    for p, v, interval in zip(ps, h.percentiles(ps), intervals, strict=True):
        d[f"p{p}"] = _r(v)
        if confidence is not None:
            d[f"p{p}_ci"] = interval.as_list() if interval else None
    if with_max:
        d["max"] = _r(h.max) if h.count else None
    return cast(Distribution, d)  # the keys `ps` names, which a TypedDict cannot spell out


def _deviation(h: Histogram, over: int, ratio: Histogram) -> dict[str, Any]:
    """Our token estimate against the server's usage: |estimate - usage| / usage in %, per request, and the median
    of usage / estimate (above 1: the server counts more than we do)."""
    p50, p95 = h.percentiles((50, 95))
    return {
        "count": h.count,
        "abs_pct_p50": _r(p50),
        "abs_pct_p95": _r(p95),
        "abs_pct_max": _r(h.max) if h.count else None,
        "over_10pct": over,
        "usage_ratio_p50": _r(ratio.percentile(50), 4),
    }


def _open_loop(e: LLMStatsEntry) -> dict[str, Any] | None:
    if not e.schedule_lag_ms.count:
        return None
    return {
        "schedule_lag_ms": _dist(e.schedule_lag_ms, (50, 99), with_max=True),
        "e2e_from_intended_ms": _dist(e.e2e_from_intended_ms, (50, 95, 99)),
        "ttft_from_intended_ms": _dist(e.ttft_from_intended_ms, (50, 95, 99)),
    }


def _r(v: float | None, digits: int = 3) -> float | None:
    return None if v is None else round(v, digits)


_COLUMNS = (
    ("name", "<"),
    ("reqs", ">"),
    ("errs", ">"),
    ("TTFT p50", ">"),
    ("p95", ">"),
    ("p99", ">"),
    ("E2E p50", ">"),
    ("p95", ">"),
    ("p99", ">"),
    ("TPOT p50", ">"),
    ("stream", ">"),
    ("tail", ">"),
    ("tok/s", ">"),
    ("cost $", ">"),
)


def render_table(summary: Mapping[str, Any]) -> str:
    """Fixed-width text: one line per scenario/endpoint and the total, then error, cost, open-loop and client lines."""
    rows = [r for r in summary.get("rows") or [] if r]
    total = summary.get("total")
    cells = [_cells(r) for r in rows]
    total_cells = _cells(total) if total else None
    header = [c for c, _ in _COLUMNS]
    widths = [
        max(len(x[i]) for x in [header, *cells, *([total_cells] if total_cells else [])]) for i in range(len(header))
    ]

    def line(values: list[str]) -> str:
        return "  ".join(f"{v:{a}{w}}" for v, (_, a), w in zip(values, _COLUMNS, widths, strict=True)).rstrip()

    meta = summary.get("meta") or {}
    title = "LLM summary"
    if meta.get("run_id"):
        title += f" of run {meta['run_id']}"
    if summary.get("duration_s") is not None:
        title += f" ({number_text(summary['duration_s'])} s)"
    legend = "; latencies in ms (stream: TPOT from the events alone; tail: last token to stream end)"
    level = (summary.get("confidence") or {}).get("level")
    if level is not None:
        legend += f"; [low–high]: {level * 100:g} % confidence interval (docs/statistics.md)"
    out = [title + legend, line(header)]
    out += [line(c) for c in cells]
    if total_cells:
        out.append("-" * len(line(header)))
        out.append(line(total_cells))
    for r in rows:
        errors = r.get("errors") or {}
        if errors:
            listed = ", ".join(f"{k} {v}" for k, v in sorted(errors.items(), key=lambda kv: (-kv[1], kv[0])))
            out.append(f"errors by class, {r.get('name', '-')}: {listed}")
    cut = (total or {}).get("cut_off")
    if cut:
        out.append(f"{cut} attempt{'s' * (cut != 1)} cut off by the end of the run (in count and cost, not errors)")
    stale = (total or {}).get("stale_connection_retries")
    if stale:
        out.append(stale_line(stale))
    unpriced = (total or {}).get("unpriced_requests")
    if unpriced:
        out.append(
            f"cost excludes {unpriced} request{'s' if unpriced != 1 else ''} of models missing from the price table"
        )
    rejected = (total or {}).get("usage_rejected")
    if rejected:
        out.append(
            f"usage rejected on {rejected} request{'s' if rejected != 1 else ''} (counts that were not sane, "
            "negative, fractional, huge or not numbers, or impossible together, e.g. cached above prompt): tokens "
            "and cost use our tiktoken estimate there"
        )
    for r in rows:
        ol = r.get("open_loop")
        if ol:
            lag = ol.get("schedule_lag_ms") or {}
            e2e = ol.get("e2e_from_intended_ms") or {}
            lag_text = f"schedule lag p50 {number_text(lag.get('p50'))} p99 {number_text(lag.get('p99'))} ms"
            e2e_text = "/".join(number_text(e2e.get(q)) for q in ("p50", "p95", "p99"))
            out.append(f"open loop, {r.get('name', '-')}: {lag_text}; E2E from intended send p50/p95/p99 {e2e_text} ms")
    out += _goodput_lines(summary)
    out += usage_lines(rows)
    out += [gap for r in rows if (gap := tpot_gap_line(r))]
    out += [modes_line(str(r.get("name", "-")), k, m) for r in rows for k, m in (r.get("modes") or {}).items()]
    out.append(client_line(summary.get("client")))
    return "\n".join(out)


def stale_line(n: int) -> str:
    """What the printed summary says of requests retried after a stale keep-alive connection, and how to avoid them."""
    return (
        f"{n} request{'s' * (n != 1)} met a stale keep-alive connection (closed by the server or a middlebox while "
        "idle, seen only once the request was sent) and went again on a new connection: not errors, the time lost is "
        "in their latencies; set --llm-keepalive-idle-s below the idle timeout of the server or its load balancer to "
        "avoid them"
    )


def _cells(r: dict[str, Any]) -> list[str]:
    lat = r.get("latency_ms") or {}

    def p(metric: str, q: str) -> str:
        return number_text((lat.get(metric) or {}).get(q))

    def ci(metric: str, q: str) -> str:
        return with_interval(lat.get(metric) or {}, q)

    return [
        str(r.get("name") or "-"),
        _int(r.get("count")),
        _int(r.get("errors_total")),
        p("ttft", "p50"),
        ci("ttft", "p95"),
        p("ttft", "p99"),
        p("e2e", "p50"),
        ci("e2e", "p95"),
        p("e2e", "p99"),
        p("tpot", "p50"),
        p("stream_tpot", "p50"),
        p("stream_tail", "p50"),
        number_text(r.get("output_tokens_per_s")),
        cost_text(r.get("cost_usd")),
    ]


USAGE_WARN_SHARE = 0.2  # of requests whose server count and our estimate differ by more than 10 %
USAGE_MIN_REQUESTS = 20
_DEPENDS = {"completion": "TPOT, tokens/s and cost use the server's count", "prompt": "cost uses the server's count"}


def usage_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """A warning per row and token kind where the server's usage and our tokenizer disagree by more than 10 % on at
    least USAGE_WARN_SHARE of the requests, with the share, the median ratio and the metrics that depend on it."""
    out = []
    for r in rows:
        for kind in ("prompt", "completion"):
            d = (r.get("token_estimate") or {}).get(kind) or {}
            n, over = int(d.get("count") or 0), int(d.get("over_10pct") or 0)
            if n < USAGE_MIN_REQUESTS or over < USAGE_WARN_SHARE * n:
                continue
            ratio = d.get("usage_ratio_p50")
            median = f"median server/estimate {ratio:.2f}" if ratio is not None else "no median"
            out.append(
                f"usage warning, {r.get('name', '-')}: the server's {kind} token counts differ from our tokenizer's by "
                f"over 10 % on {over} of {n} requests ({over / n * 100:.0f} %, {median}); {_DEPENDS[kind]}"
            )
    return out


def _goodput_lines(summary: Mapping[str, Any]) -> list[str]:
    """One line per row with its good share, when the run has a per-request SLO."""
    slo = summary.get("request_slo")
    if not slo:
        return []
    out = [f"goodput (requests that succeeded with {slo}):"]
    for r in summary.get("rows") or []:
        share = r.get("goodput")
        text = f"{share * 100:.1f} %" if share is not None else "-"
        out.append(f"  {r.get('name', '-')}: {text} ({_int(r.get('good_requests'))} of {_int(r.get('count'))})")
    return out


def client_line(client: dict[str, Any] | None) -> str:
    if not client:
        return "client: not checked (no loop-lag samples)"
    if client.get("saturated"):
        return "CLIENT SATURATED: " + "; ".join(client.get("reasons") or ["thresholds crossed"])
    lag = number_text(client.get("loop_lag_p99_ms"))
    line = f"client OK: loop lag p99 {lag} ms, CPU p90 {number_text(client.get('cpu_p90_percent'))} %"
    return "\n".join([line, *(f"client warning: {w}" for w in client.get("warnings") or ())])


def interval_text(ci: Sequence[float | None] | None) -> str:
    """`[172–191]`: a percentile's confidence interval as the console, the report and the web UI show it; `?` for a
    side the samples cannot bound, "" without an interval."""
    if not ci:
        return ""
    low, high = ci
    return f"[{'?' if low is None else number_text(low)}–{'?' if high is None else number_text(high)}]"


def with_interval(block: Mapping[str, Any], q: str) -> str:
    """`180 [172–191]`: a distribution's percentile `q` ("p95") with its interval, when the summary has one."""
    text = number_text(block.get(q))
    ci = interval_text(block.get(f"{q}_ci"))
    return f"{text} {ci}" if ci and text != "-" else text


def number_text(v: float | None) -> str:
    """1 decimal below 100 (a tenth of a millisecond is still signal there), whole numbers above."""
    if v is None:
        return "-"
    return f"{v:.1f}" if abs(v) < 100 else f"{v:.0f}"


def _int(v: int | None) -> str:
    return "-" if v is None else str(v)


def cost_text(v: float | None) -> str:
    """Cents for dollars, four decimals for cents, two significant digits below that."""
    if v is None:
        return "-"
    if v == 0 or abs(v) >= 1:
        return f"{v:.2f}"
    if abs(v) >= 1e-4:
        return f"{v:.4f}"
    return f"{v:.2g}"


def json_number(v: Any) -> float | None:
    """A finite number read back from a summary's JSON, else None (bools are not numbers here)."""
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return v


def json_count(v: Any) -> int:
    """A count read back from a summary's JSON; 0 when it is missing or not a number."""
    n = json_number(v)
    return int(n) if n is not None else 0
