"""Drill figures: pure functions over a merged `Ledger` (docs/failover.md, "Drill figures", defines each one).

Why per-worker values and not one pooled first: each node has its own breakers and its own users, so "how long until
users were failed over" has one answer per node; the check holds the slowest node to the target and names any node
that never got there, where a pooled minimum would hide it. Seconds are rounded to the millisecond, rates and shares
to 6 decimals, TTFTs to 3 decimals of a millisecond (as in the summary).
"""

from __future__ import annotations

import math
from typing import Any

from loadlib.failover.ledger import Drill, Ledger, NodeDrill

WINDOWS = ("before", "during", "after")


def drill_figures(ledger: Ledger, targets: Any) -> list[dict[str, Any]]:
    """One JSON-able dict per drill, by start time. `targets` is a `pool.Targets` or anything with its attributes
    (failover_within_s, user_error_rate_max, detect_within_s, failback_within_s; None: not checked)."""
    series = traffic_series(ledger)
    return [_drill(ledger.t0, d, targets, series) for d in ledger.ordered()]


def _drill(t0: float | None, d: Drill, targets: Any, series: dict[str, Any]) -> dict[str, Any]:
    fig: dict[str, Any] = {
        "index": d.index,
        "endpoint": d.endpoint,
        "fault": d.fault,
        "start": d.start,
        "stop": d.stop,
        "running": d.stop is None,
        "at_s": _r(d.start - t0) if t0 is not None else None,
        "duration_s": _r(d.stop - d.start) if d.stop is not None else None,
        "workers": sorted(w for w, n in d.nodes.items() if n.exposed),
        "detect_s": _spread(d.nodes, "detect_at", d.start),
        "failover_s": _spread(d.nodes, "failover_at", d.start),
        "failback_s": _spread(d.nodes, "failback_at", d.stop),
        **_counts(d),
        "ttft_p95_before_ms": _r(d.ttft_before_ms.percentile(95)),
        "ttft_p95_failed_over_ms": _r(d.ttft_failed_over_ms.percentile(95)),
        "ttft_p95_users_before_ms": _r(d.ttft_users_before_ms.percentile(95)),
        "ttft_p95_during_ms": _r(d.ttft_during_ms.percentile(95)),
        "ttft_p95_after_ms": _r(d.ttft_after_ms.percentile(95)),
        "traffic_share": {w: _share(series, lo, hi) for w, (lo, hi) in zip(WINDOWS, _windows(d), strict=True)},
    }
    fig["checks"] = _checks(fig, targets)
    fig["passed"] = all(c["passed"] for c in fig["checks"])
    return fig


def _spread(nodes: dict[str, NodeDrill], first: str, origin: float | None) -> dict[str, Any]:
    """{p50, max, per_worker}: each node's first minus `origin`; p50 is nearest-rank over the nodes that have one."""
    per_worker: dict[str, float | None] = {}
    for w in sorted(nodes):
        at = getattr(nodes[w], first)
        per_worker[w] = _r(at - origin) if at is not None and origin is not None else None
    values = sorted(v for v in per_worker.values() if v is not None)
    p50 = values[max(0, math.ceil(len(values) / 2) - 1)] if values else None
    return {"p50": p50, "max": values[-1] if values else None, "per_worker": per_worker}


def _counts(d: Drill) -> dict[str, Any]:
    return {
        "user_requests": d.user_requests,
        "user_errors": d.user_errors,
        "user_error_rate": _rate(d.user_errors, d.user_requests),
        "user_retried": d.user_retried,
        "switch_requests": d.switch_requests,
        "switch_errors": d.switch_errors,
        "switch_error_rate": _rate(d.switch_errors, d.switch_requests),
        "attempts": d.attempts,
        "attempt_errors": d.attempt_errors,
        "in_flight": d.in_flight,
        "in_flight_failed": d.in_flight_failed,
    }


def _windows(d: Drill) -> list[tuple[float, float]]:
    """[since, start), [start, stop), [stop, next start): empty windows are (inf, inf)."""
    stop = d.stop if d.stop is not None else math.inf
    after = (stop, d.until if d.until is not None else math.inf) if d.stop is not None else (math.inf, math.inf)
    return [(d.since, d.start), (d.start, stop), after]


# -- checks ------------------------------------------------------------------------------------------------------------

_LIMITS = {
    "failover_s": "failover_within_s",
    "user_error_rate": "user_error_rate_max",
    "detect_s": "detect_within_s",
    "failback_s": "failback_within_s",
}
_TIMED = {
    "detect_s": ("detection", "opened its breaker of {endpoint}"),
    "failover_s": ("failover", "failed over"),
    "failback_s": ("failback", "failed back"),
}


