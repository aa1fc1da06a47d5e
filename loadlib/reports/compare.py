"""Comparing endpoints: per-endpoint cost figures, the selection bars, the latency–cost Pareto front and the verdict.

Pure: the inputs are figures already read from run summaries (`loadlib.reports.compare_load`) and the price each
endpoint was matched to (`loadlib.reports.compare_prices`); nothing here reads a file. The bars follow the reference
method (latency p95 under 380 ms, at most $0.0015 per 1K tokens, at least 128K tokens of context), every one
configurable or off. A bar whose figure is not known for an endpoint (no context probe, nothing priced) is `unknown`,
never a pass: an endpoint is recommended only on figures that were measured (docs/comparison.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date

from loadlib.records.pricing import ModelPrice, PriceTable
from loadlib.reports.pareto import dominated_by, pareto_front

PASS, FAIL, UNKNOWN = "pass", "fail", "unknown"
LATENCIES = ("ttft", "e2e")
BARS = ("latency", "cost", "context", "errors")
MISMATCH_TOLERANCE = 0.02  # the run's cost against these prices; per-request rounding stays far below


@dataclass(frozen=True)
class Context:
    """What the long-document probe found for an endpoint, or why it tells nothing (`note`)."""

    largest_fit: int | None = None
    smallest_failure: int | None = None
    failure: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Measured:
    """One candidate endpoint's figures from one summary. `merge` says how its scenario rows became one: "one row",
    "exact" (the summary's total row: it holds this endpoint only) or "weighted" (percentiles are request-weighted
    means of the rows' percentiles, since percentiles of separate distributions cannot be merged exactly)."""

    name: str
    endpoint: str
    file: str
    run_id: str | None
    scenarios: tuple[str, ...]
    merge: str
    count: int
    ok: int
    errors: dict[str, int]
    ttft_p50: float | None
    ttft_p95: float | None
    e2e_p95: float | None
    tpot_p50: float | None
    output_tps: float | None
    prompt_tokens: int
    completion_tokens: int
    cached_prompt_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    unpriced_requests: int = 0
    usage_rejected: int = 0
    usage_compared: int = 0
    usage_off_share: float | None = None
    context: Context | None = None
    model: str | None = None
    provider: str | None = None
    ttft_p95_ci: list[float | None] | None = None  # from the summary; None when rows were weighted (no interval)
    e2e_p95_ci: list[float | None] | None = None

    @property
    def error_rate(self) -> float | None:
        return sum(self.errors.values()) / self.count if self.count else None

    def latency_p95(self, kind: str) -> float | None:
        return self.ttft_p95 if kind == "ttft" else self.e2e_p95


@dataclass(frozen=True)
class Priced:
    """The price an endpoint was matched to: `origin` "table" (a price table entry), "pool" (the pool file's own
    `prices` for the endpoint) or "none"; `why` says why there is none."""

    model: str | None
    price: ModelPrice | None
    origin: str
    as_of: date | None = None
    source: str | None = None
    why: str = ""


@dataclass(frozen=True)
class Bars:
    """The selection bars; None switches one off. `latency` picks the p95 the latency bar and the chart use."""

    max_latency_ms: float | None = 380.0
    max_usd_per_1k: float | None = 0.0015
    min_context: int | None = 128_000
    max_error_rate: float | None = None
    latency: str = "ttft"


@dataclass(frozen=True)
class Costs:
    """USD per 1,000 tokens. `blended` is at the run's own mix of prompt and completion tokens: the run's cost over
    its tokens ("run"), or these prices applied to its tokens ("prices") when the run priced nothing."""

    input_1k: float | None
    output_1k: float | None
    blended: float | None
    basis: str
    estimated: bool
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Assessed:
    m: Measured
    priced: Priced
    costs: Costs
    bars: dict[str, str]
    why: dict[str, str]

    @property
    def passes(self) -> bool:
        return all(v == PASS for v in self.bars.values())

    @property
    def passes_known(self) -> bool:
        """Fails no bar and passes at least one: what `--recommend-known` may pick when nothing passes every bar."""
        return FAIL not in self.bars.values() and PASS in self.bars.values()


@dataclass(frozen=True)
class Verdict:
    """`basis` says what the recommendation rests on: "every" bar passed, or only the "known" bars (the user asked for
    that with --recommend-known; the unknowns stay unknown, never passes); "" when nothing is recommended.
    `unknowns` holds one plain sentence per bar that is unknown somewhere, with how to measure it or drop it."""

    assessed: list[Assessed]
    bars: Bars
    front: list[str]
    recommended: str | None
    reason: str
    excluded: list[str] = field(default_factory=list)
    off_front: dict[str, list[str]] = field(default_factory=dict)
    basis: str = ""
    unknowns: list[str] = field(default_factory=list)


# -- cost --------------------------------------------------------------------------------------------------------------


def rests_on_estimates(m: Measured) -> bool:
    """Token counts (so costs) partly come from our tiktoken estimate: usage rejected, or never seen at all."""
    return m.usage_rejected > 0 or (m.usage_compared == 0 and m.completion_tokens > 0)


def usage_label(m: Measured) -> str:
    if m.usage_rejected:
        return f"estimated on {m.usage_rejected} of {m.count} (server counts not sane)"
    if m.usage_compared == 0 and m.completion_tokens > 0:
        return "no server counts seen: likely estimated"
    if m.usage_off_share is not None:
        return f"reported; >10 % off our estimate on {m.usage_off_share * 100:.0f} % of requests"
    return "reported"


def costs(m: Measured, p: Priced) -> Costs:
    """Per-1K figures; never a new cost formula: the run's own cost, or PriceTable.cost over the run's tokens."""
    recomputed = _recomputed(m, p)
    blended, basis = _blended(m, recomputed)
    return Costs(
        input_1k=p.price.input / 1000.0 if p.price else None,
        output_1k=p.price.output / 1000.0 if p.price else None,
        blended=blended,
        basis=basis,
        estimated=rests_on_estimates(m),
        notes=_cost_notes(m, p, recomputed, basis),
    )


def _blended(m: Measured, recomputed: float | None) -> tuple[float | None, str]:
    total = m.prompt_tokens + m.completion_tokens
    if not total:
        return None, ""
    if m.cost_usd is not None:
        return m.cost_usd / total * 1000.0, "run"
    if recomputed is not None:
        return recomputed / total * 1000.0, "prices"
    return None, ""


def _recomputed(m: Measured, p: Priced) -> float | None:
    if p.price is None or p.model is None:
        return None
    table = PriceTable({p.model: p.price})
    return table.cost(p.model, m.prompt_tokens, m.completion_tokens, m.cached_prompt_tokens, m.cache_write_tokens)


def _cost_notes(m: Measured, p: Priced, recomputed: float | None, basis: str) -> tuple[str, ...]:
    notes = []
    if not basis:
        counted = m.prompt_tokens + m.completion_tokens
        why = (p.why or "the run priced nothing") if counted else "no tokens were counted"
        notes.append(f"unpriced: {why}")
    if basis == "prices":
        notes.append("the run priced nothing: its tokens are priced here with the price named")
    if basis == "run" and m.unpriced_requests:
        notes.append(f"partly unpriced: {m.unpriced_requests} requests of a model missing from the run's price table")
    if basis == "run" and recomputed and m.cost_usd and not m.unpriced_requests:
        gap = (m.cost_usd - recomputed) / recomputed
        if abs(gap) > MISMATCH_TOLERANCE:
            notes.append(
                f"the run's cost is {abs(gap) * 100:.0f} % {'above' if gap > 0 else 'below'} what the price named "
                "here gives: the run used other prices (pass its price table with --price-table, its pool with "
                "--pool) or another model"
            )
    if rests_on_estimates(m):
        notes.append(f"tokens partly estimated ({usage_label(m)}): the cost rests on our tiktoken counts")
    return tuple(notes)


# -- bars --------------------------------------------------------------------------------------------------------------


def judge(m: Measured, c: Costs, bars: Bars) -> tuple[dict[str, str], dict[str, str]]:
    """Each bar that is on: pass, fail or unknown, with the figure behind it."""
    results: dict[str, tuple[str, str]] = {}
    if bars.max_latency_ms is not None:
        results["latency"] = _latency(m.latency_p95(bars.latency), bars)
    if bars.max_usd_per_1k is not None:
        results["cost"] = _cost(c.blended, bars.max_usd_per_1k)
    if bars.min_context is not None:
        results["context"] = _context(m.context, bars.min_context)
    if bars.max_error_rate is not None:
        results["errors"] = _errors(m.error_rate, bars.max_error_rate)
    return {k: v[0] for k, v in results.items()}, {k: v[1] for k, v in results.items()}


def _latency(value: float | None, bars: Bars) -> tuple[str, str]:
    limit = bars.max_latency_ms or 0.0
    name = f"{bars.latency.upper()} p95"
    if value is None:
        return UNKNOWN, f"no {name}: no successful request"
    ok = value < limit
    return (PASS if ok else FAIL), f"{name} {ms(value)} {'<' if ok else '>='} {ms(limit)}"


def _cost(value: float | None, limit: float) -> tuple[str, str]:
    if value is None:
        return UNKNOWN, "unpriced"
    ok = value <= limit
    return (PASS if ok else FAIL), f"{usd(value)} {'<=' if ok else '>'} {usd(limit)} per 1K tokens"


def _context(ctx: Context | None, need: int) -> tuple[str, str]:
    if ctx is None:
        return UNKNOWN, "no long-document probe in its run"
    if ctx.largest_fit is not None and ctx.largest_fit >= need:
        return PASS, f"{thousands(ctx.largest_fit)} tokens fit >= {thousands(need)}"
    if ctx.smallest_failure is not None and ctx.smallest_failure <= need:
        failed = f"{thousands(ctx.smallest_failure)} tokens already failed ({ctx.failure or 'refused'})"
        return FAIL, f"{failed}, {thousands(need)} needed"
    if ctx.note:
        return UNKNOWN, ctx.note
    return UNKNOWN, f"{context_text(ctx)}: the probe did not settle {thousands(need)}"


def _errors(rate: float | None, limit: float) -> tuple[str, str]:
    if rate is None:
        return UNKNOWN, "no requests"
    ok = rate <= limit
    return (PASS if ok else FAIL), f"errors {pct(rate)} {'<=' if ok else '>'} {pct(limit)}"


# -- verdict -----------------------------------------------------------------------------------------------------------


def assess(pairs: list[tuple[Measured, Priced]], bars: Bars) -> list[Assessed]:
    out = []
    for m, p in pairs:
        c = costs(m, p)
        results, why = judge(m, c, bars)
        out.append(Assessed(m, p, c, results, why))
    return out


def points(assessed: list[Assessed], latency: str) -> dict[str, tuple[float, float]]:
    """(blended $/1K, latency p95) of every endpoint that has both: what the chart and the front are drawn from."""
    out = {}
    for a in assessed:
        y = a.m.latency_p95(latency)
        if a.costs.blended is not None and y is not None:
            out[a.m.name] = (a.costs.blended, y)
    return out


def decide(assessed: list[Assessed], bars: Bars, known_only: bool = False) -> Verdict:
    """The Pareto front, and the cheapest endpoint that passes every bar (ties: lower latency, then name). When none
    does and `known_only` (--recommend-known), the cheapest that passes every bar that is known, labelled as such."""
    pts = points(assessed, bars.latency)
    front = pareto_front(pts)
    off = {name: dominated_by(pts, name) for name in pts if name not in front}
    excluded = [_exclusion(a) for a in assessed if not a.passes]
    passing = _ranked([a for a in assessed if a.passes], bars.latency)
    if passing:
        reason = _reason(passing[0], len(passing), front, "every bar")
        return Verdict(assessed, bars, front, passing[0].m.name, reason, excluded, off, "every")
    unknowns = unknown_sentences(assessed)
    known = _ranked([a for a in assessed if a.passes_known], bars.latency) if known_only else []
    if known:
        reason = _reason(known[0], len(known), front, "every known bar")
        return Verdict(assessed, bars, front, known[0].m.name, reason, excluded, off, "known", unknowns)
    reason = _none_reason(assessed, known_only)
    return Verdict(assessed, bars, front, None, reason, excluded, off, "", unknowns)


def _ranked(candidates: list[Assessed], latency: str) -> list[Assessed]:
    return sorted(candidates, key=lambda a: _rank(a, latency))


def _rank(a: Assessed, latency: str) -> tuple[bool, float, float, str]:
    blended, p95 = a.costs.blended, a.m.latency_p95(latency)
    return (blended is None, blended or 0.0, math.inf if p95 is None else p95, a.m.name)


def _reason(best: Assessed, n: int, front: list[str], what: str) -> str:
    cost = usd(best.costs.blended) + " per 1K tokens" if best.costs.blended is not None else "cost unknown"
    among = f"the only endpoint that passes {what}" if n == 1 else f"the cheapest of the {n} that pass {what}"
    place = "on the Pareto front" if best.m.name in front else "not on the Pareto front (see the chart)"
    caveat = "; its cost rests on estimated tokens" if best.costs.estimated else ""
    return f"{among} ({cost}), {place}{caveat}"


def _exclusion(a: Assessed) -> str:
    parts = [_result_text(b, a.bars[b], a.why[b]) for b in BARS if a.bars.get(b, PASS) != PASS]
    return f"{a.m.name}: {'; '.join(parts)}"


def _result_text(bar: str, result: str, why: str) -> str:
    return f"{bar} unknown: {why}" if result == UNKNOWN else f"{'passes' if result == PASS else 'fails'} {bar}: {why}"


# How to make an unknown bar known, or drop it: the end of the sentence that names who it is unknown for.
HOW_TO_KNOW = {
    "latency": "no request succeeded, so there is no p95: see the errors by class, or drop the bar with "
    "--max-p95-ms off",
    "cost": "name the prices with --pool or --price-table, or drop the bar with --max-usd-per-1k off",
    "context": "measure it with the long-document probe, one run per endpoint (locustfiles/long_document.py --doc-mode "
    "probe), and pass those summaries too, or drop the bar with --min-context off",
    "errors": "no request was sent to it, or drop the bar with --max-error-rate off",
}
BAR_NAMES = {"latency": "Latency", "cost": "Cost", "context": "Context", "errors": "The error rate"}
NUMBER_WORDS = {2: "both endpoints", 3: "all three endpoints", 4: "all four endpoints", 5: "all five endpoints"}


def unknown_sentences(assessed: list[Assessed]) -> list[str]:
    """One sentence per bar that is unknown for some endpoint: for whom, and how to measure it or drop it."""
    out = []
    for bar in BARS:
        names = [a.m.name for a in assessed if a.bars.get(bar) == UNKNOWN]
        if names:
            out.append(f"{BAR_NAMES[bar]} is unknown for {who(names, len(assessed))}: {HOW_TO_KNOW[bar]}.")
    return out


def who(names: list[str], total: int) -> str:
    """'all three endpoints' when every one of several, else the names: 'fast', 'fast and slow', 'a, b and c'."""
    if len(names) == total > 1:
        return NUMBER_WORDS.get(total, f"all {total} endpoints")
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _none_reason(assessed: list[Assessed], known_only: bool) -> str:
    """Why nothing is recommended, in plain words; the unknown bars get their own sentences (`unknown_sentences`)."""
    waiting = [a for a in assessed if a.passes_known]
    if not waiting:
        return "no endpoint passes every bar" + ("" if assessed else " (no endpoint was measured)")
    names = who([a.m.name for a in waiting], len(assessed))
    unknown = [b for b in BARS if any(a.bars.get(b) == UNKNOWN for a in waiting)]
    one = len(waiting) == 1
    text = f"{names} {'passes' if one else 'pass'} every known bar, but {'its' if one else 'their'} "
    text += f"{who(unknown, 0)} {'is' if len(unknown) == 1 else 'are'} unknown, and unknown is never a pass"
    return text if known_only else text + "; add --recommend-known to recommend on the known bars"


# -- formatting (shared by the HTML and Markdown reports) -----------------------------------------------------------


def usd(v: float | None) -> str:
    """Three significant digits, no exponent, no trailing zeros: $0.00865, $0.0015, $12.4."""
    if v is None:
        return "-"
    if v == 0:
        return "$0"
    decimals = max(2, 2 - math.floor(math.log10(abs(v))))
    return "$" + f"{v:.{decimals}f}".rstrip("0").rstrip(".")


def ms(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:.1f} ms" if abs(v) < 100 else f"{v:.0f} ms"


def pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.2f} %"


