"""Node parts: what lives on each node of a run and is merged on the master, behind one protocol.

LLM statistics, client health, per-request records, the InfluxDB sink and scenario results are node parts (so are
failover state and threshold verdicts). The run context (loadlib.locust.context) drives every part from Locust's
events: `start` / `stop` with the test, `add` once per record, `ship` into a worker's report and `merge` on the
master, `reset` with Locust's statistics, `summarize` into the end-of-run summary (JSON and web UI) and `lines` for
the console and the web UI, `close` when the process quits. A part inherits a no-op for every step it has no use for.
"""

from __future__ import annotations

from locust.runners import STATE_MISSING

import time
from collections.abc import Callable
from typing import Any, Protocol

from loadlib.locust.health import HealthSampler
from loadlib.metrics.confidence import DEFAULT_LEVEL
from loadlib.metrics.saturation import (
    MEASURED,
    STARTUP,
    STOP,
    SaturationThresholds,
    WindowSamples,
    judge_window,
    window_line,
)
from loadlib.metrics.slices import BucketSlicer
from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary, render_table
from loadlib.metrics.summary_types import Summary
from loadlib.metrics.timeline import Timeline
from loadlib.metrics.warmup import WarmupClock
from loadlib.outputs.records import open_export
from loadlib.records.record import RequestRecord
from loadlib.settings import Options, RunSettings
from loadlib.verdicts.goodput import RequestSLO, parse_request_slo


class Node(Protocol):
    """What a part may know of the node it runs on (the run context provides it)."""

    settings: RunSettings | None
    events: Any
    warmup: WarmupClock
    in_flight: int  # user-visible requests under way

    @property
    def options(self) -> Options: ...

    @property
    def generates_load(self) -> bool: ...

    @property
    def is_master(self) -> bool: ...

    @property
    def is_worker(self) -> bool: ...

    @property
    def node(self) -> str: ...

    def worker_id(self) -> str: ...

    def user_count(self) -> int: ...

    def pace(self, rate_per_s: float) -> None: ...

    def hold(self) -> None: ...


class NodePart:
    """The protocol, with no-op defaults. `key` names the part's payload in a worker's report ("" ships nothing)."""

    key = ""

    def start(self, ctx: Node) -> None:
        """The test starts on this node (options are known; workers have just received the master's)."""

    def stop(self, ctx: Node) -> None:
        """The test stops on this node."""

    def add(self, record: RequestRecord) -> None:
        """One attempt ended on this node."""

    def ship(self) -> Any:
        """A worker's payload for its next report (what was shipped is then reset); None ships nothing."""
        return None

    def merge(self, data: Any, worker: str) -> None:
        """The master takes one worker's payload."""

    def reset(self) -> None:
        """Locust reset its statistics (web UI button, --reset-stats)."""

    def summarize(self, summary: Summary) -> None:
        """Add this part's figures to the summary being built (JSON-able values only)."""

    def lines(self, summary: dict[str, Any]) -> list[str]:
        """This part's lines of the printed summary, also shown in the web UI."""
        return []

    def close(self) -> None:
        """The process quits: release what the part holds."""


class MergedPart(NodePart):
    """A part around one collection that serializes, resets and merges itself (`serialize`, `reset`,
    `merge_serialized`): a worker ships what it counted since its last report, the master merges every payload."""

    def __init__(self, collection: Any) -> None:
        self.collection = collection

    def has_news(self) -> bool:
        """Whether there is anything to ship (a part that ships every report says yes)."""
        return True

    def ship(self) -> Any:
        if not self.has_news():
            return None
        data = self.collection.serialize()
        self.collection.reset()
        return data

    def merge(self, data: Any, worker: str) -> None:
        self.collection.merge_serialized(data)

    def reset(self) -> None:
        self.collection.reset()


class StatsPart(MergedPart):
    """The LLM statistics per scenario and endpoint; the rows and total of the summary and its table; the web UI's
    charts (a worker ships its records' time-bucket slices with its statistics, the master merges them by time)."""

    key = "llm_stats"

    def __init__(self) -> None:
        self.stats = LLMStats()
        self.slo: RequestSLO | None = None
        self.confidence = DEFAULT_LEVEL  # of the percentiles' intervals (--llm-confidence)
        self.timeline: Timeline | None = None  # the web UI's charts, on the master or a local run
        self.slicer: BucketSlicer | None = None  # a worker's side of the charts
        self.warmup: WarmupClock | None = None  # --llm-warmup: which records the statistics leave out
        super().__init__(self.stats)

    def start(self, ctx: Node) -> None:
        self.slo = parse_request_slo(ctx.options.llm_request_slo)
        self.confidence = float(ctx.options.llm_confidence)
        self.warmup = getattr(ctx, "warmup", None)  # a node made by hand (a test's) may have none
        if ctx.is_worker and self.slicer is None:
            self.slicer = BucketSlicer()
        if not ctx.is_worker and self.timeline is None:
            on_master = getattr(ctx, "is_master", False)  # a node made by hand (a test's) may not say
            self.timeline = Timeline(ctx.user_count, workers=_live_workers(ctx) if on_master else None)
        if self.timeline is not None:
            self.timeline.started = self.timeline.clock()  # each swarm's first bucket is rated over its own part

    def add(self, record: RequestRecord) -> None:
        if self.warmup is not None and self.warmup.excludes(record.start_unix_ns):
            return  # --llm-warmup: the clock counts it
        good = self.slo is not None and self.slo.meets(record)
        self.stats.add(record, good)
        if self.timeline is not None:
            self.timeline.add_record(record)
        if self.slicer is not None:
            self.slicer.add(record)

    def ship(self) -> Any:
        data = super().ship()
        if data is not None and self.slicer is not None:
            data["timeline"] = self.slicer.ship()
        return data

    def merge(self, data: Any, worker: str) -> None:
        self.stats.merge_serialized(data)
        if self.timeline is not None and data.get("timeline"):
            self.timeline.add_report(data["timeline"], worker)

    def reset(self) -> None:
        self.stats.reset()
        for part in (self.timeline, self.slicer):
            if part is not None:
                part.reset()

    def summarize(self, summary: Summary) -> None:
        """Rates are per second of the measured window, the summary's `duration_s`: the run less its warm-up
        (summarized before; `meta.duration_s` stays the whole run)."""
        text = self.slo.text if self.slo is not None else ""
        measured = summary["duration_s"] - float((summary.get("warmup") or {}).get("seconds") or 0.0)
        summary.update(build_summary(self.stats, max(measured, 0.0), None, summary["meta"], text, self.confidence))

    def lines(self, summary: dict[str, Any]) -> list[str]:
        return render_table(summary).split("\n")


