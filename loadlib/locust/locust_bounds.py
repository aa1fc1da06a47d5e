"""What Locust itself keeps for the whole run on a master (or local runner), bounded: a node part that trims it.

Locust counts every request in a per-second dict of each row of its table (`num_reqs_per_sec`, `num_fail_per_sec`)
and never drops a second: a worker ships and clears its own with every report, but the master merges them into dicts
that grow by one key a second per row for as long as the run lasts, though Locust reads only the last 12 seconds of
them (its current RPS and failures/s). And it appends a point to its charts' history (`stats.history`: its web UI's
charts and its HTML report) every 5 s. A day's soak would hold 86,400 seconds per row and 17,280 points.

Here, every TRIM_EVERY_S while the test runs, the seconds older than KEEP_S are dropped, and the history is kept to
at most MAX_HISTORY points as the web UI's LLM charts are (loadlib.metrics.timeline): when it is full every other
point goes and, from then on, only every other new one is kept (the interval doubles: 5 s, 10 s, 20 s...), so the
whole run stays on the chart, evenly spaced.
"""

from __future__ import annotations

import gevent

import logging
import time
from typing import Any

from loadlib.locust.parts import Node, NodePart

log = logging.getLogger("loadlib")
KEEP_S = 60  # seconds of Locust's per-second counts kept (it reads the last 12)
MAX_HISTORY = 720  # points of Locust's chart history: one hour at its 5 s before the first thinning
TRIM_EVERY_S = 10.0


def trim_seconds(entry: Any, keep_from: int) -> int:
    """Drop a Locust stats entry's per-second counts before `keep_from` (unix seconds); how many were dropped."""
    dropped = 0
    for counts in (entry.num_reqs_per_sec, entry.num_fail_per_sec):
        old = [t for t in counts if t < keep_from]
        for t in old:
            del counts[t]
        dropped += len(old)
    return dropped


class HistoryThinner:
    """Keeps a list that grows at one end (Locust's chart history) to at most `limit` items, evenly spaced: of the
    items appended since the start, those whose index is a multiple of `stride`, the stride doubling whenever the
    list is full. A list replaced or emptied (Locust's reset) starts again."""

    def __init__(self, limit: int = MAX_HISTORY) -> None:
        self.limit = limit
        self.history: list[Any] | None = None
        self.stride = 1
        self.kept = 0  # items at the head of the list already thinned
        self.appended = 0  # items the list had been given when last thinned (kept or dropped)

    def thin(self, history: list[Any]) -> None:
        if history is not self.history or len(history) < self.kept:
            self.history, self.stride, self.kept, self.appended = history, 1, 0, 0
        new = history[self.kept :]
        first = (-self.appended) % self.stride  # the first new item whose index is a multiple of the stride
        history[self.kept :] = new[first :: self.stride]
        self.appended += len(new)
        while len(history) > self.limit:
            history[:] = history[::2]
            self.stride *= 2
        self.kept = len(history)


class LocustBoundsPart(NodePart):
    """On a master or local runner while its test runs: Locust's per-second counts and chart history, bounded."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.thinner = HistoryThinner()
        self._greenlet: gevent.Greenlet | None = None

    def start(self, ctx: Node) -> None:
        if not ctx.is_worker and self._greenlet is None:
            self._greenlet = gevent.spawn(self._trim_forever)

    def stop(self, ctx: Node) -> None:
        self.close()

    def close(self) -> None:
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
            self._greenlet = None

    def trim(self) -> None:
        stats = getattr(getattr(self.ctx.environment, "runner", None), "stats", None)
        if stats is None:
            return
        keep_from = int(time.time()) - KEEP_S
        for entry in [stats.total, *stats.entries.values()]:
            trim_seconds(entry, keep_from)
        self.thinner.thin(stats.history)

    def _trim_forever(self) -> None:
        """Every TRIM_EVERY_S until stopped; a trim that fails is logged and the next one goes on."""
        while True:
            gevent.sleep(TRIM_EVERY_S)
            try:
                self.trim()
            except Exception:
                log.exception("loadlib: trimming Locust's per-second counts failed")
