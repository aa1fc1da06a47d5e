"""The comparison as a self-contained HTML page (loadlib.reports.html: inline CSS and SVG, no script) and as Markdown.

Both read one `Verdict` and show the same things in the same order: the verdict (recommendation and why, who passes
each bar, the Pareto front), the latency–cost chart (HTML only), the measured figures side by side, the costs with
the prices they rest on and their date, and the notes on how figures were merged or estimated. The cells are built
once (`measured_rows`, `cost_rows`, `bar_rows`) as plain text, so the two formats cannot disagree."""

from __future__ import annotations

from collections.abc import Sequence

from loadlib.metrics.summary import interval_text
from loadlib.reports import html
from loadlib.reports.compare import (
    BARS,
    PASS,
    Assessed,
    Verdict,
    context_text,
    errors_text,
    ms,
    pct,
    prices_text,
    usage_label,
    usd,
)
from loadlib.reports.compare_chart import chart

TITLE = "Endpoint comparison"
MEASURED_HEAD = (
    "endpoint",
    "run",
    "requests",
    "TTFT p50",
    "TTFT p95 [interval]",
    "E2E p95 [interval]",
    "TPOT p50",
    "output tok/s",
    "error rate",
    "errors by class",
    "context (probe)",
    "usage",
)
MEASURED_NUM = (False, False, True, True, True, True, True, True, True, False, False, False)
COST_HEAD = ("endpoint", "model", "$/1K input", "$/1K output", "$/1K blended", "token mix in:out", "prices")
COST_NUM = (False, False, True, True, True, True, False)
BAR_TITLES = {"latency": "latency", "cost": "cost", "context": "context", "errors": "error rate"}


def subtitle(v: Verdict) -> str:
    files = sorted({a.m.file for a in v.assessed})
    return f"{len(v.assessed)} endpoints from {len(files)} summar{'y' if len(files) == 1 else 'ies'}; {bars_text(v)}"


def bars_text(v: Verdict) -> str:
    b = v.bars
    parts = [
        f"{b.latency.upper()} p95 under {b.max_latency_ms:g} ms" if b.max_latency_ms is not None else "",
        f"at most {usd(b.max_usd_per_1k)} per 1K tokens" if b.max_usd_per_1k is not None else "",
        f"at least {b.min_context:,} tokens of context" if b.min_context is not None else "",
        f"error rate at most {pct(b.max_error_rate)}" if b.max_error_rate is not None else "",
    ]
    listed = [p for p in parts if p]
    return "bars: " + ", ".join(listed) if listed else "no bars"


def headline(v: Verdict) -> str:
    """The verdict's first line; a recommendation on the known bars only says so before the name."""
    if not v.recommended:
        return f"No recommendation: {v.reason}"
    label = "Recommended on the known bars only" if v.basis == "known" else "Recommended"
    return f"{label}: {v.recommended}, {v.reason}"


def verdict_lines(v: Verdict) -> list[str]:
    """What stdout prints and both reports lead with: the headline, then a sentence per unknown bar."""
    return [headline(v), *v.unknowns]


def front_text(v: Verdict) -> str:
    axis = f"{v.bars.latency.upper()} p95 against blended $ per 1K tokens"
    if not v.front:
        return f"Pareto front ({axis}): none (no endpoint has both figures)"
    return f"Pareto front ({axis}): {', '.join(v.front)}"


def off_front_lines(v: Verdict) -> list[str]:
    return [f"{name}: dominated by {', '.join(by)}" for name, by in v.off_front.items()]


def bar_rows(v: Verdict) -> list[list[tuple[str, str]]]:
    """Per endpoint: each bar's result with its figure, as (text, css class) cells."""
    on = [b for b in BARS if any(b in a.bars for a in v.assessed)]
    rows = []
    for a in v.assessed:
        cells = [(a.m.name, "")]
        cells += [(f"{a.bars[b]}: {a.why[b]}", _css(a.bars[b])) for b in on]
        cells.append(_passes_cell(a))
        rows.append(cells)
    return rows


def _passes_cell(a: Assessed) -> tuple[str, str]:
    """yes, no (a bar fails), or unknown: it fails none but some bar is unknown, and unknown is not a pass."""
    if a.passes:
        return "yes", "pass"
    return ("unknown", "muted") if a.passes_known else ("no", "fail")


def bar_head(v: Verdict) -> list[str]:
    on = [b for b in BARS if any(b in a.bars for a in v.assessed)]
    return ["endpoint", *(BAR_TITLES[b] for b in on), "passes every bar"]


def _css(result: str) -> str:
    return {PASS: "pass", "fail": "fail"}.get(result, "muted")


def measured_rows(v: Verdict) -> list[list[str]]:
    return [_measured_row(a) for a in v.assessed]


def _measured_row(a: Assessed) -> list[str]:
    m = a.m
    return [
        m.name,
        m.run_id or m.file,
        str(m.count),
        ms(m.ttft_p50),
        _with_interval(m.ttft_p95, m.ttft_p95_ci),
        _with_interval(m.e2e_p95, m.e2e_p95_ci),
        ms(m.tpot_p50),
        "-" if m.output_tps is None else f"{m.output_tps:.1f}",
        pct(m.error_rate),
        errors_text(m),
        context_text(m.context),
        usage_label(m),
    ]


def _with_interval(value: float | None, ci: list[float | None] | None) -> str:
    """`180 ms [172–191]`: a p95 with its confidence interval as the console shows intervals."""
    text = ms(value)
    return f"{text} {interval_text(ci)}" if ci and value is not None else text


