"""The capacity search's node part: each step's measuring window, counted on every load node and merged exactly on
the master, where the search (loadlib.locust.capacity_shape) reads it.

The master tells every node where the search is with one message, `loadlib_capacity` (step, phase): `drain` before a
rate step that follows a failed one (each node sends nothing until the step's warm-up, and a worker tells the master
its requests in flight, `loadlib_in_flight`, four times a second until then), `warmup` when a step's load is set (a
rate search's message also carries the step's arrival rate and the number of load nodes it is split over: each node
paces its users at its share from then on), `measure` when its window opens, `hold` when it closes. A node counts a
record into the step's window when it ended while the window was open and started after the step's load was set; it
counts its loop lag and CPU of each second of the window. At `hold` a worker sends its report at once (not at the next
3 s report), with the step marked closed, so the master decides as soon as every worker's window is in."""

from __future__ import annotations

import gevent
from locust.runners import MasterRunner, WorkerRunner

import time
from typing import Any

from loadlib.capacity import answer
from loadlib.capacity.step import StepWindow
from loadlib.locust.part_registry import register_part
from loadlib.locust.parts import Node, NodePart, live_worker_ids
from loadlib.metrics.summary_types import Summary
from loadlib.records.record import RequestRecord
from loadlib.verdicts.goodput import RequestSLO, parse_request_slo

MESSAGE = "loadlib_capacity"
IN_FLIGHT = "loadlib_in_flight"  # a worker's requests in flight during a drain, to the master
DRAIN, WARMUP, MEASURE, HOLD = "drain", "warmup", "measure", "hold"
IN_FLIGHT_EVERY_S = 0.25  # how often a worker counts its requests in flight to the master during a drain
LOCAL = "local"  # a local runner's own count of its requests in flight
IN_FLIGHT_MARGIN_S = 10.0  # a worker stops counting this long after the drain's bound, should its end not come


