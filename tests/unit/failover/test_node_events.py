"""A node's `failover` / `failback` events (loadlib/locust/failover_part.py): one of each per outage, whatever order
requests routed before a change end in."""

from __future__ import annotations

from locust.event import EventHook

from types import SimpleNamespace

from loadlib.errors import ErrorClass
from loadlib.locust.failover_part import FailoverPart
from loadlib.records.user_request import UserRequest

S = 1_000_000_000


def part() -> tuple[FailoverPart, list[str]]:
    events = SimpleNamespace(endpoint_event=EventHook(), worker_health=EventHook())
    fired: list[str] = []
    events.endpoint_event.add_listener(lambda kind="", **_: fired.append(kind))
    p = FailoverPart(events, SimpleNamespace(user_request=lambda _: None))
    p.active = True
    return p, fired


def ask(p: FailoverPart, start_s: float, end_s: float, endpoint: str) -> None:
    user = UserRequest("run", "chat", "w1", "r", int(start_s * S), "primary", endpoint, ErrorClass.OK, 1, 0.0, 10.0)
    user.e2e_ms = (end_s - start_s) * 1000.0
    p.user_request(user, SimpleNamespace(hedged=False))


def test_requests_routed_before_a_change_do_not_flip_it_back() -> None:
    p, fired = part()
    ask(p, 0.0, 0.1, "primary")
    ask(p, 1.0, 1.2, "secondary")  # failover
    ask(p, 0.9, 1.3, "primary")  # sent before the outage was seen: no failback
    ask(p, 5.0, 5.1, "primary")  # the probe: failback
    ask(p, 5.05, 5.3, "secondary")  # routed away while half-open, ends after the probe: no second failover
    ask(p, 5.2, 5.4, "primary")
    assert fired == ["failover", "failback"]


def test_ten_outages_give_ten_pairs() -> None:
    p, fired = part()
    for k in range(10):
        t = 10.0 * k
        ask(p, t + 1.0, t + 1.2, "secondary")
        ask(p, t + 5.0, t + 5.1, "primary")
        ask(p, t + 5.05, t + 5.3, "secondary")
    assert fired == ["failover", "failback"] * 10
