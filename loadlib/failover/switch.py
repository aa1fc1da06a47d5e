"""A node's switch-window count of a drill (docs/failover.md, "Windows"), independent of the order requests end in.

The switch window of a node runs from the drill's start to its first failover success. Requests reach the ledger in
the order they are processed, not quite the order they ended in, so the first failover success known may move
earlier after requests ending later were counted; they then leave the window again. Requests are kept for
LATE_S seconds after their end for that (amortised O(1) per request).
"""

from __future__ import annotations

from collections import deque
from typing import Any

LATE_S = 10.0  # how late a request may reach the ledger after its end and still move the switch window


class SwitchTally:
    """Per drill: the recent (end, ok) of the requests counted in this node's switch window."""

    def __init__(self) -> None:
        self._recent: dict[int, deque[tuple[float, bool]]] = {}

    def count(self, d: Any, end: float, ok: bool) -> None:
        """A request in the switch window of drill `d` (a ledger.Drill): counted, and kept a while."""
        d.switch_requests += 1
        d.switch_errors += not ok
        recent = self._recent.get(d.index)
        if recent is None:
            recent = self._recent[d.index] = deque()
        recent.append((end, ok))
        while recent[0][0] < end - LATE_S:
            recent.popleft()

    def retract(self, d: Any, failover_at: float) -> None:
        """The node's first failover success moved earlier, to `failover_at`: the requests counted that ended after
        it leave the window."""
        recent = self._recent.get(d.index)
        if not recent:
            return
        for _, ok in (e for e in recent if e[0] > failover_at):
            d.switch_requests -= 1
            d.switch_errors -= not ok
        self._recent[d.index] = deque(e for e in recent if e[0] <= failover_at)
