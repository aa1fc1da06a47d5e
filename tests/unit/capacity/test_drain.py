"""The drain before a rate step that follows a failed one: its target is Little's law over the largest rate that
held; it ends when the requests in flight (and, when scraped, the server's queue) have fallen to it, or at its bound,
marked not drained; a step after one that held, a users search, and --llm-capacity-drain-s 0 do not drain. On the
nodes: a drain holds the arrivals, a worker counts its requests in flight to the master, and the master sums them
only once every live worker has."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from loadlib.capacity import drain
from loadlib.capacity.drain import Drain
from loadlib.capacity.search import RATE, USERS, Search
from loadlib.locust.capacity_part import DRAIN, IN_FLIGHT, WARMUP, CapacityPart
from loadlib.locust.capacity_shape import CapacityShape
from tests.unit.capacity.test_part import FakeMaster, FakeWorker


def test_the_target_is_littles_law_over_the_largest_rate_that_held() -> None:
    steps = [
        {"rate_per_s": 32.0, "passed": True, "e2e_ms": {"p50": 60.0}},
        {"rate_per_s": 48.0, "passed": True, "e2e_ms": {"p50": 90.0}},
        {"rate_per_s": 64.0, "passed": False, "e2e_ms": {"p50": 900.0}},
    ]
    assert drain.held_e2e_ms(steps, 48.0) == 90.0 and drain.held_e2e_ms(steps, 0.0) is None
    assert drain.target(56.0, 90.0) == pytest.approx(5.04) and drain.target(56.0, None) == 0.0
    assert drain.needed(steps[2]) and not drain.needed(steps[1]) and not drain.needed(None)


def test_drained_needs_the_clients_count_and_an_empty_server_queue_when_scraped() -> None:
    assert not drain.empty_enough(None, 5.0, None, None), "not every node has counted yet"
    assert not drain.empty_enough(6, 5.0, None, None) and drain.empty_enough(5, 5.0, None, None)
    assert not drain.empty_enough(3, 5.0, 1.0, 3.0), "the server still queues"
    assert not drain.empty_enough(3, 5.0, 0.0, 9.0), "the server still runs more than the rate keeps"
    assert drain.empty_enough(3, 5.0, 0.0, 4.0)


def test_a_drain_keeps_its_first_and_last_count_and_its_row_says_how_it_ended() -> None:
    d = Drain(target=5.0)
    assert not d.see(None, None, None) and not d.see((40, 12), 3.0, 8.0)
    assert d.see((40, 4), None, None) and (d.first, d.last, d.waiting) == (40, 4, 3.0)
    d.end(2.0004, True)
    assert drain.fields(d) == {
        "drain_s": 2.0,
        "drained": True,
        "drain_in_flight": {"start": 40, "end": 4, "target": 5.0, "waiting": 3.0},
    }
    assert drain.fields(None) == drain.fields(Drain(1.0)) == {"drain_s": None, "drained": None, "drain_in_flight": None}


class FakeNode:
    """A load node: its requests in flight, and whether its arrivals are held."""

    def __init__(self, in_flight: int) -> None:
        self.in_flight = in_flight
        self.held = 0
        self.generates_load = True
        self.options = SimpleNamespace(llm_capacity_drain_s=0.0)

    def hold(self) -> None:
        self.held += 1

    def pace(self, rate_per_s: float) -> None:
        self.held = 0


def message(step: int, phase: str, **data: Any) -> SimpleNamespace:
    return SimpleNamespace(data={"step": step, "phase": phase, **data}, node_id="local")


def shape(part: CapacityPart, steps: list[dict[str, Any]], control: str = RATE, bound_s: float = 30.0) -> Any:
    """A search between steps: its part and options stubbed, no server scraped."""
    s: Any = CapacityShape()
    s.search = Search(start=32, control=control)
    for row in steps:
        s.search.record(row["rate_per_s"], row["passed"])
    s.steps, s.index = steps, len(steps) + 1
    s._part = lambda: part
    s._options = lambda: SimpleNamespace(llm_capacity_drain_s=bound_s)
    s._server_since = lambda began: (None, None)
    return s


HELD = {"rate_per_s": 32.0, "passed": True, "e2e_ms": {"p50": 100.0}}
FAILED = {"rate_per_s": 64.0, "passed": False, "e2e_ms": {"p50": 900.0}}


def test_a_step_after_a_failed_one_waits_until_the_requests_in_flight_fall_to_its_target() -> None:
    node, part = FakeNode(in_flight=40), CapacityPart(None)
    part.node = node
    s = shape(part, [HELD, FAILED])
    s.drain = s._drain_for(48.0)
    assert s.drain is not None and s.drain.target == pytest.approx(4.8)
    part.on_message(msg=message(3, DRAIN))
    assert node.held == 1, "nothing is sent during the drain"
    node.in_flight = 10
    assert not s._drained(1.0)
    node.in_flight = 4
    assert s._drained(2.0)
    assert drain.fields(s.drain)["drain_in_flight"] == {"start": 40, "end": 4, "target": 4.8, "waiting": None}
    assert (s.drain.wait_s, s.drain.drained) == (2.0, True)
    part.on_message(msg=message(3, WARMUP, rate=48.0, nodes=1))
    assert node.held == 0, "the step's rate from its warm-up on"


def test_a_drain_that_runs_out_of_time_is_measured_anyway_and_marked_so() -> None:
    node, part = FakeNode(in_flight=40), CapacityPart(None)
    part.node = node
    s = shape(part, [HELD, FAILED], bound_s=5.0)
    s.drain = s._drain_for(48.0)
    part.on_message(msg=message(3, DRAIN))
    assert not s._drained(4.0) and s._drained(5.0)
    assert (s.drain.wait_s, s.drain.drained, s.drain.last) == (5.0, False, 40)


def test_no_drain_after_a_step_that_held_in_a_users_search_or_when_turned_off() -> None:
    part = CapacityPart(None)
    assert shape(part, [HELD])._drain_for(64.0) is None
    assert shape(part, [HELD, FAILED], bound_s=0.0)._drain_for(48.0) is None
    users = [{"rate_per_s": 8.0, "users": 8, "passed": True}, {"rate_per_s": 16.0, "users": 16, "passed": False}]
    assert shape(part, users, control=USERS)._drain_for(12) is None, "a users search never drains"
    assert shape(part, [])._drain_for(32.0) is None, "the first step"


def test_a_worker_counts_its_requests_in_flight_and_the_master_sums_every_live_workers() -> None:
    sent: list[tuple[str, dict[str, Any]]] = []

    def send(kind: str, data: Any = None, client_id: Any = None) -> None:
        sent.append((kind, data))
        worker.phase = WARMUP  # the drain ends: the count stops

    runner = FakeWorker()
    runner.send_message = send  # type: ignore[method-assign]
    worker = CapacityPart(runner)
    worker.node = FakeNode(in_flight=7)
    worker.on_message(msg=message(4, DRAIN))
    worker._count_in_flight(4)  # the greenlet's loop, run here
    assert sent == [(IN_FLIGHT, {"step": 4, "in_flight": 7})] and worker.node.held == 1

    master = CapacityPart(FakeMaster("a", "b"))
    count = master.on_in_flight
    count(msg=SimpleNamespace(node_id="a", data={"step": 4, "in_flight": 30}))
    count(msg=SimpleNamespace(node_id="b", data={"step": 3, "in_flight": 9}))  # the drain before: not this one's
    assert master.in_flight(4) is None, "b has not counted since this drain began"
    count(msg=SimpleNamespace(node_id="b", data={"step": 4, "in_flight": 20}))
    count(msg=SimpleNamespace(node_id="a", data={"step": 4, "in_flight": 3}))
    assert master.in_flight(4) == (50, 23)
