"""Failover as a node part: each load node's dispatcher (breakers, router, retry budget, client-side drill faults),
its drill ledger and user-visible request statistics, and on the master the merged figures, every worker's breaker
states and the run's failover events (docs/failover.md).

Events (breaker transitions, failover, failback, hedges, drill start and stop) go out on loadlib's `endpoint_event`:
this part logs them, keeps them for the summary and the web UI, and the sink part writes them to InfluxDB.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

from loadlib.errors import ErrorClass
from loadlib.failover.breaker import State, Transition
from loadlib.failover.client_faults import ClientFault
from loadlib.failover.dispatch import UNJUDGED, Delivery, Dispatcher
from loadlib.failover.figures import drill_figures, lines, quality_figures, traffic_series
from loadlib.failover.incidents import incident_figures, incident_line
from loadlib.failover.ledger import Ledger
from loadlib.failover.pool import PoolConfig
from loadlib.locust.parts import Node, NodePart
from loadlib.metrics.summary_types import Summary
from loadlib.metrics.user_requests import UserRequestStats
from loadlib.records.record import RequestRecord
from loadlib.records.user_request import UserRequest

log = logging.getLogger("loadlib.failover")
MAX_EVENTS = 10_000
HEDGE_EVENT_EVERY_S = 10.0
STATE_CODE = {State.CLOSED: 0, State.HALF_OPEN: 1, State.OPEN: 2}


class FailoverPart(NodePart):
    key = "llm_failover"

    def __init__(self, events: Any, sinks: Any) -> None:
        self.events = events
        self.sinks = sinks
        self.ledger = Ledger()
        self.users = UserRequestStats()
        self.dispatcher: Dispatcher | None = None
        self.pool: PoolConfig | None = None
        self.node = "local"
        self.is_worker = False
        self.log: list[dict[str, Any]] = []  # this node's events (shipped) or, on the master, everyone's
        self.dropped_events = 0
        self.failed_over: dict[str, str] = {}  # preferred endpoint -> the one answering instead
        self.flipped_at: dict[str, float] = {}  # preferred endpoint -> start of the request that changed it last
        self.hedge_event_at = 0.0
        self.active = False  # the run fails over, retries, hedges or drills (see _active)
        events.endpoint_event.add_listener(self.on_event)
        events.worker_health.add_listener(self.on_tick)

    # the run

    def start(self, ctx: Node) -> None:
        self.node, now = ctx.node, time.time()
        self.is_worker = ctx.is_worker  # a worker ships its incidents; the master (or a local run) writes them
        self.ledger = Ledger()
        self.ledger.start(now)
        self.log, self.failed_over, self.flipped_at = [], {}, {}
        settings = ctx.settings
        self.pool = settings.pool if settings is not None else getattr(ctx, "pool", None)
        self.active = _active(self.pool)
        self.ledger.watch_in_flight = self.pool is not None and bool(self.pool.drills)
        if ctx.generates_load and settings is not None and settings.pool is not None:
            self.dispatcher = Dispatcher(settings.pool, on_transition=self.on_transition)

    def add(self, record: RequestRecord) -> None:
        if not self.active:
            return
        start = record.start_unix_ns / 1e9
        at = start + (record.e2e_ms or 0.0) / 1000.0
        # a hedge's loser and an attempt the run's end cut off are attempts, not errors (ErrorClass.is_error)
        self.ledger.attempt(record.endpoint, not record.status.is_error, at, start, self._counted(record.status))
        self.ledger.quality(record.endpoint, record.status.value, record.output_tokens)

    def _counted(self, status: ErrorClass) -> bool | None:
        """For the incidents: a failure the breaker counts, an answer (False), or neither (None: it tells nothing)."""
        if status in UNJUDGED or self.pool is None:
            return None
        return status in self.pool.breaker.counted

    def user_request(self, user: UserRequest, delivery: Delivery) -> None:
        """One user-visible request ended on this node. Without failover, retries, hedges or drills it is its one
        attempt, counted with the attempts: nothing is kept twice."""
        if not self.active:
            return
        self.users.add(user)
        start = user.start_unix_ns / 1e9
        self.ledger.user_request(
            start, user.end_unix, user.preferred, user.endpoint, user.ok, user.ttft_ms, user.attempts, user.hedged_won
        )
        self.sinks.user_request(user)
        if user.ok:
            self._watch_failover(user)
        if delivery.hedged:
            self._hedge_event()

    def _watch_failover(self, user: UserRequest) -> None:
        """A node-level failover is the first failed-over answer for a preferred endpoint (a hedge that won its race
        is not one); failback the first answer from the preferred one again. A request sent before the answer that
        made the last change cannot flip it back: it was routed by what the node knew before (one routed away while
        the breaker was half-open ends after the probe that closed it; one the preferred endpoint took before the
        outage ends after the first failover)."""
        preferred, answered = user.preferred, user.endpoint or ""
        start = user.start_unix_ns / 1e9
        if start < self.flipped_at.get(preferred, 0.0):
            return
        if user.failed_over and preferred not in self.failed_over:
            self.failed_over[preferred], self.flipped_at[preferred] = answered, user.end_unix
            self.fire("failover", preferred, f"requests for {preferred} answered by {answered}")
        elif answered == preferred and preferred in self.failed_over:
            self.flipped_at[preferred] = user.end_unix
            self.fire("failback", preferred, f"{preferred} answers again (was {self.failed_over.pop(preferred)})")

    def _hedge_event(self) -> None:
        now = time.monotonic()
        if now - self.hedge_event_at < HEDGE_EVENT_EVERY_S or self.dispatcher is None:
            return
        self.hedge_event_at = now
        d = self.dispatcher
        self.fire("hedge", "", f"{d.hedges} hedges sent so far, {d.hedges_won} won their race")

    # events

    def fire(self, kind: str, endpoint: str, message: str) -> None:
        self.events.endpoint_event.fire(kind=kind, endpoint=endpoint, message=message)

    def on_transition(self, t: Transition) -> None:
        at = time.time() - (time.monotonic() - t.at)
        self.ledger.transition(t.endpoint, t.old.value, t.new.value, at, t.reason)
        self.sinks.breaker(t.endpoint, STATE_CODE[t.new])
        self.fire(f"circuit_{t.new.value}", t.endpoint, t.reason)

    def on_event(self, kind: str = "", endpoint: str = "", message: str = "", **_: Any) -> None:
        """Every endpoint event: logged, kept for the summary (bounded), written by the sink part."""
        log.info("loadlib: %s %s on %s: %s", kind, endpoint, self.node, message)
        self._keep({"at": time.time(), "kind": kind, "endpoint": endpoint, "worker": self.node, "message": message})

    def _keep(self, event: dict[str, Any]) -> None:
        if len(self.log) < MAX_EVENTS:
            self.log.append(event)
        else:
            self.dropped_events += 1

    def on_tick(self, **_: Any) -> None:
        """Once a second on a load node: every breaker's state, so a dashboard draws a step line."""
        if self.dispatcher is not None and self.active:
            for name, breaker in self.dispatcher.breakers.items():
                self.sinks.breaker(name, STATE_CODE[breaker.state])

    # drills

    def drill(self, data: dict[str, Any]) -> None:
        """A drill started or stopped (the master's message, or the local driver): the ledger's window, and on a
        load node a client-side fault applied or lifted."""
        index, phase, endpoint = int(data["index"]), data["phase"], str(data["endpoint"])
        if phase == "start":
            self.ledger.drill_started(index, endpoint, str(data["fault"]), float(data["at"]))
        else:
            self.ledger.drill_stopped(index, float(data["at"]))
        if self.dispatcher is not None and data.get("client_side"):
            self._client_fault(phase, endpoint, data)

    def _client_fault(self, phase: str, endpoint: str, data: dict[str, Any]) -> None:
        faults = self.dispatcher.faults if self.dispatcher is not None else {}
        if phase == "start":
            until = time.monotonic() + float(data["for_s"])
            faults[endpoint] = ClientFault(str(data["fault"]), until, dict(data.get("params") or {}))
        else:
            faults.pop(endpoint, None)

    def write_drills(self) -> None:
        """The master's (or local runner's) drill and incident figures as `llm_drill` and `llm_incident` points, at
        test stop while the sink is open: exact but for a worker's last report, which may come after (the JSON
        summary has it)."""
        if self.pool is None or not self.active or self.is_worker:
            return
        for f in drill_figures(self.ledger, _applicable(self.pool)) if self.pool.drills else []:
            self.sinks.drill(f)
        self.ledger.incidents.keep_own(self.node)
        for f in self.incidents():
            self.sinks.incident(f)

    # reports

    def ship(self) -> Any:
        events, self.log = self.log, []
        data = {"ledger": self.ledger.ship(), "users": self.users.serialize(), "events": events}
        self.users.reset()
        return data

    def merge(self, data: Any, worker: str) -> None:
        self.ledger.merge(worker, data["ledger"])
        self.users.merge_serialized(data["users"])
        for event in data["events"]:
            self._keep(event)

    def reset(self) -> None:
        self.users.reset()

    def summarize(self, summary: Summary) -> None:
        attempts = int((summary.get("total") or {}).get("count") or 0)
        targets = _applicable(self.pool)
        figures = drill_figures(self.ledger, targets) if targets is not None else []
        self.ledger.incidents.keep_own(self.node)
        summary["failover"] = {
            "pool": _describe(self.pool),
            "user_requests": self.users.summary(attempts) if self.active else None,
            "breakers": self.ledger.breaker_states(),
            "drills": figures,
            "incidents": self.incidents(),
            "quality": quality_figures(self.ledger),
            "traffic": traffic_series(self.ledger),
            "events": sorted(self.log, key=lambda e: e["at"]),
            "events_dropped": self.dropped_events,
            "passed": all(f["passed"] for f in figures) if figures else None,
        }

    def lines(self, summary: dict[str, Any]) -> list[str]:
        data = summary.get("failover")
        if not data or data["user_requests"] is None:
            return []
        u = data["user_requests"]
        out = [_user_line(u)]
        out += [_breaker_line(w, states) for w, states in sorted(data["breakers"].items())]
        out += [incident_line(f) for f in data.get("incidents") or []]
        return out + lines(data["drills"], data["quality"] if u["failed_over"] else {})  # no fallback answered: moot

    def incidents(self) -> list[dict[str, Any]]:
        """The run's incidents from every node's breaker timeline (docs/failover.md, "Incidents")."""
        drills = [(d.index, d.endpoint, d.start, d.stop) for d in self.ledger.ordered()]
        return incident_figures(self.ledger.incidents.by_worker, self.ledger.t0, drills)


