"""The drill ledger: streaming tallies on a node, deltas shipped as JSON, merged on the master, none counted twice."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from loadlib.failover.ledger import Ledger
from tests.support import ledger_timeline as timeline
from tests.support.ledger_timeline import DRILL, Event, feed

T0 = 1000.0

# The shared two-worker drill (tests/support/ledger_timeline.py), with checked outputs ("q", at, endpoint, status,
# tokens) and worker 1's breaker closing again after the drill.
W1: list[Event] = [
    *timeline.W1,
    ("q", 1020.45, "secondary", "ok", 120),
    ("q", 1025.5, "secondary", "truncated", None),
    ("t", 1045.0, "primary", "open", "half_open"),
    ("t", 1045.6, "primary", "half_open", "closed"),
]
W2: list[Event] = [*timeline.W2, ("q", 1020.83, "secondary", "schema_invalid", None)]


def node(name: str) -> Ledger:
    ledger = Ledger(name)
    ledger.start(T0)
    return ledger


def wire(data: dict[str, Any]) -> dict[str, Any]:
    """What the master receives: the payload through JSON (strict: no NaN or infinity may slip in)."""
    return json.loads(json.dumps(data, allow_nan=False))


def merged(workers: dict[str, list[Event]], cuts: tuple[float, ...] = ()) -> Ledger:
    """A master fed by workers that ship at every cut time and at the end."""
    master = node("master")
    feed(master, DRILL)
    for name, events in workers.items():
        w = node(name)
        everything = DRILL + events
        for lo, hi in zip((-math.inf, *cuts), (*cuts, math.inf), strict=True):
            feed(w, [e for e in everything if lo <= e[1] < hi])
            master.merge(name, wire(w.ship()))
    return master


def comparable(ledger: Ledger) -> dict[str, Any]:
    """What must not depend on how the events were split among nodes and ships."""
    d = ledger.drills[0]
    return {
        "counts": (d.user_requests, d.user_errors, d.user_retried, d.attempts, d.attempt_errors),
        "before": d.ttft_before_ms.to_dict(),
        "failed_over": d.ttft_failed_over_ms.to_dict(),
        "traffic": ledger.traffic,
        "quality": {e: (q.counts, q.output_tokens.to_dict()) for e, q in ledger.fallback.items()},
        "transitions": sorted(t[1:] for t in ledger.transitions),
    }


def test_a_node_tallies_its_drill_as_it_goes() -> None:
    w = node("w1")
    feed(w, DRILL + W1)
    d = w.drills[0]
    assert (d.start, d.stop, d.endpoint, d.fault) == (1020.0, 1040.0, "primary", "http_503")
    assert (d.user_requests, d.user_errors, d.user_retried) == (3, 1, 1)
    assert (d.switch_requests, d.switch_errors) == (2, 1)  # up to and with the first failover success at 1020.45
    assert (d.attempts, d.attempt_errors) == (4, 2)
    assert d.ttft_before_ms.count == 2 and (d.ttft_before_ms.min, d.ttft_before_ms.max) == (50.0, 60.0)
    assert d.ttft_failed_over_ms.count == 2 and (d.ttft_failed_over_ms.min, d.ttft_failed_over_ms.max) == (80, 82)
    mine = d.nodes["w1"]
    assert (mine.exposed, mine.detect_at, mine.failover_at, mine.failback_at) == (3, 1020.4, 1020.45, 1045.6)


def test_traffic_bins_are_seconds_from_the_start() -> None:
    w = node("w1")
    feed(w, W1)
    assert w.traffic["primary"] == {10: [1, 0], 20: [2, 2], 45: [1, 0]}
    assert w.traffic["secondary"] == {20: [1, 0], 25: [1, 0]}


def test_two_workers_merged_through_json_equal_one_ledger_fed_everything() -> None:
    single = node("local")
    feed(single, DRILL + W1 + W2)
    master = merged({"w1": W1, "w2": W2})
    assert comparable(master) == comparable(single)
    d = master.drills[0]
    assert (d.user_requests, d.user_errors, d.attempts, d.attempt_errors) == (7, 3, 9, 5)
    assert (d.switch_requests, d.switch_errors) == (5, 3)  # each worker's own switch window: 2 + 3
    firsts = {w: (n.exposed, n.detect_at, n.failover_at, n.failback_at) for w, n in d.nodes.items()}
    assert firsts == {"w1": (3, 1020.4, 1020.45, 1045.6), "w2": (3, 1020.8, 1020.83, 1044.0)}
    mine = single.drills[0].nodes["local"]
    assert (mine.detect_at, mine.failover_at, mine.failback_at) == (1020.4, 1020.45, 1044.0)  # the earliest of all


def test_shipping_often_counts_nothing_twice() -> None:
    once = merged({"w1": W1, "w2": W2})
    often = merged({"w1": W1, "w2": W2}, cuts=(1011.0, 1020.3, 1020.5, 1020.8, 1030.0, 1045.0))
    assert comparable(often) == comparable(once)
    assert often.drills[0].nodes == once.drills[0].nodes
    assert (often.drills[0].switch_requests, often.drills[0].switch_errors) == (5, 3)


def test_a_ship_is_a_delta_and_an_empty_one_after_it() -> None:
    w = node("w1")
    feed(w, DRILL + W1)
    first = w.ship()
    assert first["drills"][0]["user_requests"] == 3 and first["drills"][0]["failover_at"] == 1020.45
    again = w.ship()
    assert again["drills"] == [] and again["transitions"] == [] and again["traffic"] == {} and again["quality"] == {}
    w.user_request(1025.0, 1026.0, "primary", "secondary", True, 70.0, 1)
    later = w.ship()["drills"][0]
    assert (later["user_requests"], later["switch_requests"], later["failover_at"]) == (1, 0, None)
    assert later["exposed"] == 1


def test_ship_shape() -> None:
    w = node("w1")
    feed(w, DRILL + W1)
    data = w.ship()
    assert wire(data) == data
    assert set(data) == {
        "v",
        "t0",
        "drills",
        "transitions",
        "transitions_dropped",
        "breakers",
        "traffic",
        "quality",
        "incidents",
    }
    assert data["transitions"][0] == ["primary", "closed", "open", 1020.4, "test"]
    assert data["breakers"] == {"primary": {"state": "closed", "since": 1045.6}}
    assert data["traffic"]["secondary"] == [[20, 1, 0], [25, 1, 0]]
    assert data["quality"]["secondary"]["truncated"] == 1
    drill = data["drills"][0]
    assert {k: drill[k] for k in ("index", "endpoint", "fault", "start", "stop", "exposed", "detect_at")} == {
        "index": 0,
        "endpoint": "primary",
        "fault": "http_503",
        "start": 1020.0,
        "stop": 1040.0,
        "exposed": 3,
        "detect_at": 1020.4,
    }


def test_transitions_are_capped_per_node_and_the_dropped_counted() -> None:
    w = Ledger("w1", max_transitions=5)
    w.start(T0)
    states = ["closed", "open"]
    for i in range(8):
        w.transition("primary", states[i % 2], states[(i + 1) % 2], T0 + i, "flap")
    assert len(w.transitions) == 5 and w.transitions_dropped == {"w1": 3}
    assert w.breaker_states() == {"w1": {"primary": {"state": "closed", "since": T0 + 7}}}  # the dropped still count
    master = Ledger("master", max_transitions=5)
    master.merge("w1", wire(w.ship()))
    for i in range(8, 10):  # the cap is per run, not per ship
        w.transition("primary", "closed", "open", T0 + i, "flap")
    master.merge("w1", wire(w.ship()))
    assert len(master.transitions) == 5 and master.transitions_dropped == {"w1": 5}
    assert master.transitions[0] == ("w1", "primary", "closed", "open", T0, "flap")
    assert master.breaker_states()["w1"]["primary"] == {"state": "open", "since": T0 + 9}


def test_breaker_states_of_every_worker_on_the_master() -> None:
    master = merged({"w1": W1, "w2": W2})
    assert master.breaker_states() == {
        "w1": {"primary": {"state": "closed", "since": 1045.6}},
        "w2": {"primary": {"state": "open", "since": 1020.8}},
    }


def test_a_drill_without_stop_keeps_counting_and_has_no_failback() -> None:
    w = node("w1")
    feed(w, [DRILL[0], *W1])
    d = w.drills[0]
    assert d.stop is None
    assert (d.user_requests, d.user_errors) == (4, 1)  # the request answered by primary at +45.6 s is in the drill
    assert d.nodes["w1"].failback_at is None and d.nodes["w1"].failover_at == 1020.45


def test_before_counts_since_the_previous_stop_only() -> None:
    w = node("w1")
    w.user_request(1004.0, 1005.0, "primary", "primary", True, 10.0, 1)  # before drill 0: counted there
    w.drill_started(0, "primary", "http_503", 1010.0)
    w.user_request(1014.0, 1015.0, "primary", "primary", True, 999.0, 1)  # during drill 0: never "before"
    w.drill_stopped(0, 1020.0)
    w.user_request(1024.0, 1025.0, "primary", "primary", True, 20.0, 1)
    w.user_request(1025.0, 1026.0, "secondary", "secondary", True, 30.0, 1)  # preferred another endpoint
    w.drill_started(1, "primary", "timeout", 1030.0)
    assert (w.drills[0].ttft_before_ms.count, w.drills[0].ttft_before_ms.max) == (1, 10.0)
    assert (w.drills[1].ttft_before_ms.count, w.drills[1].ttft_before_ms.max) == (1, 20.0)
    users = [(h.count, h.max) for h in (w.drills[0].ttft_users_before_ms, w.drills[1].ttft_users_before_ms)]
    assert users == [(1, 10.0), (2, 30.0)]  # the users' TTFT before: whatever they preferred


def test_a_drill_known_ahead_of_time_splits_by_its_times() -> None:
    w = node("w1")
    w.drill_started(0, "primary", "http_503", 1020.0)
    w.drill_stopped(0, 1040.0)
    w.user_request(1009.0, 1010.0, "primary", "primary", True, 10.0, 1)
    w.user_request(1010.0, 1011.0, "secondary", "secondary", True, 40.0, 1)  # the users' "before" only
    w.user_request(1024.0, 1025.0, "primary", "secondary", True, 20.0, 1)
    w.user_request(1044.0, 1045.0, "primary", "primary", True, 30.0, 1)
    d = w.drills[0]
    assert (d.ttft_before_ms.count, d.user_requests, d.ttft_failed_over_ms.count) == (1, 1, 1)
    assert (d.ttft_users_before_ms.count, d.ttft_users_before_ms.max) == (2, 40.0)
    assert (d.nodes["w1"].failover_at, d.nodes["w1"].failback_at) == (1025.0, 1045.0)


def test_firsts_belong_to_their_drill_only() -> None:
    w = node("w1")
    w.drill_started(0, "primary", "http_503", 1010.0)
    w.drill_stopped(0, 1020.0)
    w.drill_started(1, "secondary", "http_503", 1030.0)
    w.drill_stopped(1, 1040.0)
    w.transition("primary", "closed", "open", 1035.0, "late")  # after drill 1 started: not drill 0's detection
    w.transition("secondary", "closed", "open", 1031.0, "x")
    w.user_request(1034.0, 1035.0, "primary", "primary", True, 20.0, 1)  # not drill 0's failback either
    assert w.drills[1].nodes["w1"].detect_at == 1031.0
    assert w.drills[0].nodes.get("w1") is None


def test_worker_bins_shift_to_the_master_start() -> None:
    w = Ledger("w1")
    w.start(T0 + 2.2)
    w.attempt("primary", True, T0 + 2.3)  # second 0 of the worker, second 2 of the master
    master = node("master")
    master.merge("w1", wire(w.ship()))
    assert master.traffic == {"primary": {2: [1, 0]}}


def test_quality_counts_checked_outputs_only() -> None:
    w = node("w1")
    w.quality("secondary", "ok", 100)
    w.quality("secondary", "ok", None)
    w.quality("secondary", "nondeterministic", 90)
    q = w.fallback["secondary"]
    assert q.counts == {"ok": 2, "schema_invalid": 0, "nondeterministic": 1, "truncated": 0}
    assert q.output_tokens.count == 1
    w.quality("secondary", "http_5xx", None)  # a failed attempt: no output to judge
    w.quality("tertiary", "timeout_ttft", None)
    assert list(w.fallback) == ["secondary"] and sum(w.fallback["secondary"].counts.values()) == 3


def test_reset_keeps_windows_and_breaker_states() -> None:
    w = node("w1")
    feed(w, DRILL + W1)
    w.reset()
    d = w.drills[0]
    assert (d.start, d.stop, d.user_requests, d.nodes, w.transitions, w.traffic) == (1020.0, 1040.0, 0, {}, [], {})
    assert w.breaker_states()["w1"]["primary"]["state"] == "closed"
    w.user_request(1025.0, 1026.0, "primary", "secondary", True, 70.0, 1)
    assert w.drills[0].nodes["w1"].failover_at == 1026.0  # its firsts were forgotten too


def test_start_forgets_the_previous_test_but_keeps_scheduled_drills() -> None:
    w = node("w1")
    feed(w, DRILL + W1)
    w.drill_started(1, "secondary", "timeout", 2100.0)
    w.start(2000.0)
    assert list(w.drills) == [1] and w.t0 == 2000.0 and w.drills[1].since == -math.inf


def test_merge_refuses_another_format() -> None:
    with pytest.raises(ValueError, match="unsupported ledger format"):
        Ledger().merge("w1", {"v": 99})


def test_merge_learns_drills_the_master_did_not_see() -> None:
    w = node("w1")
    feed(w, DRILL + W1)
    master = Ledger("master")
    master.merge("w1", wire(w.ship()))
    d = master.drills[0]
    assert (d.endpoint, d.start, d.stop, d.user_requests) == ("primary", 1020.0, 1040.0, 3)
    assert master.t0 == T0


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0), (1, 2, 0), (2, 0, 1)])
def test_the_switch_window_does_not_depend_on_the_order_requests_end_in(order: tuple[int, ...]) -> None:
    """Three failed-over requests ending at +1.0, +1.1, +1.2 s: only the first is in the switch window (with the
    failed one before it), whatever order they reach the ledger in, shipped between them or not."""
    w, master = node("w1"), node("master")
    w.drill_started(1, "primary", "http_503", T0 + 10)
    w.user_request(T0 + 10.1, T0 + 10.5, "primary", None, False, None, 1)
    ends = [T0 + 11.0, T0 + 11.1, T0 + 11.2]
    for i in order:
        w.user_request(ends[i] - 0.3, ends[i], "primary", "secondary", True, 90.0, 2)
        master.merge("w1", wire(w.ship()))
    d = master.drills[1]
    assert (d.switch_requests, d.switch_errors, d.user_requests) == (2, 1, 4)
    assert d.nodes["w1"].failover_at == T0 + 11.0


def test_attempts_in_flight_at_a_drill_s_start_are_counted_even_when_the_node_hears_of_it_late() -> None:
    w, master = node("w1"), node("master")
    w.watch_in_flight = True
    start = T0 + 10
    w.attempt("primary", True, start + 0.01, start - 0.2, False)  # in flight; ended before the drill message came
    w.attempt("primary", True, start - 0.01, start - 0.3, False)  # ended before the start
    w.attempt("secondary", True, start + 0.02, start - 0.1, False)  # another endpoint
    w.drill_started(1, "primary", "refuse", start)
    w.attempt("primary", False, start + 0.05, start - 0.1, True)  # broken by the fault
    w.attempt("primary", False, start + 0.06, start + 0.01, True)  # sent after the start
    master.merge("w1", wire(w.ship()))
    d = master.drills[1]
    assert (d.in_flight, d.in_flight_failed) == (2, 1)
