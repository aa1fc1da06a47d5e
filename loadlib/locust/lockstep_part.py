"""The lockstep self-check as a node part (loadlib.metrics.lockstep; docs/metrics.md, "Users in lockstep"): each
load-generating node counts the gaps between its closed-loop users' request starts as they go out, workers ship their
counts, and the master keeps them by node: a node's starts are compared with its own only, since the clocks of two
machines do not agree to 2 ms. The summary carries the figures (`lockstep`); a run whose starts cluster prints one
line saying so, what it does to TTFT and what to set."""

from __future__ import annotations

import time
from typing import Any

from loadlib.locust.parts import Node, NodePart
from loadlib.metrics.lockstep import GapCounts, StartGaps, judge, lockstep_line
from loadlib.metrics.summary_types import Summary
from loadlib.pacing import parse_phase


class LockstepPart(NodePart):
    """A node's request starts (`started`, called by the users of a closed-loop run as each attempt goes out) and,
    on the master or a local runner, every node's counts; the figures and the line over all of them."""

    key = "llm_lockstep"

    def __init__(self) -> None:
        self.starts = StartGaps()
        self.nodes: dict[str, GapCounts] = {}
        self.phase_on = True

    def start(self, ctx: Node) -> None:
        """A test starts: its first start follows no earlier one (a previous test's counts stay until a reset)."""
        self.starts.reset()
        try:
            self.phase_on = parse_phase(ctx.options.llm_user_phase).window_s != 0.0
        except ValueError:  # the load nodes refuse it (loadlib.locust.closed_loop)
            self.phase_on = True

    def started(self, start_ns: int) -> None:
        """An attempt of a closed-loop user goes out at `start_ns` (wall clock, as its record's start_unix_ns)."""
        self.starts.add(start_ns)

    def ship(self) -> Any:
        counts = self.starts.take(time.time_ns())
        return counts.to_dict() if counts.gaps or counts.clusters else None

    def merge(self, data: Any, worker: str) -> None:
        self.nodes.setdefault(worker, GapCounts()).merge(GapCounts.from_dict(data))

    def reset(self) -> None:
        self.starts.reset()
        self.nodes = {}

    def summarize(self, summary: Summary) -> None:
        """`lockstep`: the figures over every node (None: no closed-loop starts were counted); a local run folds in
        its own counts first."""
        local = self.starts.take(time.time_ns())
        if local.gaps or local.clusters:
            self.nodes.setdefault("local", GapCounts()).merge(local)
        figures = judge(self.nodes)
        summary["lockstep"] = figures.to_dict() if figures is not None else None

    def lines(self, summary: dict[str, Any]) -> list[str]:
        line = lockstep_line(summary.get("lockstep"), self.phase_on)
        return [line] if line else []
