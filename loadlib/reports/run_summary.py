"""The run report's parts that only the summary knows (pure HTML strings): run metadata, the verdict with its
thresholds, client health and failover incidents. Records carry no verdict, no user count and no loop lag or CPU."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from loadlib.outputs.incident_rows import HEADER as INCIDENT_HEADER
from loadlib.outputs.incident_rows import incident_row
from loadlib.outputs.markdown import STATUS_WORDS, threshold_limit, threshold_value
from loadlib.reports.html import esc, table

NO_SUMMARY = (
    "No summary was given (--llm-summary), so there is no verdict, no thresholds and no client health here; the table "
    "and plots come from the records alone, and throughput divides by the records' span."
)
NO_VERDICT = "The run recorded no verdict: it had no threshold, drill or scenario SLO to judge."


def para(text: str, cls: str = "") -> str:
    return f'<p class="{cls}">{esc(text)}</p>' if cls else f"<p>{esc(text)}</p>"


def utc(unix_s: float | None) -> str | None:
    if unix_s is None:
        return None
    return dt.datetime.fromtimestamp(unix_s, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def users_text(summary: Mapping[str, Any] | None) -> str:
    """Users come only from a distributed run's integrity part (each worker's most users); a local run has none."""
    workers = ((summary or {}).get("integrity") or {}).get("workers") or []
    if not workers:
        return "not recorded (see requests in flight)"
    return f"{sum(int(w.get('users_max') or 0) for w in workers)} (the sum of each worker's most)"


def meta_rows(summary: Mapping[str, Any] | None) -> list[tuple[str, Any]]:
    """The summary's run metadata as (label, value) pairs."""
    if not summary:
        return []
    meta = summary.get("meta") or {}
    target = " ".join(str(meta[k]) for k in ("provider", "model") if meta.get(k))
    host = str(meta.get("host") or "").split("://", 1)[-1]  # as text, not a URL: the page links to nothing
    return [
        ("target", f"{target} at {host}" if host else target or None),
        ("started", utc(meta.get("started_at"))),
        ("stopped", utc(meta.get("stopped_at"))),
        ("duration", f"{summary['duration_s']:.1f} s" if summary.get("duration_s") is not None else None),
        ("users", users_text(summary)),
    ]


def verdict_html(summary: Mapping[str, Any] | None) -> str:
    """The verdict's status, exit code and reasons, then the thresholds with pass or fail."""
    if summary is None:
        return para(NO_SUMMARY, "muted")
    verdict = summary.get("verdict")
    parts = [_verdict_line(verdict) if verdict else para(NO_VERDICT, "muted")]
    reasons = (verdict or {}).get("reasons") or []
    if reasons:
        parts.append("<ul>" + "".join(f"<li>{esc(r)}</li>" for r in reasons) + "</ul>")
    thresholds = summary.get("thresholds") or []
    if thresholds:
        parts.append(thresholds_table(thresholds))
    return "".join(parts)


def _verdict_line(verdict: Mapping[str, Any]) -> str:
    status = str(verdict.get("status") or "")
    word = STATUS_WORDS.get(status, status.upper() or "UNKNOWN")
    code = verdict.get("exit_code")
    text = f"Verdict: {word}" + (f" (exit code {code})" if code is not None else "")
    return f'<p><strong class="{"pass" if status == "pass" else "fail"}">{esc(text)}</strong></p>'


def thresholds_table(results: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for r in results:
        unit = str(r.get("unit") or "")
        rows.append(
            [
                r.get("expression") or r.get("metric"),
                threshold_value(r.get("value"), unit),
                threshold_limit(str(r.get("op") or ""), r.get("limit"), unit),
                _result_cell(r.get("passed")),
                r.get("samples"),
                r.get("reason") or None,
            ]
        )
    headers = ("threshold", "value", "limit", "result", "samples", "reason")
    return table(headers, rows, numeric=[False, True, True, False, True, False])


def _result_cell(passed: bool | None) -> tuple[str, str]:
    if passed is None:
        return "not judged", "muted"
    return ("pass", "pass") if passed else ("FAIL", "fail")


def client_html(summary: Mapping[str, Any] | None) -> str:
    """Each node's loop lag, CPU and saturation verdict: whether the load generator, not the server, set the
    latencies. Only the summary has them."""
    if summary is None:
        return para("No summary was given: client health is only in the summary (records hold none).", "muted")
    nodes = [("run", summary.get("client")), *sorted((summary.get("clients") or {}).items())]
    rows = [_client_row(name, c) for name, c in nodes if c]
    if not rows:
        return para("The summary holds no client health (no loop-lag samples were taken).", "muted")
    headers = ("node", "saturated", "loop lag p99 ms", "CPU p90 %", "reasons and warnings")
    return table(headers, rows, numeric=[False, False, True, True, False])


def _client_row(name: str, c: Mapping[str, Any]) -> list[Any]:
    saturated = ("yes", "fail") if c.get("saturated") else ("no", "pass")
    notes = [*(c.get("reasons") or []), *(c.get("warnings") or [])]
    lag, cpu = c.get("loop_lag_p99_ms"), c.get("cpu_p90_percent")
    return [
        name,
        saturated,
        None if lag is None else f"{lag:.1f}",
        None if cpu is None else f"{cpu:.1f}",
        "; ".join(str(n) for n in notes) or None,
    ]


def incidents_html(summary: Mapping[str, Any] | None) -> str:
    """The failover incidents (docs/failover.md, "Incidents"), one row each; empty without any."""
    incidents = ((summary or {}).get("failover") or {}).get("incidents") or []
    if not incidents:
        return ""
    return table(INCIDENT_HEADER, [incident_row(f) for f in incidents], numeric=[False, True, True, True, True, True])
