"""`python -m loadlib compare --baseline A.json B.json`: did the candidate get slower than the baseline? Pure.

Each side's summaries are pooled (loadlib.verdicts.baseline.pool: repeats of one setup), then every row both sides
have (and their total, when there are several rows) is compared metric by metric and percentile by percentile, each
"improved", "regressed" or "no significant change" by the rule of loadlib.verdicts.baseline, with both intervals. A
comparison needs the sample rule's requests on both sides (a p95: 100, a p99: 500); those judged share the
false-alarm budget (Bonferroni), so the table's level is stated with it. Text for the terminal, Markdown for a pull
request's comment (docs/baseline.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from loadlib.histogram import Histogram
from loadlib.metrics.summary import TOTAL_NAME, row_name
from loadlib.verdicts.baseline import (
    FALSE_ALARM,
    IMPROVED,
    NOT_JUDGED,
    REGRESSED,
    TOTAL_ROW,
    Change,
    Pooled,
    compare,
    comparison_level,
)

METRICS = ("ttft", "ttfo", "tpot", "stream_tpot", "itl", "e2e")
# ITL counts every gap of a request: its samples are not independent, so it is judged only when asked for
DEFAULT_METRICS = ("ttft", "ttfo", "tpot", "stream_tpot", "e2e")
DEFAULT_PERCENTILES = ("p50", "p95", "p99")
MIN_SAMPLES = 20


@dataclass(frozen=True)
class Line:
    """One row, metric and percentile compared; `n_base`/`n_cand` are the samples behind each side."""

    row: str
    metric: str
    percentile: str
    change: Change
    n_base: int
    n_cand: int


@dataclass(frozen=True)
class Table:
    lines: list[Line]
    level: float
    judged: int
    tolerance: float
    false_alarm: float
    base_files: tuple[str, ...] = ()
    cand_files: tuple[str, ...] = ()
    unmatched: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def regressed(self) -> list[Line]:
        return [x for x in self.lines if x.change.verdict == REGRESSED]


def required(percentile: str) -> int:
    """The sample rule of thresholds (loadlib.verdicts.evaluate): 5 samples beyond the percentile on average."""
    q = Decimal(percentile[1:])
    return max(MIN_SAMPLES, math.ceil(Decimal(100) / (100 - q)) * 5)


def build(
    base: Pooled,
    cand: Pooled,
    metrics: Sequence[str] = DEFAULT_METRICS,
    percentiles: Sequence[str] = DEFAULT_PERCENTILES,
    tolerance: float = 0.0,
    false_alarm: float = FALSE_ALARM,
) -> Table:
    """Every comparison of the rows both sides have (module docstring)."""
    keys = _keys(base, cand)
    cells = [(k, m, p) for k in keys for m in metrics for p in percentiles if m in base[k] and m in cand[k]]
    judged = [c for c in cells if min(base[c[0]][c[1]].count, cand[c[0]][c[1]].count) >= required(c[2])]
    level = comparison_level(len(judged), false_alarm)
    lines = []
    for key, metric, p in cells:
        b, c = base[key][metric], cand[key][metric]
        judge = (key, metric, p) in judged
        change = compare(b, c, float(p[1:]), level, tolerance) if judge else _too_few(b, c, p, level)
        lines.append(Line(_name(key), metric, p, change, b.count, c.count))
    unmatched = [f"{_name(k)} (baseline only)" for k in base if k not in cand]
    unmatched += [f"{_name(k)} (candidate only)" for k in cand if k not in base]
    return Table(lines, level, len(judged), tolerance, false_alarm, unmatched=unmatched)


def _too_few(b: Histogram, c: Histogram, p: str, level: float) -> Change:
    why = f"too few requests ({min(b.count, c.count):,}; a {p} needs {required(p):,} on each side)"
    q = float(p[1:])
    return Change(b.percentile(q), c.percentile(q), (None, None), (None, None), None, None, level, NOT_JUDGED, why)


def _keys(base: Pooled, cand: Pooled) -> list[tuple[str, str]]:
    """The rows both sides have, sorted, then the total when it adds something (several rows)."""
    rows = sorted(k for k in base if k in cand and k != TOTAL_ROW)
    both_total = TOTAL_ROW in base and TOTAL_ROW in cand
    return [*rows, TOTAL_ROW] if both_total and len(rows) != 1 else rows


def _name(key: tuple[str, str]) -> str:
    return TOTAL_NAME if key == TOTAL_ROW else row_name(*key)


def saturated(summaries: Sequence[Mapping[str, Any]], files: Sequence[str]) -> list[str]:
    """A note per summary whose client was saturated: its latencies include the load generator's own delays, so a
    change may be the machine's, not the service's."""
    return [
        f"the client was saturated in {f}: its latencies include the load generator's delays (docs/baseline.md)"
        for s, f in zip(summaries, files, strict=True)
        if s.get("client_saturated")
    ]


# rendering


HEADER = ("row", "metric", "pct", "baseline ms [interval]", "candidate ms [interval]", "change [interval]", "verdict")


def cells(x: Line) -> tuple[str, ...]:
    c = x.change
    return (x.row, x.metric, x.percentile, _value(c.base, c.base_ci), _value(c.cand, c.cand_ci), _change(c), _word(c))


def headline(t: Table) -> str:
    """The verdict: regressed (which), no regression, or nothing judged (never read as no regression)."""
    if not t.judged:
        return nothing_judged(t)
    if t.regressed:
        which = ", ".join(f"{x.row} {x.metric} {x.percentile}" for x in t.regressed[:5])
        more = f" and {len(t.regressed) - 5} more" if len(t.regressed) > 5 else ""
        return f"REGRESSED: {len(t.regressed)} of {t.judged} comparisons ({which}{more})"
    improved = sum(1 for x in t.lines if x.change.verdict == IMPROVED)
    extra = f"; {improved} improved" if improved else ""
    return f"no regression in {t.judged} comparisons{extra}"


def nothing_judged(t: Table) -> str:
    """`NOT JUDGED: ...`: no comparison had the requests its percentile needs on both sides, or the sides share no
    row; says what would let one be judged."""
    if not t.lines:
        return "NOT JUDGED: the baseline and the candidate share no row with the metrics asked for (see not compared)"
    least = min(t.lines, key=lambda x: (required(x.percentile), min(x.n_base, x.n_cand)))
    return (
        f"NOT JUDGED: none of the {len(t.lines)} comparisons had the requests its percentile needs on both sides "
        f"(a {least.percentile} needs {required(least.percentile):,}; {least.row} {least.metric} has "
        f"{least.n_base:,} in the baseline, {least.n_cand:,} in the candidate): run longer, or pool repeats "
        "(--baseline A --baseline A2, several candidates)"
    )


def method(t: Table) -> str:
    """What the intervals are and what the verdicts promise (docs/baseline.md)."""
    tol = f", beyond a tolerance of {t.tolerance * 100:g} %" if t.tolerance else ""
    return (
        f"Each interval at {t.level * 100:.4g} %: {t.judged} comparisons share a {t.false_alarm * 100:g} % "
        f"false-alarm budget (Bonferroni); a change counts when its whole interval (built from both){tol} is on one "
        "side of no change (docs/baseline.md)"
    )


def text(t: Table, base_label: str, cand_label: str) -> str:
    rows = [HEADER, *(cells(x) for x in t.lines)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    out = [f"Baseline: {base_label}", f"Candidate: {cand_label}", method(t), ""]
    out += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    out += [f"not compared: {u}" for u in t.unmatched]
    out += [f"note: {n}" for n in t.notes]
    return "\n".join([*out, "", f"Verdict: {headline(t)}"]) + "\n"


def markdown(t: Table, base_label: str, cand_label: str) -> str:
    head = f"### Against the baseline: {headline(t)}"
    out = [head, "", f"Baseline: {base_label}  ", f"Candidate: {cand_label}", "", "| " + " | ".join(HEADER) + " |"]
    out.append("|" + "---|" * len(HEADER))
    for x in t.lines:
        row = list(cells(x))
        row[-1] = f"**{row[-1]}**" if x.change.verdict == REGRESSED else row[-1]
        out.append("| " + " | ".join(row) + " |")
    out += ["", method(t) + "."]
    out += [f"Not compared: {u}." for u in t.unmatched]
    out += [f"Note: {n}." for n in t.notes]
    return "\n".join(out) + "\n"


def _value(v: float | None, ci: tuple[float | None, float | None]) -> str:
    if v is None:
        return "-"
    low, high = (f"{x:,.4g}" if x is not None else "?" for x in ci)
    return f"{v:,.4g} [{low}-{high}]" if ci != (None, None) else f"{v:,.4g}"


def _change(c: Change) -> str:
    if c.ratio is None:
        return "-"
    point = f"{(c.ratio - 1) * 100:+.1f} %"
    if c.low is None or c.high is None:
        return point
    return f"{point} [{(c.low - 1) * 100:+.1f}, {(c.high - 1) * 100:+.1f}]"


def _word(c: Change) -> str:
    return f"{NOT_JUDGED}: {c.why}" if c.verdict == NOT_JUDGED else c.verdict
