"""The workers of a distributed run as a node part: the master's ledger of who carried the load (loadlib.metrics.
integrity), a worker's flag on its final report, and a master that waits for those final reports at quit.

Locust's master notices a dead worker only through missing heartbeats, logs one line, and ends the run as if nothing
happened; and at quit it waits a fixed 0.5 s for the workers' final reports, so a worker whose InfluxDB sink is still
closing reports its last counts to nobody. Here the master samples its workers once a second, records a loss (and
says so as an `llm_event`), a stalled worker's recovery (its first heartbeat after it was found missing) and the
workers the fingerprint check refused, and at quit waits up to --llm-final-report-wait-s for every live worker's
final report.
"""

from __future__ import annotations

import gevent
from locust.rpc import Message
from locust.runners import STATE_MISSING, STATE_RUNNING, STATE_SPAWNING, MasterRunner

import logging
import time
from typing import Any

from loadlib.locust.parts import Node, NodePart
from loadlib.metrics.integrity import WorkerLedger, integrity_lines, stall_line
from loadlib.metrics.summary_types import Summary

log = logging.getLogger("loadlib")
SAMPLE_INTERVAL_S = 1.0


class WorkersPart(NodePart):
    """On a worker: `final` once every part has stopped (its next report is the final one). On the master: the
    ledger, fed by Locust's events and a sampler while the test runs."""

    key = "llm_workers"

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.final = False
        self.requests = 0  # attempts recorded on this worker since its last report
        self.ledger = WorkerLedger()
        self._sampler: gevent.Greenlet | None = None

    def attach(self, environment: Any) -> None:
        """Master only, once: every worker heartbeat as it arrives, a last sample as the test stops, a quit that
        waits for final reports, and the handshake's refusals. Locust's `heartbeat_sent` event would tell a recovery
        late: Locust first rebalances onto the recovered worker and waits for its report (a second or more)."""
        runner = environment.runner
        locust_handle = runner.handle_message

        def handle(client_id: str, msg: Any) -> None:
            if msg.type == "heartbeat" and msg.node_id in runner.clients:
                self._on_heartbeat(msg.node_id, time.time())
            locust_handle(client_id, msg)

        runner.handle_message = handle
        runner.quit = lambda: _quit_awaiting_final_reports(runner, self)
        environment.events.test_stopping.add_listener(lambda **_: self._sample_if_running())
        if getattr(self.ctx, "gate", None) is not None:
            self.ctx.gate.on_refuse = self.refused

    def start(self, ctx: Node) -> None:
        self.final = False
        if ctx.is_master:
            self.ledger = WorkerLedger()
            self._sampler = gevent.spawn(self._sample_forever)

    def _sample_if_running(self) -> None:
        """The test is stopping (still running): the last second's load is integrated before the state changes."""
        if self._sampler is not None:
            self.sample()

    def stop(self, ctx: Node) -> None:
        if ctx.is_master and self._sampler is not None:
            self._sampler.kill(block=False)
            self._sampler = None
            self.sample()
        self.final = ctx.is_worker

    def add(self, record: Any) -> None:
        self.requests += 1

    def ship(self) -> Any:
        data, self.requests = {"final": self.final, "requests": self.requests}, 0
        return data

    def merge(self, data: Any, worker: str) -> None:
        data = data or {}
        self.ledger.report(worker, bool(data.get("final")), int(data.get("requests") or 0))

    def summarize(self, summary: Summary) -> None:
        summary["integrity"] = self.ledger.summary() if self.ctx.is_master else None  # a local run has no ledger

    def lines(self, summary: dict[str, Any]) -> list[str]:
        return integrity_lines(summary.get("integrity"))

    def _now(self) -> float:
        return time.time() - (self.ctx.started_at or time.time())

    def _on_heartbeat(self, client_id: Any, timestamp: float) -> None:
        started = self.ctx.started_at
        if started is None:
            return
        stall = self.ledger.heartbeat(str(client_id), timestamp - started)
        if stall is not None:
            log.warning("loadlib: %s", stall_line(str(client_id), *stall))

    def refused(self, name: str, why: str) -> None:
        """The handshake's gate refused a worker: during the test, the ledger keeps it (and stops its users if it
        had any); before, it never was part of the run."""
        if self.ctx.started_at is not None and self._sampler is not None:
            self.ledger.refuse(name, self._now(), why)

    def _sample_forever(self) -> None:
        """Once a second until stopped; a sample that fails is logged and the next one goes on (a dead sampler
        would leave the rest of the run out of the ledger)."""
        while True:
            try:
                self.sample()
            except Exception:
                log.exception("loadlib: the worker ledger's sample failed")
            gevent.sleep(SAMPLE_INTERVAL_S)

    def sample(self) -> None:
        """Record losses, then each live worker's users and the runner's target; while the test is not running
        (stopping: workers leave as they should) nothing is integrated."""
        runner = self.ctx.environment.runner
        now = self._now()
        if runner.state not in (STATE_RUNNING, STATE_SPAWNING):
            self.ledger.pause(now)
            return
        clients = {str(c.id): c for c in runner.clients.all}
        for name, entry in list(self.ledger.workers.items()):
            client = clients.get(name)
            if entry.lost_s is None and (client is None or client.state == STATE_MISSING):
                self._lose(name, now, "quit" if client is None else "missing heartbeat")
        users = {n: sum(c.user_classes_count.values()) for n, c in clients.items() if c.state != STATE_MISSING}
        self.ledger.tick(now, int(runner.target_user_count or 0), users)

    def _lose(self, name: str, now: float, how: str) -> None:
        if not self.ledger.lose(name, now, how):
            return
        entry = self.ledger.workers[name]
        message = f"worker {name} lost at {entry.lost_s:.1f} s ({how}) with {entry.users} users"
        log.warning("loadlib: %s: the run is incomplete", message)
        self.ctx.events.endpoint_event.fire(kind="worker_lost", endpoint="", message=message)


def _quit_awaiting_final_reports(runner: MasterRunner, part: WorkersPart) -> None:
    """Locust's MasterRunner.quit, with its fixed 0.5 s wait for final reports replaced by a wait for every live
    worker's final report, at most --llm-final-report-wait-s."""
    runner.stop(send_stop_to_client=False)
    lost = {e.name for e in part.ledger.lost}
    alive = [str(c.id) for c in runner.clients.all if c.state != STATE_MISSING and str(c.id) not in lost]
    for client in runner.clients.all:
        runner.server.send_to_client(Message("quit", None, client.id))
    limit = float(part.ctx.options.llm_final_report_wait_s or 0.0)
    deadline = time.monotonic() + max(limit, 0.5)
    gevent.sleep(0.1)
    while time.monotonic() < deadline and part.ledger.awaiting_final(alive):
        gevent.sleep(0.1)
    part.ledger.ended = True
    missing = part.ledger.awaiting_final(alive)
    if missing:
        log.warning("loadlib: no final report within %.0f s from %s", limit, ", ".join(missing))
    runner.greenlet.kill(block=True)
