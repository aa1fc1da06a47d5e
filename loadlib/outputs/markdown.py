"""A Markdown summary of a run (`--llm-markdown FILE`, GitHub's step summary), fit for a pull-request comment.

Written for GitHub-flavoured Markdown (GitHub and GitLab comments, job summaries), and so that the file also reads as
plain text in an editor: no HTML entities. Threshold expressions are code spans (`ttft p95 < 150ms`, as the user wrote
them); free text (names, reasons) is escaped with backslashes, which CommonMark renderers drop, only where a renderer
would otherwise see a table cell break, emphasis, a link or an HTML tag (`<redacted>`): `e2e p95 < 0.5s` stays as is.

Why a second human format beside the console table: a fixed-width table breaks in a PR comment or a CI page, and a
reviewer wants the verdict first, then the thresholds, then the numbers. It only reads the JSON summary
(loadlib.metrics.summary, docs/outputs.md) and the threshold results, so it also renders a summary loaded back from a
file. Numbers use the console summary's formatting.

This module also holds what the JUnit writer shares with it (threshold values in the unit they were written in,
masking secrets, writing a file whole), so loadlib.outputs.junit imports from here and not the other way round.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from loadlib.metrics.server_metrics import STEP_HEADERS, step_cells
from loadlib.metrics.summary import TOTAL_NAME, client_line, cost_text, number_text, with_interval
from loadlib.outputs.incident_rows import HEADER as INCIDENT_HEADER
from loadlib.outputs.incident_rows import incident_row
from loadlib.outputs.summary import write_text
from loadlib.verdicts.verdict import capacity_drain, capacity_first_failed, capacity_found, capacity_load

STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
STEP_SUMMARY_MAX_BYTES = 1024 * 1024  # GitHub refuses a step's summary above 1 MiB
STATUS_WORDS = {
    "pass": "PASS",
    "fail": "FAIL",
    "invalid": "INVALID",
    "incomplete": "INCOMPLETE",
    "interrupted": "INTERRUPTED",
    "config_error": "CONFIG ERROR",
    "fatal": "FATAL",
    "not_started": "NOT STARTED",
    "errors": "ERRORS",
}
_TO_UNIT = {"s": 1e-3, "%": 100.0}  # base units (ms, fractions) -> the unit the threshold was written in
_SPECIAL = re.compile(r"([\\`*|\[\]])")  # not `_`: GitHub never emphasises inside a word (support_chat)
_HTML_START = re.compile(r"<(?=[A-Za-z/!?])")  # what CommonMark reads as a tag, comment or autolink; `< 1` is text
_ENTITY = re.compile(r"&(?=#?\w+;)")  # what it reads as an entity: `&amp;` would show as `&`

Thresholds = Sequence[Mapping[str, Any]]


# -- shared with the JUnit writer --------------------------------------------------------------------------------------


def thresholds_of(summary: Mapping[str, Any], thresholds: Thresholds | None) -> list[Mapping[str, Any]]:
    """The results given, else the ones the summary carries: callers may hold them before they are merged in."""
    return list(thresholds if thresholds is not None else summary.get("thresholds") or [])


def figure(v: float | None) -> str:
    """The console's number format, with 3 significant digits below 1 so a 0.4 % rate does not read 0.0."""
    if v is not None and 0 < abs(v) < 1:
        return f"{v:.3g}"
    return number_text(v)


def threshold_value(value: float | None, unit: str) -> str:
    """A base-unit value (ms, a fraction) in the unit the threshold was written in; a bare number stays bare."""
    if value is None:
        return "-"
    text = figure(value * _TO_UNIT.get(unit, 1.0))
    return f"{text} {unit}" if unit else text


def threshold_limit(op: str, limit: float | None, unit: str) -> str:
    """The limit as the user wrote it (`< 0.5 s`, `< 1 %`): `g` drops the float noise of the unit conversion."""
    if limit is None:
        return op
    shown = f"{limit * _TO_UNIT.get(unit, 1.0):.6g}"
    return f"{op} {shown} {unit}" if unit else f"{op} {shown}"


