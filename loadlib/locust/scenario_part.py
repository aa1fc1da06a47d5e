"""Scenarios in a run: what a scenario declares (`ScenarioSpec`, set as its user class's `spec`), and the node part
that prepares each scenario's data once per option signature before any request is timed and merges what the
scenarios found beyond latency across workers.

A spec is data, so a scenario module has no import-time side effects: the run finds the specs of the user classes it
runs and prepares exactly those."""

from __future__ import annotations

import gevent

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from loadlib.locust.parts import MergedPart, Node
from loadlib.metrics.scenarios import ScenarioResults, render_scenarios, scenario_summary

T = TypeVar("T")


@dataclass(frozen=True)
class ScenarioSpec:
    """`prepare(options)` builds the scenario's data (heavy: tokenising, generating; run before any request is
    timed, in a thread on workers) and is rebuilt only when `signature(options)` changes (web UI edits);
    `validate(options)` raises ConfigError for a user mistake (the master checks files it does not load); `slo` maps
    a metric to its limit (a metric ending in `_share` is a minimum, any other a maximum); `parts` make node parts
    (loadlib.locust.parts) the scenario needs, such as the compliance audit trail."""

    name: str
    prepare: Callable[[Any], Any]
    validate: Callable[[Any], None]
    signature: Callable[[Any], tuple[Any, ...]]
    slo: Mapping[str, float] = field(default_factory=dict)
    parts: tuple[Callable[[], Any], ...] = ()


def in_thread(fn: Callable[[], T]) -> T:
    """Run CPU-heavy preparation in a real thread so the worker's hub (heartbeats, running users) keeps going."""
    return gevent.get_hub().threadpool.apply(fn)


class ScenarioPart(MergedPart):
    """The results of every scenario of the run, and the prepared data of each (`data(spec, options)`)."""

    key = "llm_scenarios"

    def __init__(self, specs: tuple[ScenarioSpec, ...]) -> None:
        self.specs = specs
        self.results = ScenarioResults()
        super().__init__(self.results)
        self.overrides = ""
        self._data: dict[str, tuple[tuple[Any, ...], Any]] = {}

    def data(self, spec: ScenarioSpec, options: Any) -> Any:
        """The scenario's data for these options, rebuilt only when its option signature changes."""
        signature = spec.signature(options)
        cached = self._data.get(spec.name)
        if cached is None or cached[0] != signature:
            cached = self._data[spec.name] = (signature, spec.prepare(options))
        return cached[1]

    def check(self, options: Any, load: bool) -> None:
        """Start-up: prepare every scenario's data where load is generated here, else only validate the options."""
        for spec in self.specs:
            if load:
                self.data(spec, options)
            else:
                spec.validate(options)

    def start(self, ctx: Node) -> None:
        self.overrides = str(getattr(ctx.options, "scenario_slo", "") or "")
        if ctx.generates_load:
            in_thread(lambda: self.check(ctx.options, load=True))

    def has_news(self) -> bool:
        return not self.results.empty

    def summarize(self, summary: dict[str, Any]) -> None:
        defaults = {spec.name: dict(spec.slo) for spec in self.specs}
        summary["scenarios"] = scenario_summary(self.results, summary, defaults, self.overrides)

    def lines(self, summary: dict[str, Any]) -> list[str]:
        block = render_scenarios(summary)
        return block.split("\n") if block else []
