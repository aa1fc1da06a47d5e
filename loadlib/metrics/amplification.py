"""Structured-output amplification: what asking for JSON costs against asking for the same findings in prose.

The compliance scenario sends a share of its cases twice (--compliance-plain-share): as JSON, then as plain prose,
same policy and case. Each pair whose two answers succeeded is counted here, per schema depth, as integer sums
(tokens; cost in nano-dollars; TTFT and E2E in microseconds) so workers' counts merge exactly. The figures are ratios
of sums over the pairs (docs/metrics.md, "Structured-output amplification"); confidence intervals do not exist yet.
"""

from __future__ import annotations

from typing import Any

from loadlib.errors import ErrorClass
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

    def add(name: str, n: float) -> None:
        r.count(key(*PREFIX, depth, name), round(n))

    add("pairs", 1)
    add("json_tokens", structured.completion_tokens or 0)
    add("plain_tokens", plain.completion_tokens or 0)
    if structured.cost_usd is not None and plain.cost_usd is not None:
        add("costed", 1)
        add("json_cost_nusd", structured.cost_usd * NANO)
        add("plain_cost_nusd", plain.cost_usd * NANO)
    for name in ("ttft", "e2e"):
        a, b = getattr(structured, f"{name}_ms"), getattr(plain, f"{name}_ms")
        if a is not None and b is not None:
            add(f"{name}_timed", 1)
            add(f"json_{name}_us", a * MICRO)
            add(f"plain_{name}_us", b * MICRO)
    return True


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def _diff_ms(c: dict[str, int], name: str) -> float | None:
    n = c.get(f"{name}_timed", 0)
    if not n:
        return None
    return round((c.get(f"json_{name}_us", 0) - c.get(f"plain_{name}_us", 0)) / n / MICRO, 3)


def figures(c: dict[str, int]) -> dict[str, Any]:
    """The figures of one set of summed counts (a depth, or all of them)."""
    json_cost, plain_cost = c.get("json_cost_nusd", 0), c.get("plain_cost_nusd", 0)
    costed = c.get("costed", 0) == c.get("pairs", 0)
    return {
        "pairs": c.get("pairs", 0),
        "json_output_tokens": c.get("json_tokens", 0),
        "plain_output_tokens": c.get("plain_tokens", 0),
        "output_tokens_ratio": _ratio(c.get("json_tokens", 0), c.get("plain_tokens", 0)),
        "json_cost_usd": round(json_cost / NANO, 9) if costed else None,
        "plain_cost_usd": round(plain_cost / NANO, 9) if costed else None,
        "cost_ratio": _ratio(json_cost, plain_cost) if costed else None,
        "ttft_diff_ms": _diff_ms(c, "ttft"),
        "e2e_diff_ms": _diff_ms(c, "e2e"),
    }


def summarize(r: ScenarioResults) -> dict[str, Any] | None:
    """`scenarios.compliance.amplification`: the figures over all pairs, and `by_depth` when the cases' schemas
    have several depths; None without a pair."""
    by_depth: dict[int, dict[str, int]] = {}
    for (depth, name), n in select(r, *PREFIX).items():
        by_depth.setdefault(int(depth), {})[name] = n
    if not by_depth:
        return None
    total: dict[str, int] = {}
    for counts in by_depth.values():
        for name, n in counts.items():
            total[name] = total.get(name, 0) + n
    out = figures(total)
    if len(by_depth) > 1:
        out["by_depth"] = [{"depth": d, **figures(by_depth[d])} for d in sorted(by_depth)]
    return out


def _x(v: float | None) -> str:
    """A ratio to the precision it is reported at (the summary keeps four decimals)."""
    return "-" if v is None else f"{v:.3f}"


def _line(label: str, f: dict[str, Any]) -> str:
    return (
        f"{label}: JSON/plain output tokens x{_x(f['output_tokens_ratio'])}, cost x{_x(f['cost_ratio'])}, "
        f"TTFT {num(f['ttft_diff_ms'])} ms, E2E {num(f['e2e_diff_ms'])} ms longer, over {num(f['pairs'])} pairs"
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
            _x(f["output_tokens_ratio"]),
            _x(f["cost_ratio"]),
            num(f["ttft_diff_ms"]),
            num(f["e2e_diff_ms"]),
        ]
        for label, f in rows
    ]


TABLE_HEADER = ["pairs of", "pairs", "output tokens JSON / plain", "tokens ratio", "cost ratio", "TTFT +ms", "E2E +ms"]
