"""Run integrity: which workers carried the load, when one was lost, and what share of the intended load ran
(docs/metrics.md, "Run integrity"). Pure: the master feeds it (loadlib.locust.workers) with timestamps.

User-seconds are integrated from one sample a second of each worker's users (Locust's own count per worker).
- A worker's users count as running until half a heartbeat interval after its last heartbeat (it died within that
  interval: the estimate is off by at most half a second of its users); Locust finds it missing only three
  heartbeats later, and the seconds sampled in between are taken back when it is declared lost.
- Intended user-seconds: at each sample, the users assigned to every worker, a lost worker's users still included
  (they were meant to run), capped by the runner's target user count (so users Locust moved onto the remaining
  workers are not counted twice). A ramp-up is intended only as far as it has spawned.
- A worker found missing that sends a heartbeat again (a stalled process, a network pause: Locust says
  "self-healed") recovered: the stall (from its loss to that heartbeat) is kept, its users count again from the
  heartbeat on, and it is no longer lost. Its users were idle during the stall, so the share says what it cost.
- A worker refused by the fingerprint check (loadlib.locust.handshake) is kept as a refusal; one refused after it
  took users (it said hello late) is lost ("refused") like a worker that died.
A run is incomplete when a worker was lost before the test stopped, when less than MIN_SHARE of the intended
user-seconds ran, or when a worker alive at the end never sent its final report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

MIN_SHARE = 0.95
HEARTBEAT_S = 1.0  # Locust's HEARTBEAT_INTERVAL
FRESH_S = 3 * HEARTBEAT_S  # Locust finds a worker missing after 4 to 5 silent heartbeat intervals
RECOUNT_S = 4.0  # Locust's worker report interval (3 s) and a sample
MISSING = "missing heartbeat"
REFUSED = "refused"


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
    stalls: list[tuple[float, float]] = field(default_factory=list)  # (from_s, to_s) of each stall it recovered from
    resumed_s: float | None = None  # its recovery, until the next sample integrates its users from there

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
            "stalls": [{"from_s": _r(a), "to_s": _r(b)} for a, b in self.stalls],
        }


class WorkerLedger:
    """Every worker's join, heartbeats, users, reports and loss; the intended and the run user-seconds."""

    def __init__(self) -> None:
        self.workers: dict[str, WorkerEntry] = {}
        self.intended_user_s = 0.0
        self.rebalanced = False
        self.ended = False  # the test stopped and the final reports were awaited
        self.refused: list[dict[str, Any]] = []
        self._last_tick: float | None = None

    def join(self, name: str, t: float) -> None:
        if name not in self.workers:
            self.workers[name] = WorkerEntry(name, t, last_heartbeat_s=t)

    def heartbeat(self, name: str, t: float) -> tuple[float, float] | None:
        """A sign of life; from a worker lost to a missing heartbeat it is a recovery: the stall it ends, or None."""
        e = self.workers.get(name)
        if e is None:
            return None
        stall = self._recover(e, t) if e.lost_how == MISSING else None
        if e.lost_s is None:
            e.last_heartbeat_s = t
        return stall

    def _recover(self, e: WorkerEntry, t: float) -> tuple[float, float] | None:
        """The stall ends at t: the worker counts again from t (its users were idle in between, not gone)."""
        if e.lost_s is None or t < e.lost_s:
            return None
        stall = (e.lost_s, t)
        e.stalls.append(stall)
        e.lost_s, e.lost_how, e.resumed_s = None, "", t
        return stall

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
        assigned = sum(self._sample(e, users.get(e.name, 0), t, dt) for e in self.workers.values())
        self.intended_user_s += min(target, assigned) * dt

    def _sample(self, e: WorkerEntry, n: int, t: float, dt: float) -> int:
        """Integrate one worker's users since the last sample; the users it was meant to carry. A lost worker's
        users were meant to run. Right after a recovery the count starts at the recovery; Locust forgets a missing
        worker's users and learns them again from its next spawn or report (at most RECOUNT_S later) while they
        ran all along, so until then its users before the stall stand."""
        if e.lost_s is not None:
            return e.users
        if e.resumed_s is not None:
            since = max(t - e.resumed_s, 0.0)
            if n == 0 and since <= RECOUNT_S:
                return e.users
            e.resumed_s, dt = None, since
        if n > e.users and self.lost:
            self.rebalanced = True
        e.users, e.users_max = n, max(e.users_max, n)
        e.user_s += n * dt
        return n

    def pause(self, t: float) -> None:
        """A sample while the test is not running: the time since the last sample counts for nobody."""
        self._last_tick = t
        for e in self.workers.values():
            e.resumed_s = None

    def lose(self, name: str, t: float, how: str) -> bool:
        """The worker stopped carrying its users (a missing heartbeat, or it quit) before the test stopped: whether
        that is news (not for a worker already lost, or one heard from lately)."""
        e = self.workers.get(name)
        if e is None or e.lost_s is not None or (how == MISSING and self.heard_lately(e, t)):
            return False
        last = e.last_heartbeat_s
        e.lost_s = min(last + HEARTBEAT_S / 2, t) if last is not None else t  # it died within the next interval
        e.lost_how = how
        sampled_until = self._last_tick if self._last_tick is not None else e.lost_s
        e.user_s -= e.users * (sampled_until - e.lost_s)  # sampled after its last sign of life, or ran unsampled
        return True

    @staticmethod
    def heard_lately(e: WorkerEntry, t: float) -> bool:
        """A heartbeat within the last FRESH_S: Locust still holds a recovered worker missing while it rebalances
        onto it (a second or more, in which it reads no message), though a worker it finds missing has been silent
        for four heartbeat intervals at least."""
        return e.last_heartbeat_s is not None and t - e.last_heartbeat_s < FRESH_S

    def refuse(self, name: str, t: float, why: str) -> None:
        """The master refused the worker (another locustfile, options or loadlib): before it took users it is
        only a refusal; after (its hello came late), its users stopped there, as a lost worker's."""
        e = self.workers.get(name)
        had_users = e is not None and e.lost_s is None and e.users_max > 0
        self.refused.append({"name": name, "at_s": _r(t), "reason": why, "had_users": had_users})
        if e is not None:
            e.last_heartbeat_s = None
            self.lose(name, t, REFUSED)

    @property
    def stalled(self) -> list[WorkerEntry]:
        return [e for e in self.workers.values() if e.stalls]

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
            "rebalanced": self.rebalanced if self.lost or self.stalled else None,
            "final_reports_awaited": self.ended,
            "workers": [e.to_dict() for e in self.workers.values()],
            "refused": list(self.refused),
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
    notes = [f"  {line}" for line in (*stall_lines(workers), *refusal_lines(block.get("refused") or []))]
    if block.get("complete"):
        return [f"run integrity OK: {len(workers)} workers, {ran}{tail}", *notes]
    return [f"RUN INCOMPLETE: {ran}{tail}", *(f"  {r}" for r in block.get("reasons") or []), *notes]


def stall_line(name: str, from_s: float, to_s: float) -> str:
    return f"worker {name} stalled {to_s - from_s:.1f} s (no heartbeat) and recovered at {to_s:.1f} s"


def stall_lines(workers: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per stall a worker recovered from: its users were idle for that long (the share counts it)."""
    return [stall_line(w["name"], s["from_s"], s["to_s"]) for w in workers for s in w.get("stalls") or []]


def refusal_lines(refused: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per worker refused during the test: it took no users, or the users it had stopped there."""
    return [
        f"worker {r['name']} refused at {r['at_s']:.1f} s "
        + ("after it took users (they stopped there)" if r.get("had_users") else "before it took any users")
        + f": {r['reason']}"
        for r in refused
    ]


def _r(v: float | None, digits: int = 3) -> float | None:
    return None if v is None else round(v, digits)
