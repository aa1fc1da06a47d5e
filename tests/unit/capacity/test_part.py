"""The capacity part on a node: a record counts in a step's window when it ended while the window was open and
started after the step's load was set; a worker ships its windows and marks a step closed at once when told; the
master merges every worker's window and knows when all have closed it."""

from __future__ import annotations

from locust.runners import STATE_MISSING, STATE_RUNNING, MasterRunner, WorkerRunner

import time
from types import SimpleNamespace
from typing import Any

from loadlib.locust.capacity_part import HOLD, MEASURE, MESSAGE, WARMUP, CapacityPart
from tests.support.records import make_record


def tell(part: CapacityPart, step: int, phase: str) -> None:
    part.on_message(msg=SimpleNamespace(data={"step": step, "phase": phase}))


class FakeWorker(WorkerRunner):
    """A WorkerRunner without its sockets: what the part uses of it (its messages, an early report)."""

    def __init__(self) -> None:
        self.custom_messages: dict[str, Any] = {}
        self.sent = 0

    def _send_stats(self) -> None:
        self.sent += 1

    def __del__(self) -> None:
        """Nothing to release: no greenlets were started."""


class FakeMaster(MasterRunner):
    """A MasterRunner without its sockets: its workers by id."""

    def __init__(self, *ids: str) -> None:
        self.custom_messages: dict[str, Any] = {}
        self.clients: Any = {w: SimpleNamespace(id=w, state=STATE_RUNNING) for w in ids}

    def __del__(self) -> None:
        """Nothing to release: no greenlets were started."""


def test_a_local_node_counts_only_the_window_and_requests_of_the_steps_load() -> None:
    part = CapacityPart(None)
    before = time.time_ns()
    tell(part, 1, WARMUP)
    part.add(make_record(request_id="warm", start_unix_ns=time.time_ns(), ttft_ms=5.0))  # in the warm-up
    tell(part, 1, MEASURE)
    part.add(make_record(request_id="old", start_unix_ns=before, ttft_ms=5.0))  # saw the previous load
    part.add(make_record(request_id="in", start_unix_ns=time.time_ns(), ttft_ms=5.0))
    tell(part, 1, HOLD)
    part.add(make_record(request_id="late", start_unix_ns=time.time_ns(), ttft_ms=5.0))
    assert part.window(1).stats.total.requests == 1 and part.closed(1)
    part.on_health(cpu_percent=20.0, loop_lag_ms=3.0)  # outside the window: not counted
    assert part.window(1).lag.count == 0


def test_a_worker_ships_its_window_and_closes_it_at_once_when_told() -> None:
    runner = FakeWorker()
    part = CapacityPart(runner)
    assert runner.custom_messages[MESSAGE][0] == part.on_message
    tell(part, 3, WARMUP)
    tell(part, 3, MEASURE)
    part.add(make_record(start_unix_ns=time.time_ns(), ttft_ms=5.0))
    part.on_health(cpu_percent=20.0, loop_lag_ms=3.0)
    first = part.ship()
    assert first is not None and first["closed"] == [] and list(first["windows"]) == ["3"]
    part.add(make_record(start_unix_ns=time.time_ns(), ttft_ms=7.0))
    tell(part, 3, HOLD)
    assert runner.sent == 1
    last = part.ship()
    assert last is not None and last["closed"] == [3] and part.ship() is None

    master = CapacityPart(FakeMaster("w1"))
    for payload in (first, last):
        master.merge(payload, "w1")
    assert master.window(3).stats.total.requests == 2 and master.window(3).lag.count == 1


def test_the_master_waits_for_every_live_worker() -> None:
    runner = FakeMaster("a", "b")
    master = CapacityPart(runner)
    master.merge({"windows": {}, "closed": [1]}, "a")
    assert not master.closed(1)
    runner.clients["b"].state = STATE_MISSING
    assert master.closed(1)
