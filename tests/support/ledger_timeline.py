"""Timelines for drill-ledger tests: events as tuples, played into a Ledger in time order.

("start", at, index, endpoint, fault), ("stop", at, index), ("a", at, endpoint, ok) an attempt,
("u", at, preferred, endpoint, ok, ttft_ms, attempts) a user-visible request ending at `at` (started 0.5 s before),
("t", at, endpoint, old, new) a breaker transition, ("q", at, endpoint, status, output_tokens) fallback quality.
"""

from __future__ import annotations

from typing import Any

from loadlib.failover.ledger import Ledger

Event = tuple[Any, ...]


def feed(ledger: Ledger, events: list[Event]) -> None:
    """Play events in time order (the drill's own calls at their times, as a node's drill driver makes them)."""
    for ev in sorted(events, key=lambda e: e[1]):
        kind, at, *rest = ev
        if kind == "start":
            ledger.drill_started(rest[0], rest[1], rest[2], at)
        elif kind == "stop":
            ledger.drill_stopped(rest[0], at)
        elif kind == "a":
            ledger.attempt(rest[0], rest[1], at)
        elif kind == "u":
            ledger.user_request(at - 0.5, at, *rest)
        elif kind == "t":
            ledger.transition(rest[0], rest[1], rest[2], at, "test")
        elif kind == "q":
            ledger.quality(*rest)
