"""The drain before a rate step that follows a failed one: the server's queue left by the failed step is let go
before the new step is measured, or the new step would start behind it and fail for the old rate's backlog.

During a drain no request is sent; it ends when the requests in flight have fallen to what the new rate keeps in
flight in its steady state, Little's law L = λW (λ the new rate, W the E2E p50 of the largest load that held: a
little under its mean, so the drain errs on the drained side; with no load held yet, W = 0: an empty client), and,
with --llm-server-metrics, when a scrape taken since the drain began shows the server's queue empty and its running
requests at most L. It is bounded: at --llm-capacity-drain-s the step is measured anyway and marked not drained.
Pure: the caller counts the requests in flight and reads the scrapes (docs/capacity.md, "The drain")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class Drain:
    """One drain: the requests in flight it waits for (`target`), what it saw, and how it ended."""

    target: float
    first: int | None = None  # the requests in flight when it began (each node's first count)
    last: int | None = None  # ... and at its last
    waiting: float | None = None  # the server's queue at its last scrape since the drain began
    wait_s: float | None = None  # how long it waited, once it ended
    drained: bool | None = None

    def see(self, in_flight: tuple[int, int] | None, waiting: float | None, running: float | None) -> bool:
        """What the drain sees now: the requests in flight when it began and now (None: not every node has counted
        yet), the server's queue and running requests at a scrape since it began (None: none); whether it has
        drained (see `empty_enough`)."""
        if in_flight is not None:
            self.first, self.last = in_flight
        self.waiting = waiting if waiting is not None else self.waiting
        return empty_enough(self.last if in_flight is not None else None, self.target, waiting, running)

    def end(self, wait_s: float, drained: bool) -> None:
        self.wait_s, self.drained = round(wait_s, 3), drained


def needed(previous: Mapping[str, Any] | None) -> bool:
    """A step needs a drain when the step before it failed: a held step left a queue its SLOs allowed."""
    return previous is not None and not previous.get("passed")


def target(rate_per_s: float, e2e_ms: float | None) -> float:
    """The requests a rate keeps in flight in its steady state, Little's law L = λW, W in milliseconds (None: 0)."""
    return rate_per_s * (e2e_ms or 0.0) / 1000.0


def held_e2e_ms(steps: Sequence[Mapping[str, Any]], held: float) -> float | None:
    """The E2E p50 of the step that held at `held` (the largest load that held), None when none did."""
    rows = [s for s in steps if s.get("passed") and s.get("rate_per_s") == held]
    return ((rows[-1].get("e2e_ms") or {}).get("p50")) if rows else None


def empty_enough(in_flight: int | None, limit: float, waiting: float | None, running: float | None) -> bool:
    """The client's requests in flight are known and at most `limit`, and the server's queue (when scraped since
    the drain began: `waiting`, `running`, None when not) is empty, its running requests at most `limit`."""
    if in_flight is None or in_flight > limit:
        return False
    return (waiting is None or waiting <= 0) and (running is None or running <= limit)


def fields(drain: Drain | None) -> dict[str, Any]:
    """A step's drain in its row of the summary: `drain_s` and `drained` (None: no drain before it), and
    `drain_in_flight`: the requests in flight at its first and last count, its target, the server's queue."""
    if drain is None or drain.wait_s is None:
        return {"drain_s": None, "drained": None, "drain_in_flight": None}
    seen = {"start": drain.first, "end": drain.last, "target": round(drain.target, 2), "waiting": drain.waiting}
    return {"drain_s": drain.wait_s, "drained": drain.drained, "drain_in_flight": seen}