def masked(data: Any, redact: Callable[[str], str] | None) -> Any:
    """`data` with every secret masked, through its JSON text: the same masking (and the same forms of a key: JSON-
    escaped, URL-encoded) as the JSON summary file, done before rendering, so the mask cannot break XML or Markdown."""
    if redact is None:
        return data
    return json.loads(redact(json.dumps(data, default=str)))


# -- the Markdown summary ----------------------------------------------------------------------------------------------


def markdown_summary(summary: Mapping[str, Any], thresholds: Thresholds | None = None) -> str:
    """Verdict line, run line, thresholds, per-scenario/endpoint table, client health, failover drills and
    incidents."""
    results = thresholds_of(summary, thresholds)
    blocks = [_verdict_line(summary, results), _run_line(summary), _warmup_line(summary.get("warmup"))]
    if results:
        blocks.append(_threshold_table(results))
    blocks.append(_rows_table(summary))
    blocks += _error_lines(summary)
    blocks += [esc(line) for line in client_line(summary.get("client")).split("\n")]
    drills = ((summary.get("failover") or {}).get("drills")) or []
    if drills:
        blocks.append(_drill_table(drills))
    incidents = ((summary.get("failover") or {}).get("incidents")) or []
    if incidents:
        rows = [[esc(c) for c in incident_row(f)] for f in incidents]
        blocks.append("**Failover incidents**\n\n" + _table(list(INCIDENT_HEADER), "lrrrrr", rows))
    if summary.get("capacity"):
        blocks.append(_capacity_table(summary["capacity"]))
    return "\n\n".join(b for b in blocks if b) + "\n"


def _warmup_line(w: Mapping[str, Any] | None) -> str:
    """What --llm-warmup left out of everything below it (docs/metrics.md#warm-up)."""
    if not w:
        return ""
    still = "" if w.get("ended") else " (the run ended inside it)"
    spec = esc(f"--llm-warmup {w.get('spec')}")
    return f"Warm-up left out ({spec}): {w.get('seconds'):.1f} s{still}, {w.get('excluded_requests')} requests."


def write_markdown(
    path: str,
    summary: Mapping[str, Any],
    thresholds: Thresholds | None = None,
    redact: Callable[[str], str] | None = None,
) -> str | None:
    """Write the Markdown summary (secrets masked with the run's redactor); the problem as one line, or None."""
    text = markdown_summary(masked(summary, redact), masked(thresholds, redact))
    return write_text(path, text, "Markdown summary")


def append_step_summary(text: str) -> str | None:
    """Append to the file GitHub Actions names in $GITHUB_STEP_SUMMARY, so the run's verdict shows on the job's page;
    nothing outside Actions. Capped at GitHub's 1 MiB per step (beyond it GitHub shows nothing at all). The problem as
    one line, or None."""
    path = os.environ.get(STEP_SUMMARY_ENV)
    if not path:
        return None
    try:
        with open(path, "ab") as f:
            f.write(_capped(text))
    except OSError as exc:
        return f"cannot append to the GitHub step summary {path} ({exc.strerror or exc})"
    return None


def _capped(text: str) -> bytes:
    """UTF-8 ending in a newline (the next step's summary starts on its own line), cut on a character boundary."""
    data = text.encode("utf-8")
    if len(data) > STEP_SUMMARY_MAX_BYTES:
        note = b"\n\n(cut at GitHub's 1 MiB step-summary limit)\n"
        data = data[: STEP_SUMMARY_MAX_BYTES - len(note)].decode("utf-8", "ignore").encode("utf-8") + note
    return data if data.endswith(b"\n") else data + b"\n"


def esc(text: Any) -> str:
    """Free text for Markdown: one line, Markdown's specials backslash-escaped, and `<` or `&` too where a renderer
    would take them for HTML (GitHub would hide `<redacted>` as a tag). A backslash, not an entity: renderers drop it
    and an editor shows the text nearly as written, where `&lt;` reads as noise."""
    one_line = _SPECIAL.sub(r"\\\1", " ".join(str(text).split()))
    return _ENTITY.sub(r"\\&", _HTML_START.sub(r"\\<", one_line))