def _checks(fig: dict[str, Any], targets: Any) -> list[dict[str, Any]]:
    """One check per target that is set, in the order of _LIMITS; failback is not judged while the drill runs."""
    out = []
    for name, attr in _LIMITS.items():
        limit = getattr(targets, attr, None)
        if limit is None or (name == "failback_s" and fig["running"]):
            continue
        out.append(_error_check(fig, limit) if name == "user_error_rate" else _timed_check(fig, name, limit))
    return out


def _timed_check(fig: dict[str, Any], name: str, limit: float) -> dict[str, Any]:
    """The slowest node against the limit; a node that sent requests preferring the drilled endpoint in the drill but
    never got there fails the check by name (its time is not a number to compare)."""
    label, verb = _TIMED[name]
    value = fig[name]["max"]
    missing = [w for w in fig["workers"] if fig[name]["per_worker"].get(w) is None]
    if not fig["workers"]:
        return _check(name, value, limit, False, f"no worker sent a request preferring {fig['endpoint']} in the drill")
    if missing:
        who = f"worker{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
        return _check(name, value, limit, False, f"{who} never {verb.format(endpoint=fig['endpoint'])}")
    passed = value <= limit
    return _check(name, value, limit, passed, f"{label} {_secs(value)} s {'<=' if passed else '>'} {limit:g} s")


def _error_check(fig: dict[str, Any], limit: float) -> dict[str, Any]:
    rate = fig["user_error_rate"]
    if rate is None:
        return _check("user_error_rate", None, limit, False, "no user request completed in the drill")
    passed = rate <= limit
    op = "<=" if passed else ">"
    return _check("user_error_rate", rate, limit, passed, f"user errors {_pct(rate)} % {op} {limit * 100:g} %")


def _check(name: str, value: float | None, limit: float, passed: bool, reason: str) -> dict[str, Any]:
    return {"name": name, "value": value, "limit": limit, "passed": passed, "reason": reason}


# -- traffic and quality -----------------------------------------------------------------------------------------------


def traffic_series(ledger: Ledger) -> dict[str, Any]:
    """The bins as arrays for charts: bin k (from "t0", the run start) covers [t0 + k, t0 + k + step_s); 1-s bins
    until a long run doubles them (loadlib.failover.traffic)."""
    step = ledger.traffic_step
    keys = [k for bins in ledger.traffic.values() for k in bins]
    if not keys:
        return {"t0": ledger.t0, "step_s": step, "seconds": [], "by_endpoint": {}, "failed": {}}
    lo, hi = min(0, *keys), max(keys)
    seconds = list(range(lo, hi + 1, step))
    by_endpoint, failed = {}, {}
    for e in sorted(ledger.traffic):
        bins = ledger.traffic[e]
        by_endpoint[e] = [bins.get(k, (0, 0))[0] for k in seconds]
        failed[e] = [bins.get(k, (0, 0))[1] for k in seconds]
    return {"t0": ledger.t0, "step_s": step, "seconds": seconds, "by_endpoint": by_endpoint, "failed": failed}


def _share(series: dict[str, Any], lo: float, hi: float) -> dict[str, float | None]:
    """Each endpoint's share of the attempts whose bin midpoint t0 + k + step / 2 lies in [lo, hi); None: none."""
    seconds, t0, step = series["seconds"], series["t0"], series["step_s"]
    if not seconds or t0 is None:
        return {}
    first = _index(lo - t0 - step / 2, seconds, step)
    last = _index(hi - t0 - step / 2, seconds, step)
    sums = {e: sum(v[first:last]) for e, v in series["by_endpoint"].items()}
    total = sum(sums.values())
    return {e: _r(n / total, 6) if total else None for e, n in sums.items()}


def _index(x: float, seconds: list[int], step: int) -> int:
    """Position of the first bin k >= x in `seconds` (contiguous bins of `step`), clamped to the list."""
    if x == math.inf:
        return len(seconds)
    if x == -math.inf:
        return 0
    return min(max(math.ceil((x - seconds[0]) / step), 0), len(seconds))


def quality_figures(ledger: Ledger) -> dict[str, dict[str, Any]]:
    """Per endpoint: checked outputs, ok ones, the shares of schema-valid, deterministic and truncated outputs among
    the checked ones (None when none was), and output tokens of the ok ones."""
    out = {}
    for e in sorted(ledger.fallback):
        q = ledger.fallback[e]
        c = q.counts
        checked = sum(c.values())
        out[e] = {
            "checked": checked,
            **c,
            "schema_valid_share": _rate(checked - c["schema_invalid"], checked),
            "deterministic_share": _rate(checked - c["nondeterministic"], checked),
            "truncated_share": _rate(c["truncated"], checked),
            "output_tokens_p50": _r(q.output_tokens.percentile(50)),
            "output_tokens_mean": _r(q.output_tokens.mean),
        }
    return out


