"""The InfluxDB sink as a node part: one sink per node and test run, fed with every record, health sample and
endpoint event, test start/stop annotations from the master or local runner, and the sink's counts shipped to the
master so the summary can say how many points were dropped across all workers.

The sink is configured at `start`, not at init: workers only receive the master's option values then.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from loadlib.errors import ConfigError
from loadlib.locust.parts import Node, NodePart
from loadlib.metrics.summary_types import Summary
from loadlib.records.record import RequestRecord
from loadlib.records.user_request import UserRequest
from loadlib.settings import Options, influx_options
from loadlib.sinks.config import COUNT_KEYS, REPORT_KEY, UNKNOWN_RUN_ID, build_sink, config_from_options
from loadlib.sinks.influx import InfluxSink
from loadlib.sinks.lineproto import capacity_step_line, server_line

log = logging.getLogger("loadlib.sinks")


class SinkPart(NodePart):
    """The sink of one node, its last counts after it closed, and (on the master) the counts each worker reported."""

    key = REPORT_KEY

    def __init__(self) -> None:
        self.sink: InfluxSink | None = None
        self.close_timeout_s = 5.0
        self.node = "local"
        self.last_stats: dict[str, Any] | None = None
        self.error: str | None = None
        self.workers: dict[str, dict[str, Any]] = {}
        self.annotate = False

    def start(self, ctx: Node) -> None:
        self._close_sink()
        self.error, self.last_stats, self.node = None, None, ctx.node
        self.annotate = not ctx.is_worker
        if ctx.is_master:
            self.workers.clear()
        try:
            cfg = config_from_options(influx_options(ctx.options))
        except ConfigError as exc:
            self.error = str(exc)
            log.error("InfluxDB sink disabled on %s: %s", self.node, exc)
            return
        if cfg is None:
            return
        run_id = str(ctx.options.run_id or "") or UNKNOWN_RUN_ID
        self.close_timeout_s = cfg.close_timeout_s
        self.sink = build_sink(cfg, run_id, self.node).start()
        log.info("InfluxDB sink on %s -> %s (run_id=%s)", self.node, self.sink.transport.describe(), run_id)
        if self.annotate:
            self.sink.submit_event("test_start", "", f"run {run_id} started{_shape(ctx.options)}")

    def add(self, record: RequestRecord) -> None:
        if self.sink is not None:
            self.sink.submit_record(record)

    def on_health(self, users: Any = None, cpu_percent: Any = None, loop_lag_ms: Any = None, **_: Any) -> None:
        if self.sink is not None:
            self.sink.submit_worker_health(users, cpu_percent, loop_lag_ms)

    def on_endpoint_event(self, kind: str = "", endpoint: str = "", message: str = "", **_: Any) -> None:
        if self.sink is not None:
            self.sink.submit_event(kind, endpoint, message, worker=self.node)

    def drill(self, figures: dict[str, Any]) -> None:
        if self.sink is not None:
            self.sink.submit_drill(figures["index"], figures["endpoint"], figures["fault"], figures)

    def incident(self, figures: dict[str, Any]) -> None:
        if self.sink is not None:
            self.sink.submit_incident(figures)

    def amplification(self, depth: int, structured: RequestRecord, plain: RequestRecord) -> None:
        if self.sink is not None:
            self.sink.submit_amplification(depth, structured, plain)

    def breaker(self, endpoint: str, state: int) -> None:
        if self.sink is not None:
            self.sink.submit_breaker(endpoint, state)

    def capacity_step(self, row: dict[str, Any]) -> None:
        """A decided step of the capacity search as an `llm_capacity_step` point (the master's)."""
        if self.sink is not None:
            self.sink.submit_line(capacity_step_line(self.sink.run_id, row, time.time_ns()))

    def server_scrape(self, source: str, gauges: dict[str, Any], ttft: dict[str, Any], ts_ns: int) -> None:
        """A scrape of the server's metrics as an `llm_server` point (the master's)."""
        if self.sink is not None:
            self.sink.submit_line(server_line(self.sink.run_id, source, gauges, ttft, ts_ns))

    def user_request(self, user: UserRequest) -> None:
        if self.sink is not None:
            self.sink.submit_user_request(user)

    def stop(self, ctx: Node) -> None:
        if self.sink is not None and self.annotate:
            self.sink.submit_event("test_stop", "", f"run {self.sink.run_id} stopped")
        self._close_sink()

    def ship(self) -> Any:
        return self.own_stats()

    def merge(self, data: Any, worker: str) -> None:
        self.workers[worker] = dict(data)

    def summarize(self, summary: Summary) -> None:
        summary["sink"] = self.totals()

    def lines(self, summary: dict[str, Any]) -> list[str]:
        sink = summary.get("sink")
        if not sink:
            return []
        problems = f"; problems: {sink['errors']}" if sink["errors"] else ""
        return [
            f"InfluxDB sink: {sink['written']} points written, {sink['dropped']} dropped, "
            f"{sink['buffered']} still buffered{problems}"
        ]

    def close(self) -> None:
        self._close_sink()

    def own_stats(self) -> dict[str, Any] | None:
        if self.sink is not None:
            return self.sink.stats().as_dict()
        if self.last_stats is not None:
            return self.last_stats
        return {"error": self.error} if self.error is not None else None

    def totals(self) -> dict[str, Any] | None:
        """Counts of this node plus, on the master, every worker's: totals of COUNT_KEYS, `nodes` (per node) and
        `errors` (configuration problems per node). None when no node has an InfluxDB sink."""
        nodes: dict[str, dict[str, Any]] = {}
        own = self.own_stats()
        if own is not None:
            nodes[self.node] = own
        nodes.update(self.workers)
        if not nodes:
            return None
        totals: dict[str, Any] = {k: sum(int(n.get(k) or 0) for n in nodes.values()) for k in COUNT_KEYS}
        totals["errors"] = {name: n["error"] for name, n in nodes.items() if n.get("error")}
        totals["nodes"] = nodes
        return totals

    def _close_sink(self) -> None:
        sink, self.sink = self.sink, None
        if sink is not None:
            self.last_stats = sink.close(self.close_timeout_s).as_dict()


def _shape(options: Options) -> str:
    given = (("num_users", options.locust.num_users), ("spawn_rate", options.locust.spawn_rate))
    shape = [f"{k}={v}" for k, v in given if v is not None]
    return f" ({', '.join(shape)})" if shape else ""
