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


# The two-worker drill both the ledger and the figures tests judge: drill 0 breaks "primary" from +20 s to +40 s (T0
# 1000); each worker's breaker opens after its failures and its traffic fails over to "secondary", then returns.
DRILL: list[Event] = [("start", 1020.0, 0, "primary", "http_503"), ("stop", 1040.0, 0)]
W1: list[Event] = [
    ("a", 1010.2, "primary", True),
    ("u", 1010.2, "primary", "primary", True, 50.0, 1),
    ("u", 1011.2, "primary", "primary", True, 60.0, 1),
    ("a", 1020.1, "primary", False),
    ("u", 1020.1, "primary", None, False, None, 1),
    ("a", 1020.3, "primary", False),
    ("t", 1020.4, "primary", "closed", "open"),
    ("a", 1020.45, "secondary", True),
    ("u", 1020.45, "primary", "secondary", True, 80.0, 2),
    ("a", 1025.5, "secondary", True),
    ("u", 1025.5, "primary", "secondary", True, 82.0, 1),
    ("a", 1045.6, "primary", True),
    ("u", 1045.6, "primary", "primary", True, 55.0, 1),
]
W2: list[Event] = [
    ("a", 1015.2, "primary", True),
    ("u", 1015.2, "primary", "primary", True, 55.0, 1),
    ("a", 1020.5, "primary", False),
    ("u", 1020.5, "primary", None, False, None, 1),
    ("a", 1020.6, "primary", False),
    ("u", 1020.6, "primary", None, False, None, 1),
    ("a", 1020.7, "primary", False),
    ("t", 1020.8, "primary", "closed", "open"),
    ("a", 1020.83, "secondary", True),
    ("u", 1020.83, "primary", "secondary", True, 85.0, 2),
    ("a", 1030.5, "secondary", True),
    ("u", 1030.5, "secondary", "secondary", True, 40.0, 1),
    ("a", 1044.0, "primary", True),
    ("u", 1044.0, "primary", "primary", True, 45.0, 1),
]
