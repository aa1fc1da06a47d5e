"""Reading run summaries (`--llm-summary`, schemas/summary-v1.schema.json) into the candidates a comparison ranks.

Every endpoint of every summary is one candidate: one summary per endpoint, or one summary whose rows hold several
endpoints measured side by side in one run (a pool under one load). An endpoint's scenario rows become one set of
figures: counts, tokens, cost and throughput add up exactly; percentiles cannot, so with several rows they are
request-weighted means of the rows' percentiles (`Measured.merge` says which; the report says so), except when the
summary holds one endpoint only, whose total row is exact.

`read_summary` is the only I/O; a problem is a `CompareInputError` of one line. The rest is pure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from loadlib.metrics.summary import USAGE_MIN_REQUESTS, USAGE_WARN_SHARE, json_count, json_number
from loadlib.reports.compare import Context, Measured
from loadlib.verdicts.baseline_file import read_json

PROBE_SCENARIO = "long_document"
_SIDE = (
    ("ttft_p50", "ttft", "p50"),
    ("ttft_p95", "ttft", "p95"),
    ("e2e_p95", "e2e", "p95"),
    ("tpot_p50", "tpot", "p50"),
)


class CompareInputError(Exception):
    """An input the comparison cannot use; the message is one line naming the file."""


def read_summary(path: str) -> dict[str, Any]:
    """A summary file, checked enough to be compared: a mapping with `meta` and a non-empty list of rows."""
    data = _json(path)
    rows = data.get("rows") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(rows, list) or not isinstance(data.get("meta"), dict):
        raise CompareInputError(
            f"{path}: not a loadlib run summary (no 'meta' and 'rows'); write one with --llm-summary"
        )
    if not rows:
        raise CompareInputError(f"{path}: the summary has no rows (the run sent no request); nothing to compare")
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("endpoint"), str):
            raise CompareInputError(f"{path}: rows[{i}] is not a summary row (no 'endpoint'); is it a summary?")
    return data


def _json(path: str) -> Any:
    return read_json(path, path, CompareInputError)


def candidates(summary: dict[str, Any], file: str) -> list[Measured]:
    """One candidate per endpoint of the summary, in the order the rows first name them."""
    groups = _by_endpoint(summary["rows"])
    alone = len(groups) == 1
    meta = summary.get("meta") or {}
    owner = _probe_owner(summary, groups)
    out = []
    for endpoint, rows in groups.items():
        total = summary.get("total") if alone and len(rows) > 1 else None
        exact = isinstance(total, dict) and isinstance(total.get("latency_ms"), dict)
        out.append(
            Measured(
                name=endpoint,
                endpoint=endpoint,
                file=file,
                run_id=_text(meta.get("run_id")),
                scenarios=tuple(str(r.get("scenario") or "-") for r in rows),
                merge="one row" if len(rows) == 1 else "exact" if exact else "weighted",
                context=_context(summary, endpoint, owner),
                model=_model(meta, endpoint, alone),
                provider=_text(meta.get("provider")) if alone else None,
                **_figures([total] if exact and isinstance(total, dict) else rows),
            )
        )
    return out


def unique_names(found: Iterable[Measured]) -> list[Measured]:
    """Endpoint names as labels; one that recurs across summaries gets its run id (or file) added."""
    found = list(found)
    counts: dict[str, int] = {}
    for m in found:
        counts[m.endpoint] = counts.get(m.endpoint, 0) + 1
    out, seen = [], set()
    for m in found:
        name = m.endpoint if counts[m.endpoint] == 1 else f"{m.endpoint} ({m.run_id or Path(m.file).stem})"
        while name in seen:
            name += "'"
        seen.add(name)
        out.append(replace(m, name=name))
    return out


def _by_endpoint(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["endpoint"], []).append(row)
    return groups


def _figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The measured figures of one endpoint's rows: sums where they add up, weighted percentiles where not."""
    return {
        "count": sum(json_count(r.get("count")) for r in rows),
        "ok": sum(json_count(r.get("ok")) for r in rows),
        "errors": _errors(rows),
        **{attr: _weighted(rows, metric, q) for attr, metric, q in _SIDE},
        "ttft_p95_ci": _interval(rows, "ttft"),
        "e2e_p95_ci": _interval(rows, "e2e"),
        "output_tps": _sum_or_none(json_number(r.get("output_tokens_per_s")) for r in rows),
        "prompt_tokens": sum(json_count(r.get("prompt_tokens")) for r in rows),
        "completion_tokens": sum(json_count(r.get("completion_tokens")) for r in rows),
        "cached_prompt_tokens": sum(json_count(r.get("cached_prompt_tokens")) for r in rows),
        "cache_write_tokens": sum(json_count(r.get("cache_write_tokens")) for r in rows),
        "cost_usd": _sum_or_none(json_number(r.get("cost_usd")) for r in rows),
        "unpriced_requests": sum(json_count(r.get("unpriced_requests")) for r in rows),
        "usage_rejected": sum(json_count(r.get("usage_rejected")) for r in rows),
        "usage_compared": sum(_deviation(rows, kind)[0] for kind in ("prompt", "completion")),
        "usage_off_share": _off_share(rows),
    }