def cost_rows(v: Verdict, table_label: str) -> list[list[str]]:
    return [_cost_row(a, table_label) for a in v.assessed]


def _cost_row(a: Assessed, table_label: str) -> list[str]:
    c, m = a.costs, a.m
    blended = "unpriced" if c.blended is None else usd(c.blended)
    if c.blended is not None and c.estimated:
        blended += " (estimated tokens)"
    if c.blended is not None and m.unpriced_requests:
        blended += " (partly unpriced)"
    total = m.prompt_tokens + m.completion_tokens
    mix = f"{m.prompt_tokens / total * 100:.0f}:{m.completion_tokens / total * 100:.0f}" if total else "-"
    return [
        m.name,
        a.priced.model or "-",
        usd(c.input_1k),
        usd(c.output_1k),
        blended,
        mix,
        prices_text(a, table_label),
    ]


def notes(v: Verdict) -> list[str]:
    """How figures were merged, what the costs rest on, and anything that weakens them."""
    out = []
    for a in v.assessed:
        m = a.m
        if m.merge == "weighted":
            out.append(
                f"{m.name}: {len(m.scenarios)} scenario rows ({', '.join(m.scenarios)}) merged; its TTFT, E2E and "
                "TPOT percentiles are request-weighted means of the rows' percentiles (percentiles of separate "
                "distributions cannot be merged exactly); counts, errors, tokens, cost and tokens/s are exact sums"
            )
        elif m.merge == "exact":
            out.append(f"{m.name}: {len(m.scenarios)} scenario rows, figures from the run's total row (exact)")
        out += [f"{m.name}: {n}" for n in a.costs.notes]
    return out


# -- HTML --------------------------------------------------------------------------------------------------------------


def html_report(v: Verdict, table_label: str) -> str:
    return html.page(TITLE, subtitle(v), _html_sections(v, table_label))


def _html_sections(v: Verdict, table_label: str) -> list[str]:
    klass = {"every": ' class="pass"', "known": ""}.get(v.basis, ' class="fail"')
    verdict = f"<p{klass}><strong>{html.esc(headline(v))}</strong></p>"
    verdict += "".join(f"<p>{html.esc(line)}</p>" for line in v.unknowns)
    verdict += _html_list([front_text(v), *off_front_lines(v), *v.excluded])
    verdict += html.table(bar_head(v), bar_rows(v))
    return [
        html.section("Verdict", verdict),
        html.section("Latency against cost", _html_chart(v)),
        html.section("Measured side by side", html.table(MEASURED_HEAD, measured_rows(v), MEASURED_NUM)),
        html.section("Cost and the prices it rests on", html.table(COST_HEAD, cost_rows(v, table_label), COST_NUM)),
        html.section("Notes", _html_list(notes(v)) or '<p class="muted">none</p>'),
        html.section("Inputs", _html_list(_inputs(v))),
    ]


def _html_chart(v: Verdict) -> str:
    fig = chart(v)
    if fig is None:
        return '<p class="muted">No endpoint has both a cost and a latency: nothing to plot.</p>'
    caption = (
        f"Each endpoint at its blended $ per 1K tokens and {v.bars.latency.upper()} p95; stars and the line: the "
        "Pareto front (nothing is both cheaper and faster); ring: the recommendation; dashed: the bars."
    )
    unplotted = [a.m.name for a in v.assessed if a.m.name not in {*v.front, *v.off_front}]
    if unplotted:
        caption += f" Not plotted (no cost or no latency): {', '.join(unplotted)}."
    return html.figure(fig, caption)


def _html_list(items: Sequence[str]) -> str:
    return f"<ul>{''.join(f'<li>{html.esc(i)}</li>' for i in items)}</ul>" if items else ""


def _inputs(v: Verdict) -> list[str]:
    seen: dict[str, list[str]] = {}
    for a in v.assessed:
        seen.setdefault(a.m.file, []).append(a.m.name)
    runs = {a.m.file: a.m.run_id for a in v.assessed}
    return [f"{f} (run {runs[f] or '-'}): {', '.join(names)}" for f, names in seen.items()]


# -- Markdown ----------------------------------------------------------------------------------------------------------


def markdown_report(v: Verdict, table_label: str) -> str:
    parts = [
        f"# {TITLE}",
        subtitle(v),
        "## Verdict",
        f"**{md_esc(headline(v))}**",
        "\n\n".join(md_esc(line) for line in v.unknowns),
        _md_list([front_text(v), *off_front_lines(v), *v.excluded]),
        md_table(bar_head(v), [[text for text, _ in row] for row in bar_rows(v)]),
        "## Measured side by side",
        md_table(MEASURED_HEAD, measured_rows(v), MEASURED_NUM),
        "## Cost and the prices it rests on",
        md_table(COST_HEAD, cost_rows(v, table_label), COST_NUM),
        "## Notes",
        _md_list(notes(v)) or "none",
        "## Inputs",
        _md_list(_inputs(v)),
    ]
    return "\n\n".join(p for p in parts if p) + "\n"


def md_esc(text: str) -> str:
    """Text safe in a Markdown table cell or line: pipes, backslashes and line breaks escaped."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def md_table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool] | None = None) -> str:
    align = ["---:" if n else "---" for n in (numeric or [False] * len(head))]
    lines = ["| " + " | ".join(md_esc(h) for h in head) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(md_esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _md_list(items: Sequence[str]) -> str:
    return "\n".join(f"- {md_esc(i)}" for i in items)
