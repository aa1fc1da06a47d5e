"""The run's warm-up (`--llm-warmup`) as a node part: each node's clock (loadlib.metrics.warmup) says which requests
the statistics leave out and which client samples count with the start-up; workers ship how many requests they left
out, and the summary says what was excluded (`warmup`: its seconds and requests; docs/metrics.md#warm-up)."""

from __future__ import annotations

import time
from typing import Any

from loadlib.locust.parts import Node, NodePart
from loadlib.metrics.summary_types import Summary
from loadlib.metrics.warmup import WarmupClock, parse_warmup
from loadlib.records.record import RequestRecord


class WarmupPart(NodePart):
    """Counts the requests the warm-up left out (the statistics ask the clock, `StatsPart.add`); on the master sums
    every worker's count. Summarized before the statistics, whose rates are per second of the measured window."""

    key = "llm_warmup"

    def __init__(self, clock: WarmupClock) -> None:
        self.clock = clock
        self.shipped = 0
        self.from_workers = 0

    def start(self, ctx: Node) -> None:
        text = str(ctx.options.llm_warmup or "")
        self.clock.begin(parse_warmup(text), time.time_ns(), text)
        self.shipped, self.from_workers = 0, 0

    def ship(self) -> Any:
        news = self.clock.excluded - self.shipped
        if not news:
            return None
        self.shipped = self.clock.excluded
        return {"excluded": news}

    def merge(self, data: Any, worker: str) -> None:
        self.from_workers += int(data["excluded"])

    def add(self, record: RequestRecord) -> None:
        """Nothing: the statistics ask the clock (it counts what it leaves out)."""

    def summarize(self, summary: Summary) -> None:
        section = self.clock.section(time.time_ns(), self.from_workers + self.clock.excluded - self.shipped)
        if section is not None:
            summary["warmup"] = section

    def lines(self, summary: dict[str, Any]) -> list[str]:
        w = summary.get("warmup")
        if not w:
            return []
        still = "" if w["ended"] else " (the run ended inside it)"
        return [
            f"Warm-up left out (--llm-warmup {w['spec']}): {w['seconds']:.1f} s{still}, {w['excluded_requests']} "
            "requests; statistics, thresholds and the client verdict are over the rest"
        ]
