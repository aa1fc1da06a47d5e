"""Scenario-specific results: what a scenario found beyond latency, merged across workers like the LLM statistics.

Each node counts into one `ScenarioResults` (flat string keys, mergeable histograms), shipped with worker reports and
merged on the master by the scenario node part (loadlib.locust.scenario_part). Each scenario declares its own
`Section` in its ScenarioSpec (its recording functions, key scheme, summary and lines live in one module of its own:
chat_results.py, document_results.py, compliance_results.py); at the end `scenario_summary` asks each section of the
run for its dict (their SLOs are thresholds: loadlib.verdicts.slo) and `render_scenarios` gives the short block after
the LLM table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from loadlib.histogram import Histogram

SEP = "|"
MAX_ROWS = 50  # turns, sweep steps or probe steps shown per scenario


class ScenarioResults:
    """Counters, histograms and gauges of one node. Counters and histograms ship and reset with every worker
    report; gauges (configuration facts such as a worker's target rate) ship every time and are never reset."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.hists: dict[str, Histogram] = {}
        self.gauges: dict[str, Any] = {}

    def count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def observe(self, key: str, value: float) -> None:
        h = self.hists.get(key)
        if h is None:
            h = self.hists[key] = Histogram()
        h.record(value)

    def gauge(self, key: str, value: Any) -> None:
        self.gauges[key] = value

    def serialize(self) -> dict[str, Any]:
        """The counts, histograms and gauges as a worker ships them. A count beyond 64 bits (a sum of squared
        nano-dollars or microseconds: loadlib.metrics.amplification) goes as its decimal string, which msgpack
        carries and merge_serialized reads back exactly."""
        return {
            "counts": {k: n if -(2**63) <= n < 2**63 else str(n) for k, n in self.counts.items()},
            "hists": {k: h.to_dict() for k, h in self.hists.items()},
            "gauges": dict(self.gauges),
        }

    def reset(self) -> None:
        self.counts = {}
        self.hists = {}

    def merge_serialized(self, data: dict[str, Any]) -> None:
        for k, n in (data.get("counts") or {}).items():
            self.count(k, int(n))
        for k, hd in (data.get("hists") or {}).items():
            h = Histogram.from_dict(hd)
            if k in self.hists:
                self.hists[k].merge(h)
            else:
                self.hists[k] = h
        self.gauges.update(data.get("gauges") or {})

    @property
    def empty(self) -> bool:
        return not (self.counts or self.hists or self.gauges)


def key(*parts: Any) -> str:
    return SEP.join(str(p) for p in parts)


@dataclass(frozen=True, slots=True)
class Section:
    """One scenario's part of the summary, declared by its ScenarioSpec (no central list): `summarize(results,
    summary)` gives its JSON-able figures (None: it recorded nothing), `render(figures)` its lines after the table."""

    summarize: Callable[[ScenarioResults, Mapping[str, Any]], dict[str, Any] | None]
    render: Callable[[dict[str, Any]], list[str]]


def select(r: ScenarioResults, *prefix: str) -> dict[tuple[str, ...], Any]:
    """Counts whose key starts with `prefix`, keyed by the remaining parts."""
    head = key(*prefix) + SEP
    return {tuple(k[len(head) :].split(SEP)): v for k, v in r.counts.items() if k.startswith(head)}


def hist(r: ScenarioResults, *parts: Any) -> Histogram:
    return r.hists.get(key(*parts)) or Histogram()


def pct(h: Histogram, q: int) -> float | None:
    v = h.percentile(q)
    return round(v, 3) if v is not None else None


def share(part: int, whole: int) -> float | None:
    return round(part / whole, 6) if whole else None


def num(v: Any) -> str:
    """A figure as the console shows it: thousands separated, small fractions to three digits, None as "-"."""
    if v is None:
        return "-"
    if isinstance(v, float):
        if v and abs(v) < 1:
            return f"{v:.3g}"
        return f"{v:.1f}" if abs(v) < 100 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


# the open loop: a run's feature, not a scenario's, so every run has its section


def open_loop_config(r: ScenarioResults, worker: str, target_rps: float, process: str) -> None:
    r.gauge(key("open_loop", "target", worker), target_rps)
    r.gauge(key("open_loop", "process"), process)


def open_loop_sent(r: ScenarioResults) -> None:
    r.count(key("open_loop", "sent"))


def _open_loop(r: ScenarioResults, summary: Mapping[str, Any]) -> dict[str, Any] | None:
    head = key("open_loop", "target") + SEP
    targets = {k[len(head) :]: v for k, v in r.gauges.items() if k.startswith(head)}
    if not targets:
        return None
    # `sent` counts the whole run, warm-up (--llm-warmup) included: per second of the whole run
    duration_s = (summary.get("meta") or {}).get("duration_s") or summary.get("duration_s")
    sent = r.counts.get(key("open_loop", "sent"), 0)
    return {
        "target_rps": round(sum(float(v) for v in targets.values()), 3),
        "process": r.gauges.get(key("open_loop", "process")),
        "workers": len(targets),
        "sent": sent,
        "achieved_rps": round(sent / duration_s, 3) if duration_s else None,
    }


def _render_open_loop(ol: dict[str, Any]) -> list[str]:
    return [
        f"open loop ({ol.get('process')}): target {num(ol.get('target_rps'))} req/s, achieved "
        f"{num(ol.get('achieved_rps'))} req/s ({num(ol.get('sent'))} sent)"
    ]


OPEN_LOOP = Section(_open_loop, _render_open_loop)


def scenario_summary(
    r: ScenarioResults, summary: Mapping[str, Any], sections: Mapping[str, Section]
) -> dict[str, Any] | None:
    """The scenario part of the end-of-run summary, one entry per section that recorded something (None: none did)."""
    parts = {name: section.summarize(r, summary) for name, section in sections.items()}
    out: dict[str, Any] = {k: v for k, v in parts.items() if v is not None}
    return out or None


def render_scenarios(summary: Mapping[str, Any], sections: Mapping[str, Section]) -> str:
    """The short text block printed after the LLM table ("" when there is nothing scenario-specific)."""
    s = summary.get("scenarios") or {}
    if not s:
        return ""
    out = ["Scenario results"]
    for name, section in sections.items():
        if s.get(name):
            out += section.render(s[name])
    return "\n".join(out)
