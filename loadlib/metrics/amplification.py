"""Structured-output amplification: what asking for JSON costs against asking for the same findings in prose.

The compliance scenario sends a share of its cases twice (--compliance-plain-share): as JSON, then as plain prose,
same policy and case. Each pair whose two answers succeeded is counted here, per schema depth, as integer sums
(tokens; cost in nano-dollars; TTFT and E2E in microseconds) so workers' counts merge exactly. The figures are ratios
of sums over the pairs (docs/metrics.md, "Structured-output amplification"), each with a confidence interval at the
run's level (--llm-confidence): the sums of squares and cross-products per pair are counted too, so the interval
merges exactly as well (loadlib.metrics.paired: Fieller's interval for the ratios, Student's t for the differences).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loadlib.errors import ErrorClass
from loadlib.metrics.confidence import DEFAULT_LEVEL
from loadlib.metrics.paired import mean_interval, ratio_interval
from loadlib.metrics.scenarios import ScenarioResults, key, num, select
from loadlib.records.record import RequestRecord

PREFIX = ("compliance", "amp")
NANO = 1e9
MICRO = 1e3


def _both(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None


def pair(r: ScenarioResults, depth: int, structured: RequestRecord, plain: RequestRecord) -> bool:
    """Count one pair whose two answers succeeded with output token counts; False (not counted) otherwise."""
    if structured.status != ErrorClass.OK or plain.status != ErrorClass.OK:
        return False
    if not _both(structured.completion_tokens, plain.completion_tokens):
        return False

    def add(name: str, n: int) -> None:
        r.count(key(*PREFIX, depth, name), n)

    def add_pair(name: str, a: float, b: float) -> None:
        """Σa, Σb, Σa², Σb², Σab of the integer values (the interval's sums: squares of the rounded values, exact)."""
        x, y = round(a), round(b)
        for part, n in (("json", x), ("plain", y), ("json_sq", x * x), ("plain_sq", y * y), ("cross", x * y)):
            add(f"{part}_{name}", n)

    add("pairs", 1)
    add_pair("tokens", structured.completion_tokens or 0, plain.completion_tokens or 0)
    if structured.cost_usd is not None and plain.cost_usd is not None:
        add("costed", 1)
        add_pair("cost_nusd", structured.cost_usd * NANO, plain.cost_usd * NANO)
    for name in ("ttft", "e2e"):
        a, b = getattr(structured, f"{name}_ms"), getattr(plain, f"{name}_ms")
        if a is not None and b is not None:
            add(f"{name}_timed", 1)
            x, y = round(a * MICRO), round(b * MICRO)
            add(f"json_{name}_us", x)
            add(f"plain_{name}_us", y)
            add(f"diff_sq_{name}_us", (x - y) ** 2)
    return True


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def _diff_ms(c: dict[str, int], name: str) -> float | None:
    n = c.get(f"{name}_timed", 0)
    if not n:
        return None
    return round((c.get(f"json_{name}_us", 0) - c.get(f"plain_{name}_us", 0)) / n / MICRO, 3)


def _ratio_ci(c: dict[str, int], name: str, n: int, level: float) -> list[float] | None:
    """Fieller's interval of the ratio of the pairs' means, four decimals like the ratio (None: unbounded)."""
    sx, sy, sxx, syy, sxy = (c.get(f"{part}_{name}", 0) for part in ("json", "plain", "json_sq", "plain_sq", "cross"))
    ci = ratio_interval(n, sx, sy, sxx, syy, sxy, level)
    return None if ci is None else [round(ci[0], 4), round(ci[1], 4)]


def _diff_ci(c: dict[str, int], name: str, level: float) -> list[float] | None:
    """Student's t interval of the mean difference in ms, three decimals like the difference."""
    diff = c.get(f"json_{name}_us", 0) - c.get(f"plain_{name}_us", 0)
    ci = mean_interval(c.get(f"{name}_timed", 0), diff, c.get(f"diff_sq_{name}_us", 0), level)
    return None if ci is None else [round(ci[0] / MICRO, 3), round(ci[1] / MICRO, 3)]


def figures(c: dict[str, int], level: float = DEFAULT_LEVEL) -> dict[str, Any]:
    """The figures of one set of summed counts (a depth, or all of them), with intervals at `level`."""
    json_cost, plain_cost = c.get("json_cost_nusd", 0), c.get("plain_cost_nusd", 0)
    pairs = c.get("pairs", 0)
    costed = c.get("costed", 0) == pairs
    return {
        "pairs": pairs,
        "json_output_tokens": c.get("json_tokens", 0),
        "plain_output_tokens": c.get("plain_tokens", 0),
        "output_tokens_ratio": _ratio(c.get("json_tokens", 0), c.get("plain_tokens", 0)),
        "output_tokens_ratio_ci": _ratio_ci(c, "tokens", pairs, level),
        "json_cost_usd": round(json_cost / NANO, 9) if costed else None,
        "plain_cost_usd": round(plain_cost / NANO, 9) if costed else None,
        "cost_ratio": _ratio(json_cost, plain_cost) if costed else None,
        "cost_ratio_ci": _ratio_ci(c, "cost_nusd", pairs, level) if costed else None,
        "ttft_diff_ms": _diff_ms(c, "ttft"),
        "ttft_diff_ms_ci": _diff_ci(c, "ttft", level),
        "e2e_diff_ms": _diff_ms(c, "e2e"),
        "e2e_diff_ms_ci": _diff_ci(c, "e2e", level),
    }


def summarize(r: ScenarioResults, level: float = DEFAULT_LEVEL) -> dict[str, Any] | None:
    """`scenarios.compliance.amplification`: the figures over all pairs, and `by_depth` when the cases' schemas
    have several depths, with intervals at the run's confidence `level`; None without a pair."""
    by_depth: dict[int, dict[str, int]] = {}
    for (depth, name), n in select(r, *PREFIX).items():
        by_depth.setdefault(int(depth), {})[name] = n
    if not by_depth:
        return None
    total: dict[str, int] = {}
    for counts in by_depth.values():
        for name, n in counts.items():
            total[name] = total.get(name, 0) + n
    out = figures(total, level)
    if len(by_depth) > 1:
        out["by_depth"] = [{"depth": d, **figures(by_depth[d], level)} for d in sorted(by_depth)]
    return out


def _x(v: float | None) -> str:
    """A ratio to the precision it is reported at (the summary keeps four decimals)."""
    return "-" if v is None else f"{v:.3f}"


def _ci(f: dict[str, Any], name: str, text: Callable[[Any], str]) -> str:
    """`2.110 [2.080–2.140]`: a figure with its interval, when it has one (`?`: none: too few pairs, unbounded)."""
    ci = f.get(f"{name}_ci")
    if f.get(name) is None or f"{name}_ci" not in f:  # a summary from before the intervals has no key
        return text(f.get(name))
    return f"{text(f[name])} [{text(ci[0])}–{text(ci[1])}]" if ci else f"{text(f[name])} [?]"


def _line(label: str, f: dict[str, Any]) -> str:
    return (
        f"{label}: JSON/plain output tokens x{_ci(f, 'output_tokens_ratio', _x)}, cost x{_ci(f, 'cost_ratio', _x)}, "
        f"TTFT {_ci(f, 'ttft_diff_ms', num)} ms, E2E {_ci(f, 'e2e_diff_ms', num)} ms longer, "
        f"over {num(f['pairs'])} pairs"
    )


def render(amp: dict[str, Any]) -> list[str]:
    """One line over all pairs, then one per schema depth when there are several."""
    rows = [_line(f"  schema depth {d['depth']}", d) for d in amp.get("by_depth") or ()]
    return [_line("  structured-output amplification", amp), *rows]


def table_rows(amp: dict[str, Any]) -> list[list[str]]:
    """The report's rows: all pairs, then each depth."""
    rows = [("all", amp), *((f"depth {d['depth']}", d) for d in amp.get("by_depth") or ())]
    return [
        [
            label,
            num(f["pairs"]),
            f"{num(f['json_output_tokens'])} / {num(f['plain_output_tokens'])}",
            _ci(f, "output_tokens_ratio", _x),
            _ci(f, "cost_ratio", _x),
            _ci(f, "ttft_diff_ms", num),
            _ci(f, "e2e_diff_ms", num),
        ]
        for label, f in rows
    ]


TABLE_HEADER = ["pairs of", "pairs", "output tokens JSON / plain", "tokens ratio", "cost ratio", "TTFT +ms", "E2E +ms"]
