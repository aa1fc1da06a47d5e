"""Scenarios in a run: what a scenario declares (`ScenarioSpec`, set as its user class's `spec`), and the node part
that prepares each scenario's data once per option signature before any request is timed and merges what the
scenarios found beyond latency across workers.

A spec is data, so a scenario module has no import-time side effects: the run finds the specs of the user classes it
runs and prepares exactly those."""

from __future__ import annotations

import gevent

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from loadlib.locust.parts import MergedPart, Node
from loadlib.metrics.scenarios import OPEN_LOOP, ScenarioResults, Section, render_scenarios, scenario_summary
from loadlib.metrics.summary_types import Summary
from loadlib.settings import Options

T = TypeVar("T")


def _nothing(options: Options) -> None:
    return None


def _no_signature(options: Options) -> tuple[Any, ...]:
    return ()


@dataclass(frozen=True)
class ScenarioSpec:
    """`prepare(options)` builds the scenario's data (heavy: tokenising, generating; run before any request is
    timed, in a thread on workers) and is rebuilt only when `signature(options)` changes (web UI edits); each gets
    the run's resolved options (loadlib.settings.Options: loadlib's typed, a locustfile's own by attribute too);
    `validate(options)` raises ConfigError for a user mistake (the master checks files it does not load); `slo` are
    the scenario's default thresholds, written without a scenario tag (loadlib.verdicts.slo adds it); `parts` make
    node parts (loadlib.locust.parts) the scenario needs, such as the compliance audit trail; `results` is its
    section of the summary and of the printed block (loadlib.metrics.scenarios.Section): what it found beyond
    latency. A scenario without data of its own (plain chat) gives only a name and its SLOs."""

    name: str
    prepare: Callable[[Options], Any] = _nothing
    validate: Callable[[Options], object] = _nothing  # what it returns is ignored: prepare can serve as validate
    signature: Callable[[Options], tuple[Any, ...]] = _no_signature
    slo: tuple[str, ...] = ()
    parts: tuple[Callable[[], Any], ...] = ()
    results: Section | None = None


def in_thread(fn: Callable[[], T]) -> T:
    """Run CPU-heavy preparation in a real thread so the worker's hub (heartbeats, running users) keeps going."""
    return gevent.get_hub().threadpool.apply(fn)


class ScenarioPart(MergedPart):
    """The results of every scenario of the run, and the prepared data of each (`data(spec, options)`)."""

    key = "llm_scenarios"

    def __init__(self, specs: tuple[ScenarioSpec, ...]) -> None:
        self.specs = specs
        self.sections = {s.name: s.results for s in specs if s.results is not None} | {"open_loop": OPEN_LOOP}
        self.results = ScenarioResults()
        super().__init__(self.results)
        self._data: dict[str, tuple[tuple[Any, ...], Any]] = {}

    def data(self, spec: ScenarioSpec, options: Options) -> Any:
        """The scenario's data for these options, rebuilt only when its option signature changes."""
        signature = spec.signature(options)
        cached = self._data.get(spec.name)
        if cached is None or cached[0] != signature:
            cached = self._data[spec.name] = (signature, spec.prepare(options))
        return cached[1]

    def check(self, options: Options, load: bool) -> None:
        """Start-up: prepare every scenario's data where load is generated here, else only validate the options."""
        for spec in self.specs:
            if load:
                self.data(spec, options)
            else:
                spec.validate(options)

    def start(self, ctx: Node) -> None:
        if ctx.generates_load:
            in_thread(lambda: self.check(ctx.options, load=True))

    def has_news(self) -> bool:
        return not self.results.empty

    def summarize(self, summary: Summary) -> None:
        summary["scenarios"] = scenario_summary(self.results, summary, self.sections)

    def lines(self, summary: dict[str, Any]) -> list[str]:
        block = render_scenarios(summary, self.sections)
        return block.split("\n") if block else []