def code(text: Any) -> str:
    """An expression as a code span, for a table cell: nothing is Markdown or HTML inside one, so it reads as written
    everywhere; only a `|` is escaped, since a GFM table splits on it even there (the renderer drops the backslash)."""
    one_line = " ".join(str(text).split()).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall("`+", one_line)), default=0) + 1)
    pad = " " if one_line[:1] == "`" or one_line[-1:] == "`" else ""
    return f"{fence}{pad}{one_line}{pad}{fence}"


def _table(header: Sequence[str], align: str, rows: Sequence[Sequence[str]]) -> str:
    """`align` has one letter per column: l(eft) or r(ight)."""
    marks = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


# verdict


def _verdict_line(summary: Mapping[str, Any], results: list[Mapping[str, Any]]) -> str:
    """The summary's verdict when the run recorded one; else one derived from the figures, and said to be."""
    verdict = summary.get("verdict")
    if verdict:
        status = str(verdict.get("status") or "")
        word = STATUS_WORDS.get(status, status.upper() or "UNKNOWN")
        given = "; ".join(str(r) for r in verdict.get("reasons") or [])
        code = verdict.get("exit_code")
        line = f"**Verdict: {word}**" + (f" (exit code {code})" if code is not None else "")
        return line + (f": {esc(given)}" if given else "")
    word, reasons = _derived(summary, results)
    return f"**Verdict: {word}** (derived here: the run recorded no verdict)" + (
        f": {esc('; '.join(reasons))}" if reasons else ""
    )


def _derived(summary: Mapping[str, Any], results: list[Mapping[str, Any]]) -> tuple[str, list[str]]:
    """A saturated client makes the latencies the load generator's (INVALID) before any threshold can FAIL."""
    if summary.get("client_saturated"):
        return "INVALID", list((summary.get("client") or {}).get("reasons") or ["client saturated"])
    failed = [f"{r.get('expression')} failed" for r in results if r.get("passed") is False]
    failover = summary.get("failover") or {}
    failed += [f"drill {d.get('index')} failed" for d in failover.get("drills") or [] if d.get("passed") is False]
    return ("FAIL", failed) if failed else ("PASS", [])


def _run_line(summary: Mapping[str, Any]) -> str:
    meta = summary.get("meta") or {}
    parts = [f"Run {esc(meta.get('run_id') or '-')}"]
    if summary.get("duration_s") is not None:
        parts.append(f"{number_text(summary['duration_s'])} s")
    target = " ".join(esc(meta[k]) for k in ("provider", "model") if meta.get(k))
    if meta.get("host"):
        target += f" at {esc(meta['host'])}"
    if target:
        parts.append(target.strip())
    return ", ".join(parts) + "."


# tables


def _threshold_table(results: list[Mapping[str, Any]]) -> str:
    rows = [
        [
            code(r.get("expression") or r.get("metric") or "-"),
            threshold_value(r.get("value"), str(r.get("unit") or "")),
            esc(threshold_limit(str(r.get("op") or ""), r.get("limit"), str(r.get("unit") or ""))),
            _result_word(r),
        ]
        for r in results
    ]
    return "**Thresholds**\n\n" + _table(["threshold", "value", "limit", "result"], "lrrl", rows)


def _result_word(r: Mapping[str, Any]) -> str:
    """Pass, FAIL, or why it was not judged (too few samples...)."""
    if r.get("passed") is True:
        return "pass"
    if r.get("passed") is False:
        return "**FAIL**"
    return "not judged: " + esc(r.get("reason") or "no value")


_ROW_HEADER = ["scenario @ endpoint", "requests", "errors", "TTFT p50", "TTFT p95 [interval]", "E2E p95 [interval]"]
_ROW_HEADER += ["tok/s", "cost $"]


def _rows_table(summary: Mapping[str, Any]) -> str:
    rows = [_row_cells(r) for r in summary.get("rows") or [] if r]
    total = summary.get("total")
    if total:
        cells = _row_cells(total)
        rows.append([f"**{cells[0]}**", *cells[1:]])
    return "**Requests** (latencies in ms)\n\n" + _table(_ROW_HEADER, "lrrrrrrr", rows)