def _weighted(rows: list[dict[str, Any]], metric: str, q: str) -> float | None:
    """A percentile over rows: exact for one row, else weighted by each row's sample count."""
    pairs = []
    for r in rows:
        d = (r.get("latency_ms") or {}).get(metric) or {}
        v, n = json_number(d.get(q)), json_count(d.get("count"))
        if v is not None and n > 0:
            pairs.append((v, n))
    if not pairs:
        return None
    return sum(v * n for v, n in pairs) / sum(n for _, n in pairs)


def _interval(rows: list[dict[str, Any]], metric: str) -> list[float | None] | None:
    """One row's p95 interval as its summary gives it; several rows' weighted p95 has none (docs/statistics.md)."""
    if len(rows) != 1:
        return None
    found = ((rows[0].get("latency_ms") or {}).get(metric) or {}).get("p95_ci")
    if not isinstance(found, list) or len(found) != 2:
        return None
    return [json_number(v) if v is not None else None for v in found]


def _errors(rows: list[dict[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in rows:
        for cls, n in (r.get("errors") or {}).items():
            out[str(cls)] = out.get(str(cls), 0) + json_count(n)
    return {k: v for k, v in sorted(out.items()) if v}


def _deviation(rows: list[dict[str, Any]], kind: str) -> tuple[int, int]:
    """(requests compared, of them over 10 % off) for prompt or completion tokens."""
    n = over = 0
    for r in rows:
        d = (r.get("token_estimate") or {}).get(kind) or {}
        n += json_count(d.get("count"))
        over += json_count(d.get("over_10pct"))
    return n, over


def _off_share(rows: list[dict[str, Any]]) -> float | None:
    """The largest share of compared requests whose server count was over 10 % off ours, when it warrants a warning."""
    shares = []
    for kind in ("prompt", "completion"):
        n, over = _deviation(rows, kind)
        if n >= USAGE_MIN_REQUESTS and over >= USAGE_WARN_SHARE * n:
            shares.append(over / n)
    return max(shares) if shares else None


def _probe_owner(summary: dict[str, Any], groups: dict[str, list[dict[str, Any]]]) -> str | None:
    """The endpoint a run's context probe measured: the only endpoint of the run, or the only one with rows of the
    long-document scenario; None when the probe's requests went to several endpoints (or no probe ran)."""
    if _probe(summary) is None:
        return None
    if len(groups) == 1:
        return next(iter(groups))
    owners = [e for e, rows in groups.items() if any(r.get("scenario") == PROBE_SCENARIO for r in rows)]
    return owners[0] if len(owners) == 1 else None


def _probe(summary: dict[str, Any]) -> dict[str, Any] | None:
    doc = (summary.get("scenarios") or {}).get(PROBE_SCENARIO) or {}
    probe = doc.get("probe") if isinstance(doc, dict) else None
    return probe if isinstance(probe, dict) else None


def _context(summary: dict[str, Any], endpoint: str, owner: str | None) -> Context | None:
    probe = _probe(summary)
    if probe is None:
        return None
    if owner != endpoint:
        return Context(note="the run's probe went to several endpoints: run it against each alone")
    fit, failure = probe.get("largest_fit"), probe.get("smallest_failure")
    return Context(
        largest_fit=json_count(fit) if fit is not None else None,
        smallest_failure=json_count(failure) if failure is not None else None,
        failure=_text(probe.get("failure")),
    )


def _model(meta: dict[str, Any], endpoint: str, alone: bool) -> str | None:
    """The endpoint's model as the summary tells it: `meta.models[endpoint]` when present, else `meta.model` when the
    summary holds this endpoint only (a pool's summary names the run's default model there, not the endpoints')."""
    models = meta.get("models")
    if isinstance(models, dict) and isinstance(models.get(endpoint), str):
        return models[endpoint]
    return _text(meta.get("model")) if alone else None


def _sum_or_none(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _text(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None