def live_worker_ids(runner: Any) -> set[str]:
    """The ids of the workers a master counts on: connected and not missing (as in its reports' `worker` argument)."""
    return {str(w.id) for w in runner.clients.values() if w.state != STATE_MISSING}


def _live_workers(ctx: Node) -> Callable[[], set[str]]:
    """live_worker_ids of the node's runner, asked afresh each time (none without a runner)."""
    runner = getattr(getattr(ctx, "environment", None), "runner", None)
    if runner is None:
        return set
    return lambda: live_worker_ids(runner)


class HealthPart(NodePart):
    """Loop lag and CPU of every load-generating node, merged by part of the run (start-up, measured window, stop);
    the client-saturation verdict over the measured window, for the run and for each node (a local run's own node
    included, so the web UI's table by worker is never empty while the run notes judge the client)."""

    key = "llm_health"

    def __init__(self) -> None:
        self.phases = _phases()
        self.by_worker: dict[str, dict[str, WindowSamples]] = {}  # each node's parts of the run, for the UI
        self.sampler: HealthSampler | None = None
        self.thresholds = SaturationThresholds()

    def start(self, ctx: Node) -> None:
        opts = ctx.options
        self.thresholds = SaturationThresholds(
            loop_lag_p99_ms=float(opts.llm_lag_threshold_ms),
            cpu_percent=float(opts.llm_cpu_threshold),
        )
        if ctx.generates_load:
            runner = getattr(getattr(ctx, "environment", None), "runner", None)
            state = (lambda: str(getattr(runner, "state", ""))) if runner is not None else None
            limit = self.thresholds.loop_lag_p99_ms
            self.sampler = self.sampler or HealthSampler(ctx.user_count, ctx.events.worker_health.fire, state, limit)
            clock = getattr(ctx, "warmup", None)
            if clock is not None:  # --llm-warmup: its samples count with the start-up
                self.sampler.window.warming = lambda: clock.warming(time.time_ns())
            self.sampler.start()

    def ship(self) -> Any:
        return self.sampler.take() if self.sampler is not None else None

    def merge(self, data: Any, worker: str) -> None:
        """One node's payload: the measured window at the top level, start-up and stop under their names."""
        mine = self.by_worker.setdefault(worker, _phases())
        for phase, part in _read_phases(data).items():
            self.phases[phase].merge(part)
            mine[phase].merge(part)

    def reset(self) -> None:
        self.phases = _phases()
        self.by_worker = {}

    def summarize(self, summary: Summary) -> None:
        if self.sampler is not None:  # a local run folds in its own latest samples
            self.merge(self.sampler.take(), "local")
        itl = ((summary.get("total") or {}).get("latency_ms") or {}).get("itl") or {}
        verdict = judge_window(self.phases, self.thresholds, itl.get("p50"))
        summary["client_saturated"] = verdict.saturated if verdict is not None else None
        summary["client"] = verdict.to_dict() if verdict is not None else None
        by_node = {w: judge_window(p, self.thresholds, itl.get("p50")) for w, p in sorted(self.by_worker.items())}
        summary["clients"] = {w: v.to_dict() for w, v in by_node.items() if v is not None}

    def lines(self, summary: dict[str, Any]) -> list[str]:
        line = window_line(summary.get("client"))
        return [line] if line else []

    def close(self) -> None:
        if self.sampler is not None:
            self.sampler.stop()


def _phases() -> dict[str, WindowSamples]:
    return {MEASURED: WindowSamples(), STARTUP: WindowSamples(), STOP: WindowSamples()}


def _read_phases(data: dict[str, Any]) -> dict[str, WindowSamples]:
    """A node's health payload by part of the run (a payload without start-up or stop parts has only measured)."""
    parts = {MEASURED: WindowSamples.from_dict(data)}
    parts.update({phase: WindowSamples.from_dict(data[phase]) for phase in (STARTUP, STOP) if data.get(phase)})
    return parts


class RecordsPart(NodePart):
    """`--llm-records`: every record of this node as a JSON line, written off the request path."""

    def __init__(self) -> None:
        self.export: Any = None

    def start(self, ctx: Node) -> None:
        template = str(ctx.options.llm_records or "")
        if template and ctx.generates_load and self.export is None and ctx.settings is not None:
            self.export = open_export(template, ctx.settings.run_id, ctx.settings.worker_id)

    def add(self, record: RequestRecord) -> None:
        if self.export is not None:
            self.export.add(record)

    def stop(self, ctx: Node) -> None:
        if self.export is not None:
            self.export.flush()

    def close(self) -> None:
        if self.export is not None:
            self.export.close()
            self.export = None