class CapacityPart(NodePart):
    """On a load node: the open step's window and the closed ones still to ship. On the master (or a local runner):
    every step's merged window, which workers closed it, and the search's answer for the summary."""

    key = "llm_capacity"

    def __init__(self, runner: Any = None) -> None:
        self.runner = runner
        self.step: int | None = None
        self.phase = ""
        self.step_start_ns = 0
        self.slo: RequestSLO | None = None
        self.outgoing: dict[int, StepWindow] = {}
        self.closing: list[int] = []
        self.windows: dict[int, StepWindow] = {}
        self.closed_by: dict[int, set[str]] = {}
        self.answer: dict[str, Any] | None = None  # the summary's `capacity`, set by the search
        self.marks: dict[int, dict[str, float]] = {}  # when each step entered each phase (unix s; the master's)
        self.rate_share: float | None = None  # a rate search: this node's arrival rate (requests/s)
        self.node: Node | None = None  # the run context, once the run has started here
        self.in_flight_of: dict[str, tuple[int, int, int]] = {}  # each load node's (step, first, last) count of a drain
        self.listening = False
        messages = getattr(runner, "custom_messages", None)  # a runner made by hand (a test's) may have none
        if isinstance(messages, dict) and MESSAGE not in messages:
            runner.register_message(MESSAGE, self.on_message)
            runner.register_message(IN_FLIGHT, self.on_in_flight)

    @property
    def local(self) -> bool:
        return not isinstance(self.runner, MasterRunner | WorkerRunner)

    # the search's side (master or local runner)

    def tell(self, step: int, phase: str, rate: float | None = None) -> None:
        """Tell every node (this one too, when it generates load) that `step` enters `phase`; a rate search's
        `warmup` carries the step's arrival rate, split evenly over the load nodes (as the users are)."""
        self.marks.setdefault(step, {})[phase] = time.time()
        if self.runner is None:
            return
        data: dict[str, Any] = {"step": step, "phase": phase}
        if rate is not None:
            data.update(rate=rate, nodes=max(1, len(self._live())) if not self.local else 1)
        self.runner.send_message(MESSAGE, data)

    def _live(self) -> set[str]:
        return live_worker_ids(self.runner)

    def in_flight(self, step: int) -> tuple[int, int] | None:
        """The requests in flight on every load node during `step`'s drain, when it began and at the last count;
        None until every live worker has counted its own since the drain began."""
        if self.local and self.node is not None and self.step == step and self.phase == DRAIN:
            self._count(LOCAL, step, self.node.in_flight)
        live = {LOCAL} if self.local else self._live()
        counts = {w: c for w, c in self.in_flight_of.items() if c[0] == step}
        if not live or not live <= counts.keys():
            return None
        return sum(counts[w][1] for w in live), sum(counts[w][2] for w in live)

    def on_in_flight(self, environment: Any = None, msg: Any = None, **_: Any) -> None:
        self._count(str(msg.node_id), int(msg.data["step"]), int(msg.data["in_flight"]))

    def _count(self, node: str, step: int, in_flight: int) -> None:
        known = self.in_flight_of.get(node)
        first = known[1] if known is not None and known[0] == step else in_flight
        self.in_flight_of[node] = (step, first, in_flight)

    def window(self, step: int) -> StepWindow:
        return self.windows.setdefault(step, StepWindow())

    def closed(self, step: int) -> bool:
        """Whether every live worker has shipped its whole window of `step` (a local runner has at once)."""
        if self.local:
            return self.step == step and self.phase == HOLD
        return self._live() <= self.closed_by.get(step, set())

    # every node

    def on_message(self, environment: Any = None, msg: Any = None, **_: Any) -> None:
        data = msg.data
        step, phase = int(data["step"]), str(data["phase"])
        if phase == WARMUP:
            self.step_start_ns = time.time_ns()
            self.rate_share = float(data["rate"]) / int(data["nodes"]) if "rate" in data else None
            self._pace()
        if phase == HOLD and self.step == step and self.phase == MEASURE:
            self.closing.append(step)
        self.step, self.phase = step, phase
        if phase == HOLD and isinstance(self.runner, WorkerRunner):
            self.runner._send_stats()  # the closed window now, not at the next report
        if phase == DRAIN and self.node is not None and self.node.generates_load:
            self.node.hold()
            if isinstance(self.runner, WorkerRunner):
                gevent.spawn(self._count_in_flight, step)
            else:
                self._count(LOCAL, step, self.node.in_flight)

    def _count_in_flight(self, step: int) -> None:
        """A worker's requests in flight, told to the master until the drain of `step` ends (bounded)."""
        assert self.node is not None
        until = time.monotonic() + float(self.node.options.llm_capacity_drain_s) + IN_FLIGHT_MARGIN_S
        while self.step == step and self.phase == DRAIN and time.monotonic() < until:
            self.runner.send_message(IN_FLIGHT, {"step": step, "in_flight": self.node.in_flight})
            gevent.sleep(IN_FLIGHT_EVERY_S)

    def _pace(self) -> None:
        """A load node of a rate search paces its users at its share; before its run has started (the first step's
        message comes before the users), `start` does it."""
        if self.node is not None and self.node.generates_load and self.rate_share:
            self.node.pace(self.rate_share)

    def start(self, ctx: Node) -> None:
        self.slo = parse_request_slo(ctx.options.llm_request_slo)
        self.node = ctx
        self._pace()
        if ctx.generates_load and not self.listening:
            ctx.events.worker_health.add_listener(self.on_health)
            self.listening = True

    def _open(self) -> StepWindow | None:
        if self.step is None or self.phase != MEASURE:
            return None
        return self.window(self.step) if self.local else self.outgoing.setdefault(self.step, StepWindow())

    def add(self, record: RequestRecord) -> None:
        window = self._open()
        if window is not None and record.start_unix_ns >= self.step_start_ns:
            window.stats.add(record, self.slo is not None and self.slo.meets(record))

    def on_health(self, cpu_percent: float = 0.0, loop_lag_ms: float = 0.0, **_: Any) -> None:
        window = self._open()
        if window is not None:
            window.lag.record(loop_lag_ms)
            window.cpu.record(cpu_percent)

    def ship(self) -> Any:
        if not self.outgoing and not self.closing:
            return None
        data = {"windows": {str(k): w.serialize() for k, w in self.outgoing.items()}, "closed": list(self.closing)}
        self.outgoing, self.closing = {}, []
        return data

    def merge(self, data: Any, worker: str) -> None:
        for step, window in data["windows"].items():
            self.window(int(step)).merge_serialized(window)
        for step in data["closed"]:
            self.closed_by.setdefault(int(step), set()).add(worker)

    def summarize(self, summary: Summary) -> None:
        if self.answer is not None:
            summary["capacity"] = self.answer

    def lines(self, summary: dict[str, Any]) -> list[str]:
        return answer.lines(summary.get("capacity"))


def _make(ctx: Any) -> CapacityPart:
    return CapacityPart(getattr(getattr(ctx, "environment", None), "runner", None))


# after the worker ledger, before the verdicts: the verdict reads the capacity gate (--llm-capacity-min)
register_part("capacity", 850, _make)
