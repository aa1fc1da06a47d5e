"""Incidents: outages nobody scheduled, read off each node's breaker timeline (docs/failover.md, "Incidents").

A drill knows its window; a real outage does not announce itself. What a node does know is its own timeline of an
endpoint: the first failure, the breaker opening, the first answer from another endpoint for requests that wanted
this one, the breaker closing again. Each node keeps that timeline per endpoint (O(1) per attempt: a dict lookup),
ships every incident that changed with its report, and the master groups the nodes' incidents of one endpoint that
overlap in time into one incident of the run, with per-worker times (p50 and max) as for drills.

Times are wall-clock unix seconds, as in the drill ledger (nodes' clocks are assumed synced).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

MAX_INCIDENTS = 1_000  # per node: a flapping breaker must not grow the master without bound


@dataclass(slots=True)
class NodeIncident:
    """One node's incident of one endpoint: from its first failure to its breaker's closing (None: still open).
    `failover_at`: the end of the first ok user request that preferred the endpoint and another one answered (not a
    hedge win); `user_requests` / `user_errors`: the node's user-visible requests that ended within the incident."""

    seq: int
    endpoint: str
    first_failure_at: float
    last_failure_at: float
    opened_at: float | None = None
    failover_at: float | None = None
    closed_at: float | None = None
    user_requests: int = 0
    user_errors: int = 0

    def failed(self, end: float) -> None:
        self.first_failure_at = min(self.first_failure_at, end)
        self.last_failure_at = max(self.last_failure_at, end)

    def user_request(self, end: float, preferred: str, answered: str | None, ok: bool) -> None:
        """`answered` is None for a failed request and for a hedge that won its race (neither is a failover)."""
        if end < self.first_failure_at:
            return
        self.user_requests += 1
        self.user_errors += not ok
        if ok and preferred == self.endpoint and answered not in (None, self.endpoint):
            self.failover_at = end if self.failover_at is None else min(self.failover_at, end)


class Incidents:
    """One node's incidents (or, on the master, every node's, by worker). Not thread-safe (greenlets are fine).

    A **candidate** is a streak of counted failures of an endpoint whose breaker is closed; an answer from the
    endpoint to an attempt sent after the streak's first failure ends it (the endpoint works). The breaker opening
    turns the candidate into an incident; the incident ends when the breaker closes (a half-open probe that fails
    reopens it: the same incident)."""

    def __init__(self, max_incidents: int = MAX_INCIDENTS) -> None:
        self.max_incidents = max_incidents
        self._candidates: dict[str, NodeIncident] = {}
        self._running: dict[str, NodeIncident] = {}
        self._changed: dict[int, NodeIncident] = {}
        self._seq = 0
        self.dropped = 0
        self.by_worker: dict[tuple[str, int], NodeIncident] = {}  # the master's merged view (and a local run's)

    # -- a node's inputs -----------------------------------------------------------------------------------------------

    def attempt(self, endpoint: str, start: float, end: float, counted: bool | None) -> None:
        """One attempt ended: `counted` True for a failure the breaker counts, False for an answer, None for an
        attempt that tells nothing of its endpoint (a hedge's loser, one cut off by the end of the run)."""
        if counted is None:
            return
        running = self._running.get(endpoint)
        if running is not None:
            if counted:
                running.failed(end)
                self._changed[running.seq] = running
            return
        cand = self._candidates.get(endpoint)
        if counted:
            if cand is None:
                self._candidates[endpoint] = NodeIncident(0, endpoint, end, end)
            else:
                cand.failed(end)
        elif cand is not None and start >= cand.first_failure_at:
            del self._candidates[endpoint]

    def transition(self, endpoint: str, new: str, at: float) -> None:
        """The node's breaker of `endpoint` entered `new` ("open", "half_open", "closed") at `at`."""
        if new == "open" and endpoint not in self._running:
            if self._seq >= self.max_incidents:
                self.dropped += 1
                return
            self._seq += 1
            inc = self._candidates.pop(endpoint, None) or NodeIncident(0, endpoint, at, at)
            inc.seq, inc.opened_at = self._seq, at
            self._running[endpoint] = self._changed[inc.seq] = inc
        elif new == "closed" and endpoint in self._running:
            inc = self._running.pop(endpoint)
            inc.closed_at = at
            self._changed[inc.seq] = inc

    def user_request(self, end: float, preferred: str, answered: str | None, ok: bool) -> None:
        """One user-visible request ended (see NodeIncident.user_request for `answered`)."""
        for inc in self._candidates.values():
            inc.user_request(end, preferred, answered, ok)
        for inc in self._running.values():
            inc.user_request(end, preferred, answered, ok)
            self._changed[inc.seq] = inc

    # -- shipping and merging ------------------------------------------------------------------------------------------

    def ship(self) -> list[dict[str, Any]]:
        """Every incident that changed since the last ship, whole (the master replaces its copy)."""
        out = [asdict(inc) for inc in self._changed.values()]
        self._changed = {}
        return out

    def merge(self, worker: str, items: Iterable[dict[str, Any]]) -> None:
        for item in items:
            self.by_worker[(worker, int(item["seq"]))] = NodeIncident(**item)

    def keep_own(self, node: str) -> None:
        """A local run is its own master: its shipped incidents are its merged view."""
        self.merge(node, self.ship())


# -- figures -----------------------------------------------------------------------------------------------------------