# -- printed summary ---------------------------------------------------------------------------------------------------


def lines(figures: list[dict[str, Any]], quality: dict[str, dict[str, Any]]) -> list[str]:
    """The drills' part of the printed summary: three lines per drill, then one per endpoint with fallback quality."""
    out = []
    for f in figures:
        out += [_headline(f), _volume_line(f), _verdict_line(f)]
    for e, q in quality.items():
        if q["checked"]:
            out.append(_quality_line(e, q))
    return out


def _headline(f: dict[str, Any]) -> str:
    at = f"+{_secs(f['at_s'])} s" if f["at_s"] is not None else f"{f['start']:.3f}"
    span = "still running" if f["running"] else f"for {_secs(f['duration_s'])} s"
    det, fo, fb = f["detect_s"], f["failover_s"], f["failback_s"]
    n = sum(v is not None for v in det["per_worker"].values())
    text = f"drill {f['index']} {f['endpoint']} {f['fault']} at {at} {span}: "
    text += f"detected {_secs(det['p50'])} s p50 / {_secs(det['max'])} s max ({n} worker{'s' if n != 1 else ''}); "
    text += f"failed over {_secs(fo['p50'])} / {_secs(fo['max'])} s"
    return text + ("" if f["running"] else f"; failed back {_secs(fb['max'])} s max")


def _volume_line(f: dict[str, Any]) -> str:
    return (
        f"  user-visible errors {f['user_errors']} of {f['user_requests']} ({_pct(f['user_error_rate'])} %) in the "
        f"drill, {f['switch_errors']} of {f['switch_requests']} in the switch; attempt errors {f['attempt_errors']} "
        f"of {f['attempts']}; TTFT p95 failed-over {_ms(f['ttft_p95_failed_over_ms'])} ms vs "
        f"{_ms(f['ttft_p95_before_ms'])} ms before (users {_ms(f.get('ttft_p95_users_before_ms'))} ms before, "
        f"{_ms(f.get('ttft_p95_during_ms'))} ms during, {_ms(f.get('ttft_p95_after_ms'))} ms after); traffic "
        f"{_traffic(f)}; in flight at the start {f.get('in_flight', 0)} ({f.get('in_flight_failed', 0)} failed)"
    )


def _traffic(f: dict[str, Any]) -> str:
    """Each endpoint's share before -> during -> after, the drilled endpoint first ("-": no attempts then)."""
    shares = [f["traffic_share"][w] or {} for w in WINDOWS]
    others = sorted({e for s in shares for e in s} - {f["endpoint"]})
    return ", ".join(
        f"{e} " + " -> ".join("-" if s.get(e) is None else f"{s[e] * 100:.0f} %" for s in shares)
        for e in [f["endpoint"], *others]
    )


def _verdict_line(f: dict[str, Any]) -> str:
    if not f["checks"]:
        return "  verdict -: no targets set"
    return f"  verdict {'PASS' if f['passed'] else 'FAIL'}: " + "; ".join(c["reason"] for c in f["checks"])


def _quality_line(endpoint: str, q: dict[str, Any]) -> str:
    pct = _pct
    return (
        f"fallback quality {endpoint}: {q['checked']} checked, {q['ok']} ok; schema-valid "
        f"{pct(q['schema_valid_share'])} %, deterministic {pct(q['deterministic_share'])} %, truncated "
        f"{pct(q['truncated_share'])} %; output tokens p50 {_ms(q['output_tokens_p50'])} mean "
        f"{_ms(q['output_tokens_mean'])}"
    )


# -- numbers -----------------------------------------------------------------------------------------------------------


def _rate(n: int, of: int) -> float | None:
    return _r(n / of, 6) if of else None


def _r(v: float | None, digits: int = 3) -> float | None:
    return None if v is None else round(v, digits)


def _secs(v: float | None) -> str:
    """Two decimals below a second (detection is sub-second), one below 100 s, whole seconds above."""
    if v is None:
        return "-"
    return f"{v:.2f}" if abs(v) < 1 else f"{v:.1f}" if abs(v) < 100 else f"{v:.0f}"


def _pct(fraction: float | None) -> str:
    """A fraction as percent: two decimals below 1 % (an error budget of 1 % needs them), one below 100 %."""
    if fraction is None:
        return "-"
    v = fraction * 100
    return f"{v:.2f}" if abs(v) < 1 else f"{v:.1f}" if abs(v) < 100 else f"{v:.0f}"


def _ms(v: float | None) -> str:
    """As the summary table: one decimal below 100, whole numbers above."""
    if v is None:
        return "-"
    return f"{v:.1f}" if abs(v) < 100 else f"{v:.0f}"
