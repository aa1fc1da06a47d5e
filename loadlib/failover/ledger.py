"""The drill ledger: what each node saw of failover drills, tallied as it goes, shipped as deltas, merged on the master.

Why a ledger and not the request records: a drill's figures (docs/failover.md, "Drill figures") need a few firsts
per node (first breaker opening, first failover success, first failback), counts in windows and two TTFT
histograms. Keeping those streaming costs O(1) per request on a worker (a loop over the few drills still tracked) and
a payload of a few hundred bytes per report, where shipping every request would cost the master a list per run.

Times are wall-clock unix seconds (floats) from every node, so the nodes' clocks are assumed synced (NTP): a worker
whose clock is off by 0.5 s reports its firsts 0.5 s off. A drill's window [start, stop] is the same on every node:
the master drives drills and every node calls `drill_started` / `drill_stopped` with the scheduled times, at or
before those times (a request that ends before the ledger knows of a drill is judged by what it knew then). Drills
are expected not to overlap: a drill is tracked from its start until the next drill's start.

On a worker the ledger keeps, besides the shippable tallies, its own firsts per drill (they decide its switch
window) and its breakers' states; `ship()` returns what was tallied since the last ship and clears it. On the master
`merge(worker, data)` adds counts and histograms, keeps the earliest first per worker and appends transitions with the
worker's name. A local run (no workers) is one ledger that is both: its own figures sit under its `node` name.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field, fields
from typing import Any

from loadlib.failover import traffic
from loadlib.failover.incidents import Incidents
from loadlib.failover.switch import SwitchTally
from loadlib.histogram import Histogram

FORMAT = 1
MAX_TRANSITIONS = 10_000
QUALITY_STATUSES = ("ok", "schema_invalid", "nondeterministic", "truncated")
_QUALITY = frozenset(QUALITY_STATUSES)
COUNTS = (
    "user_requests",
    "user_errors",
    "user_retried",
    "switch_requests",
    "switch_errors",
    "attempts",
    "attempt_errors",
    "in_flight",
    "in_flight_failed",
)
FIRSTS = ("detect_at", "failover_at", "failback_at")
HISTOGRAMS = ("ttft_before_ms", "ttft_failed_over_ms", "ttft_users_before_ms", "ttft_during_ms", "ttft_after_ms")
_PRUNE_AFTER_S = 60.0  # a drill is dropped from the per-request loop this long after the next drill started
_RECENT_S = 5.0  # attempts kept this long after their end, for a drill the node learns of late (in_flight)

Transition = tuple[str, str, str, str, float, str]  # worker, endpoint, old, new, at, reason


@dataclass(slots=True)
class NodeDrill:
    """One node's share of a drill. `exposed`: its user requests that preferred the drilled endpoint and completed
    in the window (a node without any had nothing to fail over, so no check expects it to). The firsts are unix
    seconds, None until seen."""

    exposed: int = 0
    detect_at: float | None = None
    failover_at: float | None = None
    failback_at: float | None = None

    def take_first(self, name: str, at: float | None) -> bool:
        """Keep the earlier of the two values of a first; whether `at` was earlier (calls can come out of order)."""
        old = getattr(self, name)
        if at is None or (old is not None and old <= at):
            return False
        setattr(self, name, at)
        return True


@dataclass(slots=True)
class Drill:
    """One drill's window and the tallies of what completed in it. `since` is where "before" begins (the previous
    drill's stop, -inf for the first: the run start), `until` where tracking ends (the next drill's start)."""

    index: int
    endpoint: str
    fault: str
    start: float
    stop: float | None = None
    since: float = -math.inf
    until: float | None = None
    user_requests: int = 0
    user_errors: int = 0
    user_retried: int = 0
    switch_requests: int = 0
    switch_errors: int = 0
    attempts: int = 0
    attempt_errors: int = 0
    in_flight: int = 0  # attempts to the endpoint sent before the start and ended after it
    in_flight_failed: int = 0
    ttft_before_ms: Histogram = field(default_factory=Histogram)
    ttft_failed_over_ms: Histogram = field(default_factory=Histogram)
    ttft_users_before_ms: Histogram = field(default_factory=Histogram)  # every ok user request before the start
    ttft_during_ms: Histogram = field(default_factory=Histogram)  # every ok user request in the window
    ttft_after_ms: Histogram = field(default_factory=Histogram)  # ... from the stop to the next drill's start
    nodes: dict[str, NodeDrill] = field(default_factory=dict)

    def in_window(self, at: float) -> bool:
        return self.start <= at and (self.stop is None or at <= self.stop)

    def tracks(self, at: float) -> bool:
        """Whether an event at `at` belongs to this drill at all (from its start until the next drill's)."""
        return self.start <= at and (self.until is None or at < self.until)

    def node(self, name: str) -> NodeDrill:
        n = self.nodes.get(name)
        if n is None:
            n = self.nodes[name] = NodeDrill()
        return n

    def has_news(self) -> bool:
        return (
            bool(self.nodes) or any(getattr(self, c) for c in COUNTS) or any(getattr(self, h).count for h in HISTOGRAMS)
        )

    def clear(self) -> None:
        """Forget the tallies (shipped, or reset), keep the window."""
        for c in COUNTS:
            setattr(self, c, 0)
        for h in HISTOGRAMS:
            setattr(self, h, Histogram())
        self.nodes = {}


@dataclass(slots=True)
class Quality:
    """Fallback quality of one endpoint: checked outputs by status, output tokens of the ok ones."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(QUALITY_STATUSES, 0))
    output_tokens: Histogram = field(default_factory=Histogram)


class Ledger:
    """Drill tallies of one node (a worker, or a local run) or of a whole run (the master). Not thread-safe
    (greenlets are fine)."""

    def __init__(self, node: str = "local", max_transitions: int = MAX_TRANSITIONS) -> None:
        self.node = node
        self.max_transitions = max_transitions
        self.t0: float | None = None
        self.drills: dict[int, Drill] = {}
        self.states: dict[str, dict[str, dict[str, Any]]] = {}
        self._live: list[Drill] = []
        self._boundary = -math.inf
        self.incidents = Incidents()  # not reset with the statistics: an outage is a fact
        self.watch_in_flight = False  # count attempts in flight at each drill's start (a run with drills sets it)
        self._recent: dict[str, deque[tuple[float, float, bool]]] = {}  # endpoint -> (start, end, ok) of late
        self.reset()

    # -- lifecycle ---------------------------------------------------------------------------------------------------

    def start(self, at: float) -> None:
        """The test starts: traffic bins count from `at`; drills and breakers of a previous test are forgotten (drills
        already scheduled for this one, starting at or after `at`, are kept)."""
        self.t0 = at
        self.states = {}
        self.incidents = Incidents()
        self.drills = {i: d for i, d in self.drills.items() if d.start >= at}
        self.reset()

    def reset(self) -> None:
        """Forget every tally, first and transition (Locust's statistics were reset); keep the drill windows, the run
        start and the breakers' current states (they are facts, not statistics)."""
        for d in self.drills.values():
            d.clear()
        self.transitions: list[Transition] = []
        self.transitions_dropped: dict[str, int] = {}
        self.traffic: dict[str, traffic.Bins] = {}  # bins of traffic_step seconds (loadlib.failover.traffic)
        self.traffic_step = 1
        self.fallback: dict[str, Quality] = {}
        self._kept: dict[str, int] = {}
        self._mine: dict[int, NodeDrill] = {}
        self._switch = SwitchTally()
        self._pending_before: dict[str, Histogram] = {}
        self._pending_users = Histogram()  # every ok user request's TTFT since the last drill's stop
        self._changed_states: set[str] = set()
        self._link()

    # -- drills --------------------------------------------------------------------------------------------------------

    def drill_started(self, index: int, endpoint: str, fault: str, at: float) -> None:
        """Drill `index` breaks `endpoint` with `fault` from `at` (may be called ahead of `at`, never after it).
        TTFTs of ok requests preferring `endpoint` seen since the previous drill become its "before" histogram."""
        d = self.drills.get(index)
        if d is None:
            d = self.drills[index] = Drill(index, endpoint, fault, at)
            for start, end, ok in self._recent.get(endpoint, ()):  # ended before this node heard of the drill
                if start < at <= end:
                    d.in_flight += 1
                    d.in_flight_failed += not ok
        d.endpoint, d.fault, d.start = endpoint, fault, at
        pending = self._pending_before.pop(endpoint, None)
        if pending is not None:
            d.ttft_before_ms.merge(pending)
        d.ttft_users_before_ms.merge(self._pending_users)
        self._pending_before, self._pending_users = {}, Histogram()
        self._link()

    def drill_stopped(self, index: int, at: float) -> None:
        """Drill `index` ends at `at` (its window is [start, stop], both ends included)."""
        d = self.drills.get(index)
        if d is not None:
            d.stop = at
            self._link()

    def ordered(self) -> list[Drill]:
        """Drills by start time (then index)."""
        return sorted(self.drills.values(), key=lambda d: (d.start, d.index))

    def _link(self) -> None:
        """Recompute each drill's `since` / `until` from its neighbours and the list the per-event loops walk."""
        drills = self.ordered()
        for prev, d in zip([None, *drills], drills, strict=False):
            d.since = -math.inf if prev is None else (prev.stop if prev.stop is not None else math.inf)
            if prev is not None:
                prev.until = d.start
        if drills:
            drills[-1].until = None
        self._live = drills
        self._boundary = max((math.inf if d.stop is None else d.stop for d in drills), default=-math.inf)

    def _live_at(self, at: float) -> list[Drill]:
        """The drills an event at `at` may concern; the oldest ones drop out once long past (amortised O(1))."""
        live = self._live
        if live and live[0].until is not None and live[0].until < at - _PRUNE_AFTER_S:
            self._live = live = [d for d in live if d.until is None or d.until >= at - _PRUNE_AFTER_S]
        return live

    def _first(self, d: Drill, name: str, at: float) -> None:
        """A first of this node: kept for its own decisions (switch window) and in the shippable tally."""
        mine = self._mine.get(d.index)
        if mine is None:
            mine = self._mine[d.index] = NodeDrill()
        if mine.take_first(name, at):
            d.node(self.node).take_first(name, at)
            if name == "failover_at":
                self._switch.retract(d, at)

    # -- inputs (the request path) -------------------------------------------------------------------------------------

    def transition(self, endpoint: str, old: str, new: str, at: float, reason: str) -> None:
        """This node's breaker of `endpoint` went from `old` to `new` ("closed", "open", "half_open")."""
        self._keep(self.node, (self.node, endpoint, old, new, at, reason))
        self._set_state(self.node, endpoint, new, at)
        self._changed_states.add(endpoint)
        self.incidents.transition(endpoint, new, at)
        if new != "open":
            return
        for d in self._live_at(at):
            if d.endpoint == endpoint and d.tracks(at):
                self._first(d, "detect_at", at)

    def attempt(
        self, endpoint: str, ok: bool, at: float, start: float | None = None, counted: bool | None = None
    ) -> None:
        """One attempt (of any user request, retries and hedges included) ended at `at`; `ok`: not an error (a hedge's
        cancelled loser is an attempt but no error: docs/failover.md, "Hedging"). `start` (when it was sent) and
        `counted` (a failure the breaker counts; False an answer; None neither) feed the incidents."""
        self.incidents.attempt(endpoint, at if start is None else start, at, counted)
        if self.watch_in_flight and start is not None:
            self._in_flight(endpoint, start, at, ok)
        if self.t0 is None:
            self.t0 = at
        traffic.count(self.traffic, endpoint, math.floor(at - self.t0), 1, int(not ok), self.traffic_step)
        if len(self.traffic[endpoint]) > traffic.MAX_BINS:
            self.traffic_step = traffic.bounded(self.traffic, self.traffic_step)
        for d in self._live_at(at):
            if d.in_window(at):
                d.attempts += 1
                d.attempt_errors += not ok

    def _in_flight(self, endpoint: str, start: float, end: float, ok: bool) -> None:
        """An attempt in flight at the start of a drill of its endpoint is counted there (the streams the fault hit);
        kept a few seconds for a drill this node learns of after it began."""
        for d in self._live_at(end):
            if d.endpoint == endpoint and start < d.start <= end:
                d.in_flight += 1
                d.in_flight_failed += not ok
        recent = self._recent.get(endpoint)
        if recent is None:
            recent = self._recent[endpoint] = deque()
        recent.append((start, end, ok))
        while recent[0][1] < end - _RECENT_S:
            recent.popleft()

    def user_request(
        self,
        start: float,
        end: float,
        preferred: str,
        endpoint: str | None,
        ok: bool,
        ttft_ms: float | None,
        attempts: int,
        hedged_won: bool = False,
    ) -> None:
        """One user-visible request ended at `end`: `preferred` is the endpoint the policy chose first, `endpoint`
        the one that answered (None when none did), `attempts` how many were made (retries and hedges included),
        `hedged_won` whether its hedge answered while the attempt it raced was still running: `endpoint` was faster,
        which is neither a failover (UserRequest.failed_over) nor a failback."""
        answered = None if hedged_won else endpoint  # only decides failover and failback in _during
        self.incidents.user_request(end, preferred, answered if ok else None, ok)
        for d in self._live_at(end):
            if end < d.start:
                if ok and ttft_ms is not None and end >= d.since:
                    d.ttft_users_before_ms.record(ttft_ms)
                    if preferred == d.endpoint:
                        d.ttft_before_ms.record(ttft_ms)
            elif d.until is None or end < d.until:
                self._during(d, end, preferred, answered, ok, ttft_ms, attempts)
        if end >= self._boundary and ok and ttft_ms is not None:
            self._before_any_drill(preferred, ttft_ms)

    def _before_any_drill(self, preferred: str, ttft_ms: float) -> None:
        """After every known drill: the TTFT waits here until the next drill starts (then it is "before": the users',
        and the preferred endpoint's when that drill breaks `preferred`)."""
        self._pending_users.record(ttft_ms)
        h = self._pending_before.get(preferred)
        if h is None:
            h = self._pending_before[preferred] = Histogram()
        h.record(ttft_ms)

    def _during(
        self, d: Drill, end: float, preferred: str, endpoint: str | None, ok: bool, ttft_ms: float | None, attempts: int
    ) -> None:
        """A user request that ended at or after the drill's start, before the next drill's."""
        wanted = preferred == d.endpoint
        away = ok and wanted and endpoint is not None and endpoint != d.endpoint
        if away:
            self._first(d, "failover_at", end)
        elif ok and endpoint == d.endpoint and d.stop is not None and end >= d.stop:
            self._first(d, "failback_at", end)
        if d.stop is not None and end > d.stop:
            if ok and ttft_ms is not None:
                d.ttft_after_ms.record(ttft_ms)
            return
        if ok and ttft_ms is not None:
            d.ttft_during_ms.record(ttft_ms)
        d.user_requests += 1
        d.user_errors += not ok
        d.user_retried += attempts > 1
        if wanted:
            d.node(self.node).exposed += 1
        mine = self._mine.get(d.index)
        if mine is None or mine.failover_at is None or end <= mine.failover_at:
            self._switch.count(d, end, ok)
        if away and ttft_ms is not None:
            d.ttft_failed_over_ms.record(ttft_ms)

    def quality(self, endpoint: str, status: str, output_tokens: int | None) -> None:
        """One attempt's output of `endpoint` checked: status "ok", "schema_invalid", "nondeterministic" or
        "truncated". Any other status (an error class: the attempt failed) has no output to judge and is ignored, so
        a caller may pass every attempt's status."""
        if status not in _QUALITY:
            return
        q = self.fallback.get(endpoint)
        if q is None:
            q = self.fallback[endpoint] = Quality()
        q.counts[status] += 1
        if status == "ok" and output_tokens is not None:
            q.output_tokens.record(output_tokens)

    # -- breakers ------------------------------------------------------------------------------------------------------

    def _keep(self, worker: str, t: Transition) -> None:
        """Append a transition unless the node already has `max_transitions` (a flapping breaker must not grow the
        master without bound); the dropped ones are counted."""
        kept = self._kept.get(worker, 0)
        if kept >= self.max_transitions:
            self.transitions_dropped[worker] = self.transitions_dropped.get(worker, 0) + 1
            return
        self._kept[worker] = kept + 1
        self.transitions.append(t)

    def _set_state(self, worker: str, endpoint: str, state: str, since: float) -> None:
        by_endpoint = self.states.setdefault(worker, {})
        old = by_endpoint.get(endpoint)
        if old is None or since >= old["since"]:
            by_endpoint[endpoint] = {"state": state, "since": since}

    def breaker_states(self) -> dict[str, dict[str, dict[str, Any]]]:
        """worker -> endpoint -> {"state", "since"}: every node's breakers as of their last transition."""
        return {w: {e: dict(s) for e, s in eps.items()} for w, eps in self.states.items()}

    # -- shipping ------------------------------------------------------------------------------------------------------

    def ship(self) -> dict[str, Any]:
        """This node's delta since the last ship (JSON-able; its shape: docs/failover.md, "Drill figures"), then those
        tallies reset. Its own firsts and breaker states stay: they still decide what comes next."""
        data = {
            "v": FORMAT,
            "t0": self.t0,
            "drills": [self._ship_drill(d) for d in self.ordered() if d.has_news()],
            "transitions": [list(t[1:]) for t in self.transitions],
            "transitions_dropped": sum(self.transitions_dropped.values()),
            "breakers": {e: dict(self.states[self.node][e]) for e in sorted(self._changed_states)},
            "traffic": {e: [[s, n, f] for s, (n, f) in sorted(b.items())] for e, b in self.traffic.items()},
            "quality": {e: {**q.counts, "output_tokens": q.output_tokens.to_dict()} for e, q in self.fallback.items()},
            "incidents": self.incidents.ship(),
        }
        self._clear_shipped()
        return data

    def _ship_drill(self, d: Drill) -> dict[str, Any]:
        own = d.nodes.get(self.node) or NodeDrill()
        return {
            "index": d.index,
            "endpoint": d.endpoint,
            "fault": d.fault,
            "start": d.start,
            "stop": d.stop,
            **{c: getattr(d, c) for c in COUNTS},
            **{h: getattr(d, h).to_dict() for h in HISTOGRAMS},
            **{f.name: getattr(own, f.name) for f in fields(NodeDrill)},
        }

    def _clear_shipped(self) -> None:
        for d in self.drills.values():
            d.clear()
        self.transitions = []
        self.transitions_dropped = {}
        self.traffic = {}
        self.fallback = {}
        self._changed_states = set()

    def merge(self, worker: str, data: dict[str, Any]) -> None:
        """Take one worker's `ship()` payload (on the master)."""
        if data.get("v") != FORMAT:
            raise ValueError(f"unsupported ledger format {data.get('v')!r} (expected {FORMAT})")
        for item in data["drills"]:
            self._merge_drill(worker, item)
        for endpoint, old, new, at, reason in data["transitions"]:
            self._keep(worker, (worker, endpoint, old, new, at, reason))
        if data["transitions_dropped"]:
            self.transitions_dropped[worker] = self.transitions_dropped.get(worker, 0) + data["transitions_dropped"]
        for endpoint, s in data["breakers"].items():
            self._set_state(worker, endpoint, s["state"], s["since"])
        self._merge_traffic(data["t0"], data["traffic"])
        self._merge_quality(data["quality"])
        self.incidents.merge(worker, data.get("incidents") or [])

    def _merge_drill(self, worker: str, item: dict[str, Any]) -> None:
        d = self.drills.get(item["index"])
        if d is None:
            d = self.drills[item["index"]] = Drill(item["index"], item["endpoint"], item["fault"], item["start"])
            self._link()
        if d.stop is None and item["stop"] is not None:
            d.stop = item["stop"]
            self._link()
        for c in COUNTS:
            setattr(d, c, getattr(d, c) + item[c])
        for h in HISTOGRAMS:
            getattr(d, h).merge(Histogram.from_dict(item[h]))
        if item["exposed"] or any(item[f] is not None for f in FIRSTS):
            node = d.node(worker)
            node.exposed += item["exposed"]
            for f in FIRSTS:
                node.take_first(f, item[f])

    def _merge_traffic(self, t0: float | None, data: dict[str, list[list[int]]]) -> None:
        """A worker's bins count from its own start: shift them to ours by whole seconds (placement within 0.5 s)."""
        if self.t0 is None:
            self.t0 = t0
        shift = round(t0 - self.t0) if t0 is not None and self.t0 is not None else 0
        for endpoint, rows in data.items():
            for second, n, failed in rows:
                traffic.count(self.traffic, endpoint, second + shift, n, failed, self.traffic_step)
        self.traffic_step = traffic.bounded(self.traffic, self.traffic_step)

    def _merge_quality(self, quality: dict[str, dict[str, Any]]) -> None:
        for endpoint, item in quality.items():
            q = self.fallback.setdefault(endpoint, Quality())
            for status in QUALITY_STATUSES:
                q.counts[status] += item[status]
            q.output_tokens.merge(Histogram.from_dict(item["output_tokens"]))
