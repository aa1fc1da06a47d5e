"""Run integrity: which workers carried the load, when one was lost, and what share of the intended load ran
(docs/metrics.md, "Run integrity"). Pure: the master feeds it (loadlib.locust.workers) with timestamps.

User-seconds are integrated from one sample a second of each worker's users (Locust's own count per worker).
- A worker's users count as running until half a heartbeat interval after its last heartbeat (it died within that
  interval: the estimate is off by at most half a second of its users); Locust finds it missing only three
  heartbeats later, and the seconds sampled in between are taken back when it is declared lost.
- Intended user-seconds: at each sample, the users assigned to every worker, a lost worker's users still included
  (they were meant to run), capped by the runner's target user count (so users Locust moved onto the remaining
  workers are not counted twice). A ramp-up is intended only as far as it has spawned.
A run is incomplete when a worker was lost before the test stopped, when less than MIN_SHARE of the intended
user-seconds ran, or when a worker alive at the end never sent its final report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MIN_SHARE = 0.95
HEARTBEAT_S = 1.0  # Locust's HEARTBEAT_INTERVAL


@dataclass(slots=True)
class WorkerEntry:
    """One worker of the run as the master saw it (times are seconds since the test started)."""

    name: str
    joined_s: float
    last_heartbeat_s: float | None = None
    lost_s: float | None = None
    lost_how: str = ""
    users: int = 0
    users_max: int = 0
    user_s: float = 0.0
    reports: int = 0
    requests: int = 0
    final_report: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "joined_s": _r(self.joined_s),
            "lost_s": _r(self.lost_s),
            "lost_how": self.lost_how or None,
            "users_max": self.users_max,
            "user_s": _r(self.user_s),
            "reports": self.reports,
            "requests": self.requests,
            "final_report": self.final_report,
        }


class WorkerLedger:
    """Every worker's join, heartbeats, users, reports and loss; the intended and the run user-seconds."""

    def __init__(self) -> None:
        self.workers: dict[str, WorkerEntry] = {}
        self.intended_user_s = 0.0
        self.rebalanced = False
        self.ended = False  # the test stopped and the final reports were awaited
        self._last_tick: float | None = None

    def join(self, name: str, t: float) -> None:
        if name not in self.workers:
            self.workers[name] = WorkerEntry(name, t, last_heartbeat_s=t)

    def heartbeat(self, name: str, t: float) -> None:
        e = self.workers.get(name)
        if e is not None and e.lost_s is None:
            e.last_heartbeat_s = t

    def report(self, name: str, final: bool, requests: int = 0) -> None:
        e = self.workers.get(name)
        if e is not None:
            e.reports += 1
            e.requests += requests
            e.final_report = e.final_report or final

    def tick(self, t: float, target: int, users: Mapping[str, int]) -> None:
        """One sample: each live worker's users now and the runner's target."""
        for name in users:
            self.join(name, t)
        dt = t - self._last_tick if self._last_tick is not None else 0.0
        self._last_tick = t
        assigned = 0
        for e in self.workers.values():
            if e.lost_s is not None:
                assigned += e.users
                continue
            n = users.get(e.name, 0)
            if n > e.users and self.lost:
                self.rebalanced = True
            e.users, e.users_max = n, max(e.users_max, n)
            e.user_s += n * dt
            assigned += n
        self.intended_user_s += min(target, assigned) * dt

    def pause(self, t: float) -> None:
        """A sample while the test is not running: the time since the last sample counts for nobody."""
        self._last_tick = t

    def lose(self, name: str, t: float, how: str) -> None:
        """The worker stopped carrying its users (a missing heartbeat, or it quit) before the test stopped."""
        e = self.workers.get(name)
        if e is None or e.lost_s is not None:
            return
        last = e.last_heartbeat_s
        e.lost_s = min(last + HEARTBEAT_S / 2, t) if last is not None else t  # it died within the next interval
        e.lost_how = how
        sampled_until = self._last_tick if self._last_tick is not None else e.lost_s
        e.user_s -= e.users * max(sampled_until - e.lost_s, 0.0)  # sampled after its last sign of life

    @property
    def lost(self) -> list[WorkerEntry]:
        return [e for e in self.workers.values() if e.lost_s is not None]

    def awaiting_final(self, alive: Iterable[str]) -> list[str]:
        """Workers among `alive` whose final report has not come."""
        return [n for n in alive if n in self.workers and not self.workers[n].final_report]

    def summary(self) -> dict[str, Any] | None:
        """The `integrity` block of the run's summary (None without workers: a local run)."""
        if not self.workers:
            return None
        ran = sum(e.user_s for e in self.workers.values())
        share = ran / self.intended_user_s if self.intended_user_s > 0 else None
        reasons = self._reasons(share)
        return {
            "complete": not reasons,
            "reasons": reasons,
            "intended_user_s": _r(self.intended_user_s),
            "ran_user_s": _r(ran),
            "share": _r(share, 4),
            "rebalanced": self.rebalanced if self.lost else None,
            "final_reports_awaited": self.ended,
            "workers": [e.to_dict() for e in self.workers.values()],
        }

    def _reasons(self, share: float | None) -> list[str]:
        out = [
            f"worker {e.name} lost at {e.lost_s:.1f} s ({e.lost_how}): its {e.users} users stopped"
            + (", and Locust moved them onto the other workers" if self.rebalanced else "")
            for e in self.lost
        ]
        if share is not None and share < MIN_SHARE:
            out.append(f"{share * 100:.1f} % of the intended user-seconds ran (under {MIN_SHARE * 100:.0f} %)")
        if self.ended:
            alive = [e.name for e in self.workers.values() if e.lost_s is None]
            out += [f"worker {n} never sent its final report" for n in self.awaiting_final(alive)]
        return out


def integrity_lines(block: Mapping[str, Any] | None) -> list[str]:
    """The console's lines: one on a complete run, the reasons and each lost worker on an incomplete one."""
    if not block:
        return []
    share = block.get("share")
    ran = f"{share * 100:.1f} % of the intended user-seconds ran" if share is not None else "no load ran"
    workers = block.get("workers") or []
    finals = sum(1 for w in workers if w.get("final_report"))
    tail = f"; final reports from {finals} of {len(workers)} workers" if block.get("final_reports_awaited") else ""
    if block.get("complete"):
        return [f"run integrity OK: {len(workers)} workers, {ran}{tail}"]
    return [f"RUN INCOMPLETE: {ran}{tail}", *(f"  {r}" for r in block.get("reasons") or [])]


def _r(v: float | None, digits: int = 3) -> float | None:
    return None if v is None else round(v, digits)