def _active(pool: PoolConfig | None) -> bool:
    """Whether the run fails over, retries, hedges or drills: only then do user-visible requests differ from
    attempts enough to be written and printed on their own."""
    if pool is None:
        return False
    return len(pool.endpoints) > 1 or pool.retry.max_attempts > 1 or pool.hedge_after_ms > 0 or bool(pool.drills)


def _applicable(pool: PoolConfig | None) -> Any:
    """The pool's targets that can apply: a pool of one has nowhere to fail over to (its drill still has a
    failback, the endpoint's first answer after the window, and user-visible errors)."""
    if pool is None:
        return None
    if len(pool.endpoints) == 1:
        return dataclasses.replace(pool.targets, failover_within_s=None)
    return pool.targets


def _describe(pool: PoolConfig | None) -> dict[str, Any] | None:
    if pool is None:
        return None
    return {
        "endpoints": list(pool.names),
        "policy": pool.policy,
        "max_attempts": pool.retry.max_attempts,
        "retry_budget": pool.retry.budget,
        "hedge_after_ms": pool.hedge_after_ms,
        "drills": len(pool.drills),
    }


def _user_line(u: dict[str, Any]) -> str:
    rate = f"{u['error_rate'] * 100:.2f} %" if u["error_rate"] is not None else "n/a"
    per = f"{u['attempts_per_request']:.3f}" if u["attempts_per_request"] is not None else "n/a"
    return (
        f"User-visible requests: {u['requests']} ({u['errors']} failed, {rate}), {u['attempts']} attempts "
        f"({per} per request; {u['retried']} retried, {u['hedged']} hedged, {u.get('hedged_won', 0)} won by the "
        f"hedge, {u['failed_over']} failed over). "
        "The rows above count attempts, as Locust's table does but for hedges' cancelled losers."
    )


def _breaker_line(worker: str, states: dict[str, Any]) -> str:
    parts = [f"{name} {s['state']}" for name, s in sorted(states.items())]
    return f"  breakers on {worker}: {', '.join(parts)}"
