"""Is a run slower than its baseline? One rule, from both runs' percentile intervals (docs/baseline.md). Pure.

A percentile of each side has its distribution-free interval (loadlib.metrics.confidence). The change is the ratio
candidate / baseline; its interval is built from the two intervals by MOVER ("method of variance estimates
recovery", Zou & Donner 2008) on the log scale: with r = ln(c / b),

    low  = r - sqrt(ln(c / c_low)^2 + ln(b_high / b)^2)
    high = r + sqrt(ln(c_high / c)^2 + ln(b / b_low)^2)

each side's half-width standing for its own sampling error, combined as independent errors are. A latency
`regressed` when the ratio's whole interval is above 1 + tolerance, `improved` when it is wholly below 1 - tolerance
(higher is better for a throughput: the other way round), else "no significant change". A side whose interval is
unbounded (too few requests for that percentile) is "not judged".

False alarms: when nothing changed, each ratio interval misses on the high side with probability about
(1 - level) / 2. A table of m comparisons judges each at level 1 - false_alarm / m (Bonferroni), so the chance that
any of them is a false "regressed" stays under false_alarm / 2 however the metrics are correlated.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from loadlib.histogram import Histogram
from loadlib.metrics.confidence import quantile_interval

REGRESSED, IMPROVED, UNCHANGED, NOT_JUDGED = "regressed", "improved", "no significant change", "not judged"
FALSE_ALARM = 0.05  # the share of tables (or runs) of like runs allowed a false verdict, either direction
TOTAL_ROW = ("", "")

# (scenario, endpoint) -> latency metric -> the pooled histogram; ("", "") is the total row
Pooled = dict[tuple[str, str], dict[str, Histogram]]


@dataclass(frozen=True)
class Change:
    """One percentile compared: both values, both intervals (None: unbounded side), the ratio's interval and the
    verdict; `why` says why it was not judged."""

    base: float | None
    cand: float | None
    base_ci: tuple[float | None, float | None]
    cand_ci: tuple[float | None, float | None]
    low: float | None  # the ratio candidate / baseline: its interval
    high: float | None
    level: float
    verdict: str
    why: str = ""

    @property
    def ratio(self) -> float | None:
        return self.cand / self.base if self.cand and self.base else None


def comparison_level(comparisons: int, false_alarm: float = FALSE_ALARM) -> float:
    """Each interval's level in a table of `comparisons` (Bonferroni): 1 - false_alarm / m."""
    return 1.0 - false_alarm / max(1, comparisons)


def compare(
    base: Histogram,
    cand: Histogram,
    p: float,
    level: float,
    tolerance: float = 0.0,
    higher_is_worse: bool = True,
) -> Change:
    """The p-th percentile of the candidate against the baseline's at `level` (module docstring: the rule)."""
    b_ci, c_ci = quantile_interval(base, p, level), quantile_interval(cand, p, level)
    b, c = base.percentile(p), cand.percentile(p)
    b_pair = (b_ci.low, b_ci.high) if b_ci else (None, None)
    c_pair = (c_ci.low, c_ci.high) if c_ci else (None, None)
    values = (b, c, *b_pair, *c_pair)
    if any(v is None for v in values):
        why = "no samples" if not (base.count and cand.count) else f"too few requests for an interval at {level:.4g}"
        return Change(b, c, b_pair, c_pair, None, None, level, NOT_JUDGED, why)
    if any(v is not None and v <= 0 for v in values):
        return Change(b, c, b_pair, c_pair, None, None, level, NOT_JUDGED, "a zero value has no ratio")
    low, high = ratio_bounds(b, b_pair, c, c_pair)  # type: ignore[arg-type]  # checked above: none is None
    return Change(b, c, b_pair, c_pair, low, high, level, verdict_of(low, high, tolerance, higher_is_worse))


def ratio_bounds(b: float, b_ci: tuple[float, float], c: float, c_ci: tuple[float, float]) -> tuple[float, float]:
    """The interval of c / b from the two intervals (MOVER on the log scale)."""
    r = math.log(c / b)
    down = math.hypot(math.log(c / c_ci[0]), math.log(b_ci[1] / b))
    up = math.hypot(math.log(c_ci[1] / c), math.log(b / b_ci[0]))
    return math.exp(r - down), math.exp(r + up)


def verdict_of(low: float, high: float, tolerance: float, higher_is_worse: bool = True) -> str:
    """Regressed, improved or no significant change, from the ratio's interval and the tolerance (a fraction)."""
    worse_above, better_below = low > 1.0 + tolerance, high < 1.0 - tolerance
    if not higher_is_worse:
        worse_above, better_below = high < 1.0 - tolerance, low > 1.0 + tolerance
    if worse_above:
        return REGRESSED
    return IMPROVED if better_below else UNCHANGED


def pool(summaries: Iterable[Mapping[str, Any]]) -> Pooled:
    """Every row's histograms, merged over the summaries (repeats of one setup): rows by (scenario, endpoint), the
    total at ("", "")."""
    out: Pooled = {}
    for summary in summaries:
        rows = [*(summary.get("rows") or []), *([summary["total"]] if summary.get("total") else [])]
        for row in rows:
            key = TOTAL_ROW if row is summary.get("total") else (str(row["scenario"]), str(row["endpoint"]))
            into = out.setdefault(key, {})
            for metric, data in (row.get("histograms") or {}).items():
                into.setdefault(metric, Histogram()).merge(Histogram.from_dict(data))
    return out


def has_histograms(summary: Mapping[str, Any]) -> bool:
    """Whether a summary carries the histograms a comparison reads (summaries from before they were kept do not)."""
    total = summary.get("total") or {}
    return isinstance(total, dict) and isinstance(total.get("histograms"), dict)