def incident_figures(by_worker: dict[tuple[str, int], NodeIncident], t0: float | None, drills: Any) -> list[dict]:
    """The run's incidents, by start: the nodes' incidents of one endpoint that overlap in time are one incident.
    `drills`: (index, endpoint, start, stop) of the run's drills, to name the drill an incident belongs to."""
    out = []
    for endpoint, group in _grouped(by_worker):
        out.append(_incident(endpoint, group, t0, drills))
    out.sort(key=lambda f: (f["start"], f["endpoint"]))
    for n, f in enumerate(out, 1):
        f["index"] = n
    return out


def _grouped(by_worker: dict[tuple[str, int], NodeIncident]) -> list[tuple[str, list[tuple[str, NodeIncident]]]]:
    """Per endpoint, node incidents by first failure; a new group starts after every member's breaker closed."""
    per_endpoint: dict[str, list[tuple[str, NodeIncident]]] = {}
    for (worker, _), inc in by_worker.items():
        per_endpoint.setdefault(inc.endpoint, []).append((worker, inc))
    groups: list[tuple[str, list[tuple[str, NodeIncident]]]] = []
    for endpoint, items in sorted(per_endpoint.items()):
        items.sort(key=lambda wi: wi[1].first_failure_at)
        end = -math.inf
        for worker, inc in items:
            if inc.first_failure_at > end:
                groups.append((endpoint, []))
            groups[-1][1].append((worker, inc))
            end = max(end, math.inf if inc.closed_at is None else inc.closed_at)
    return groups


def _per_worker(group: list[tuple[str, NodeIncident]]) -> dict[str, NodeIncident]:
    """One timeline per worker: a worker whose breaker closed and opened again within the group is one incident from
    its first failure to its last closing."""
    merged: dict[str, NodeIncident] = {}
    for worker, inc in group:
        m = merged.get(worker)
        if m is None:
            merged[worker] = NodeIncident(**asdict(inc))
            continue
        m.failed(inc.first_failure_at)
        m.failed(inc.last_failure_at)
        m.opened_at = _min(m.opened_at, inc.opened_at)
        m.failover_at = _min(m.failover_at, inc.failover_at)
        m.closed_at = None if m.closed_at is None or inc.closed_at is None else max(m.closed_at, inc.closed_at)
        m.user_requests += inc.user_requests
        m.user_errors += inc.user_errors
    return merged


def _incident(endpoint: str, group: list[tuple[str, NodeIncident]], t0: float | None, drills: Any) -> dict[str, Any]:
    nodes = _per_worker(group)
    start = min(n.first_failure_at for n in nodes.values())
    ongoing = any(n.closed_at is None for n in nodes.values())
    end = None if ongoing else max(n.closed_at for n in nodes.values() if n.closed_at is not None)
    requests = sum(n.user_requests for n in nodes.values())
    errors = sum(n.user_errors for n in nodes.values())
    return {
        "index": 0,
        "endpoint": endpoint,
        "start": start,
        "end": end,
        "ongoing": ongoing,
        "at_s": _r(start - t0) if t0 is not None else None,
        "duration_s": _r(end - start) if end is not None else None,
        "drill": next((i for i, e, a, b in drills if e == endpoint and a <= start and (b is None or start <= b)), None),
        "workers": sorted(nodes),
        "detect_s": _spread({w: _since(n.opened_at, n.first_failure_at) for w, n in nodes.items()}),
        "failover_s": _spread({w: _since(n.failover_at, n.first_failure_at) for w, n in nodes.items()}),
        "failback_s": _spread({w: _since(n.closed_at, n.last_failure_at) for w, n in nodes.items()}),
        "user_requests": requests,
        "user_errors": errors,
        "user_error_rate": _r(errors / requests, 6) if requests else None,
    }


def _since(at: float | None, origin: float) -> float | None:
    return None if at is None else _r(max(0.0, at - origin))


def _spread(per_worker: dict[str, float | None]) -> dict[str, Any]:
    """{p50, max, per_worker}; p50 is nearest-rank over the workers that have a value (as for drills)."""
    values = sorted(v for v in per_worker.values() if v is not None)
    p50 = values[max(0, math.ceil(len(values) / 2) - 1)] if values else None
    return {"p50": p50, "max": values[-1] if values else None, "per_worker": dict(sorted(per_worker.items()))}


def _min(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _r(v: float | None, digits: int = 3) -> float | None:
    return None if v is None else round(v, digits)


# -- printed summary ---------------------------------------------------------------------------------------------------


def incident_line(f: dict[str, Any]) -> str:
    """One line per incident, after the drills'."""
    det, fo, fb = f["detect_s"], f["failover_s"], f["failback_s"]
    at = f"+{f['at_s']:.1f} s" if f["at_s"] is not None else f"{f['start']:.3f}"
    span = "still open" if f["ongoing"] else f"for {f['duration_s']:.1f} s"
    n = len(f["workers"])
    drill = f" (drill {f['drill']})" if f["drill"] is not None else ""
    rate = "-" if f["user_error_rate"] is None else f"{f['user_error_rate'] * 100:.2f} %"
    return (
        f"incident {f['index']} {f['endpoint']} at {at} {span}{drill}: detected {_s(det['p50'])} s p50 / "
        f"{_s(det['max'])} s max ({n} worker{'s' if n != 1 else ''}); failed over {_s(fo['p50'])} / {_s(fo['max'])} s;"
        f" failed back {_s(fb['max'])} s max; user-visible errors {f['user_errors']} of {f['user_requests']} ({rate})"
    )


def _s(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"