def _row_cells(r: Mapping[str, Any]) -> list[str]:
    lat = r.get("latency_ms") or {}

    def p(metric: str, q: str) -> str:
        return number_text((lat.get(metric) or {}).get(q))

    count, errors = r.get("count"), r.get("errors_total")
    return [
        esc(r.get("name") or TOTAL_NAME),
        "-" if count is None else str(count),
        "-" if errors is None else str(errors),
        p("ttft", "p50"),
        with_interval(lat.get("ttft") or {}, "p95"),
        with_interval(lat.get("e2e") or {}, "p95"),
        number_text(r.get("output_tokens_per_s")),
        cost_text(r.get("cost_usd")),
    ]


def _error_lines(summary: Mapping[str, Any]) -> list[str]:
    """Errors by class per row, most frequent first, as on the console."""
    out = []
    for r in summary.get("rows") or []:
        errors = (r or {}).get("errors") or {}
        if errors:
            ranked = sorted(errors.items(), key=lambda kv: (-kv[1], kv[0]))
            out.append(f"Errors by class, {esc(r.get('name', '-'))}: " + ", ".join(f"{esc(k)} {v}" for k, v in ranked))
    return out


def _drill_table(drills: list[Mapping[str, Any]]) -> str:
    rows = []
    for d in drills:
        what = f"{d.get('index')}: {d.get('endpoint')} {d.get('fault')}"
        if d.get("at_s") is not None:
            what += f" at +{number_text(d['at_s'])} s"
        if d.get("duration_s") is not None:
            what += f" for {number_text(d['duration_s'])} s"
        checks = "; ".join(str(c.get("reason")) for c in d.get("checks") or []) or "no targets set"
        rows.append([esc(what), _drill_word(d), esc(checks)])
    return "**Failover drills**\n\n" + _table(["drill", "result", "checks"], "lll", rows)


def _drill_word(d: Mapping[str, Any]) -> str:
    """A drill still running at the end has no failback check yet: its pass is provisional and says so."""
    if d.get("passed") is False:
        return "**FAIL**"
    return "pass so far (running at the end)" if d.get("running") else "pass"


def _capacity_table(c: Mapping[str, Any]) -> str:
    """The capacity search: its answer, then one row per step."""
    found = f"**Capacity: {capacity_found(c)}**"
    if c.get("lower_bound"):
        head = f"{found} (a lower bound only: {esc(c.get('stopped'))})"
    else:
        why = esc("; ".join(c.get("first_failed_by") or []))
        head = f"{found} (first failing: {capacity_first_failed(c)}, {why})"
    if c.get("confirmed") is not None:
        head += "; the hold at the answer " + ("confirmed it" if c["confirmed"] else "did **not** confirm it")
    steps = c.get("steps") or []
    rows = [_capacity_cells(s) for s in steps]
    header = ["step", "load", "result", "req/s", "out tok/s", "TTFT p50 / p95", "TPOT p95", "E2E p95", "errors"]
    if any(s.get("drain_s") is not None for s in steps):  # a rate search drained the queue of a failed step
        rows = [[*row, capacity_drain(s) or "-"] for row, s in zip(rows, steps, strict=True)]
        header = [*header, "drain before it"]
    if any(s.get("server") for s in steps):  # --llm-server-metrics: the server's own view of each step
        rows = [[*row, *step_cells(s)] for row, s in zip(rows, steps, strict=True)]
        header = [*header, *STEP_HEADERS]
    return head + "\n\n" + _table(header, "rrl" + "r" * (len(header) - 3), rows)


def _capacity_cells(s: Mapping[str, Any]) -> list[str]:
    result = "held" if s.get("passed") else ("client saturated" if s.get("client_saturated") else "**FAIL**")
    ttft = f"{figure(s['ttft_ms']['p50'])} / {figure(s['ttft_ms']['p95'])} ms"
    return [
        str(s.get("step")) + (" (hold)" if s.get("confirm") else ""),
        capacity_load(s),
        result,
        figure(s.get("requests_per_s")),
        figure(s.get("output_tokens_per_s")),
        ttft,
        f"{figure(s['tpot_ms']['p95'])} ms",
        f"{figure(s['e2e_ms']['p95'])} ms",
        str(s.get("errors")),
    ]