def thousands(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def context_text(ctx: Context | None) -> str:
    """The probe's finding in words, as the run's summary prints it."""
    if ctx is None:
        return "no probe"
    if ctx.note:
        return ctx.note
    if ctx.smallest_failure is not None:
        return f"limit between {thousands(ctx.largest_fit)} and {thousands(ctx.smallest_failure)} tokens"
    return f"no limit up to {thousands(ctx.largest_fit)} tokens"


def prices_text(a: Assessed, table_label: str) -> str:
    """'prices as of DATE (source)', or what the cost rests on when no price is named."""
    p = a.priced
    if p.origin == "pool":
        return f"prices from the pool file's entry for this endpoint ({p.source}; undated)"
    if p.origin == "table":
        when = p.as_of.isoformat() if p.as_of else "an undated table"
        return f"prices as of {when} ({p.source or table_label})"
    if a.costs.basis == "run":
        return f"the run's own cost, price not named: {p.why}"
    return f"unpriced: {p.why}"


def errors_text(m: Measured) -> str:
    """Error rate and its classes, largest first: 'http_5xx 3 (1.00 %), timeout_ttft 1 (0.33 %)'."""
    if not m.errors:
        return "none" if m.count else "-"
    listed = sorted(m.errors.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{cls} {n} ({pct(n / m.count)})" for cls, n in listed)
