"""Drill figures over a merged ledger: hand-built timelines with known answers for every figure, checks and lines."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from loadlib.failover import traffic
from loadlib.failover.figures import drill_figures, lines, quality_figures, traffic_series
from loadlib.failover.ledger import Ledger
from loadlib.histogram import RELATIVE_ERROR
from tests.support import ledger_timeline as timeline
from tests.support.ledger_timeline import DRILL, W2, Event, feed

T0 = 1000.0


@dataclass(frozen=True)
class Targets:
    """Stand-in for loadlib.failover.pool.Targets (the figures only read these attributes)."""

    failover_within_s: float | None = 5.0
    user_error_rate_max: float | None = 0.01
    detect_within_s: float | None = None
    failback_within_s: float | None = None


LENIENT = Targets(failover_within_s=5.0, user_error_rate_max=0.5, detect_within_s=1.0, failback_within_s=10.0)
NONE = Targets(None, None, None, None)

# The shared two-worker drill (tests/support/ledger_timeline.py); worker 1 also sends a second attempt before it.
W1: list[Event] = [*timeline.W1, ("a", 1011.2, "primary", True)]


def master_of(workers: dict[str, list[Event]], drills: list[Event] = DRILL) -> Ledger:
    """The master: drives the drills itself and merges each worker's ships (two per worker, through JSON)."""
    master = Ledger("master")
    master.start(T0)
    feed(master, drills)
    for name, events in workers.items():
        w = Ledger(name)
        w.start(T0)
        everything = drills + events
        feed(w, [e for e in everything if e[1] < 1030.0])
        master.merge(name, json.loads(json.dumps(w.ship())))
        feed(w, [e for e in everything if e[1] >= 1030.0])
        master.merge(name, json.loads(json.dumps(w.ship())))
    return master


def test_every_figure_of_a_two_worker_drill() -> None:
    (fig,) = drill_figures(master_of({"w1": W1, "w2": W2}), LENIENT)
    assert json.loads(json.dumps(fig, allow_nan=False)) == fig
    checks = fig.pop("checks")
    assert fig == {
        "index": 0,
        "endpoint": "primary",
        "fault": "http_503",
        "start": 1020.0,
        "stop": 1040.0,
        "running": False,
        "at_s": 20.0,
        "duration_s": 20.0,
        "workers": ["w1", "w2"],
        "detect_s": {"p50": 0.4, "max": 0.8, "per_worker": {"w1": 0.4, "w2": 0.8}},
        "failover_s": {"p50": 0.45, "max": 0.83, "per_worker": {"w1": 0.45, "w2": 0.83}},
        "failback_s": {"p50": 4.0, "max": 5.6, "per_worker": {"w1": 5.6, "w2": 4.0}},
        "user_requests": 7,
        "user_errors": 3,
        "user_error_rate": 0.428571,
        "user_retried": 2,
        "switch_requests": 5,
        "switch_errors": 3,
        "switch_error_rate": 0.6,
        "attempts": 9,
        "attempt_errors": 5,
        "in_flight": 0,
        "in_flight_failed": 0,
        "ttft_p95_before_ms": 60.0,
        "ttft_p95_failed_over_ms": 85.0,
        "ttft_p95_users_before_ms": 60.0,
        "ttft_p95_during_ms": 85.0,
        "ttft_p95_after_ms": 55.0,
        "traffic_share": {
            "before": {"primary": 1.0, "secondary": 0.0},
            "during": {"primary": 0.555556, "secondary": 0.444444},
            "after": {"primary": 1.0, "secondary": 0.0},
        },
        "passed": True,
    }
    assert checks == [
        {"name": "failover_s", "value": 0.83, "limit": 5.0, "passed": True, "reason": "failover 0.83 s <= 5 s"},
        {
            "name": "user_error_rate",
            "value": 0.428571,
            "limit": 0.5,
            "passed": True,
            "reason": "user errors 42.9 % <= 50 %",
        },
        {"name": "detect_s", "value": 0.8, "limit": 1.0, "passed": True, "reason": "detection 0.80 s <= 1 s"},
        {"name": "failback_s", "value": 5.6, "limit": 10.0, "passed": True, "reason": "failback 5.6 s <= 10 s"},
    ]


def test_default_targets_fail_on_the_error_rate() -> None:
    (fig,) = drill_figures(master_of({"w1": W1, "w2": W2}), Targets())
    assert [(c["name"], c["passed"]) for c in fig["checks"]] == [("failover_s", True), ("user_error_rate", False)]
    assert fig["checks"][1]["reason"] == "user errors 42.9 % > 1 %"
    assert fig["passed"] is False


def test_a_worker_that_never_fails_over_fails_the_check() -> None:
    stuck = [e for e in W2 if not (e[0] == "u" and e[3] == "secondary" and e[2] == "primary")]
    (fig,) = drill_figures(master_of({"w1": W1, "w2": stuck}), LENIENT)
    assert fig["failover_s"] == {"p50": 0.45, "max": 0.45, "per_worker": {"w1": 0.45, "w2": None}}
    failover = fig["checks"][0]
    assert failover == {
        "name": "failover_s",
        "value": 0.45,
        "limit": 5.0,
        "passed": False,
        "reason": "worker w2 never failed over",
    }
    assert fig["passed"] is False


def test_too_slow_a_failover_fails() -> None:
    slow = [("u", 1026.0, "primary", "secondary", True, 90.0, 3) if e[1] == 1020.83 and e[0] == "u" else e for e in W2]
    (fig,) = drill_figures(master_of({"w1": W1, "w2": slow}), LENIENT)
    assert fig["failover_s"]["max"] == 6.0
    assert fig["checks"][0]["reason"] == "failover 6.0 s > 5 s" and not fig["checks"][0]["passed"]


def test_a_drill_nobody_was_exposed_to_fails_every_timed_check() -> None:
    only_secondary = [("u", 1025.0, "secondary", "secondary", True, 40.0, 1), ("a", 1025.0, "secondary", True)]
    (fig,) = drill_figures(master_of({"w1": only_secondary}), LENIENT)
    assert fig["workers"] == [] and fig["user_requests"] == 1
    reasons = {c["name"]: c["reason"] for c in fig["checks"] if not c["passed"]}
    assert reasons == {
        "failover_s": "no worker sent a request preferring primary in the drill",
        "detect_s": "no worker sent a request preferring primary in the drill",
        "failback_s": "no worker sent a request preferring primary in the drill",
    }


def test_a_drill_still_running() -> None:
    (fig,) = drill_figures(master_of({"w1": W1, "w2": W2}, drills=DRILL[:1]), LENIENT)
    assert (fig["stop"], fig["running"], fig["duration_s"]) == (None, True, None)
    assert fig["failback_s"] == {"p50": None, "max": None, "per_worker": {"w1": None, "w2": None}}
    assert [c["name"] for c in fig["checks"]] == ["failover_s", "user_error_rate", "detect_s"]
    assert fig["traffic_share"]["after"] == {"primary": None, "secondary": None}
    assert fig["user_requests"] == 9  # the window has no end yet


def test_no_targets_no_checks() -> None:
    (fig,) = drill_figures(master_of({"w1": W1}), NONE)
    assert fig["checks"] == [] and fig["passed"] is True


def test_traffic_share_windows_between_two_drills() -> None:
    master = Ledger("master")
    master.start(T0)
    master.drill_started(0, "primary", "http_503", 1010.0)
    master.drill_stopped(0, 1020.0)
    master.drill_started(1, "secondary", "timeout", 1030.0)
    master.drill_stopped(1, 1035.0)
    w = Ledger("w1")
    w.start(T0)
    for at, endpoint in [(1005.2, "primary"), (1015.2, "secondary"), (1019.2, "secondary"), (1022.2, "primary")]:
        w.attempt(endpoint, True, at)
    for at, endpoint in [(1025.2, "secondary"), (1031.2, "primary"), (1036.2, "secondary"), (1050.2, "secondary")]:
        w.attempt(endpoint, True, at)
    master.merge("w1", json.loads(json.dumps(w.ship())))
    first, second = (f["traffic_share"] for f in drill_figures(master, NONE))
    assert first == {
        "before": {"primary": 1.0, "secondary": 0.0},  # from the run start
        "during": {"primary": 0.0, "secondary": 1.0},
        "after": {"primary": 0.5, "secondary": 0.5},  # until drill 1 starts: +22.2 and +25.2
    }
    assert second == {
        "before": {"primary": 0.5, "secondary": 0.5},  # from drill 0's stop
        "during": {"primary": 1.0, "secondary": 0.0},
        "after": {"primary": 0.0, "secondary": 1.0},  # until the end
    }


def test_a_bin_counts_in_the_window_holding_its_midpoint() -> None:
    master = Ledger("master")
    master.start(T0)
    master.drill_started(0, "primary", "http_503", 1010.4)  # bin 10 [1010, 1011) has its midpoint inside the drill
    master.drill_stopped(0, 1012.6)  # bin 12 [1012, 1013) too: the drill holds bins 10, 11 and 12
    for at in (1009.9, 1010.1, 1011.5, 1012.9, 1013.1):
        master.attempt("primary", True, at)
    master.attempt("secondary", True, 1010.0)
    (fig,) = drill_figures(master, NONE)
    assert fig["traffic_share"]["during"] == {"primary": 0.75, "secondary": 0.25}
    assert fig["traffic_share"]["before"] == {"primary": 1.0, "secondary": 0.0}


def test_traffic_series() -> None:
    series = traffic_series(master_of({"w1": W1, "w2": W2}))
    assert series["t0"] == T0 and series["seconds"] == list(range(46))
    assert sum(series["by_endpoint"]["primary"]) == 10 and sum(series["failed"]["primary"]) == 5
    assert series["by_endpoint"]["secondary"][20] == 2 and series["failed"]["secondary"][20] == 0
    assert traffic_series(Ledger()) == {"t0": None, "step_s": 1, "seconds": [], "by_endpoint": {}, "failed": {}}


def test_quality_shares() -> None:
    ledger = Ledger()
    for status, tokens in [("ok", 100), ("ok", 120), ("ok", 140), ("schema_invalid", 90), ("truncated", 400)]:
        ledger.quality("secondary", status, tokens)
    ledger.quality("tertiary", "nondeterministic", None)
    ledger.quality("tertiary", "ok", None)
    q = quality_figures(ledger)
    assert q["secondary"] == {
        "checked": 5,
        "ok": 3,
        "schema_invalid": 1,
        "nondeterministic": 0,
        "truncated": 1,
        "schema_valid_share": 0.8,
        "deterministic_share": 1.0,
        "truncated_share": 0.2,
        "output_tokens_p50": pytest.approx(120.0, rel=RELATIVE_ERROR),  # a bucket's midpoint
        "output_tokens_mean": 120.0,
    }
    assert q["tertiary"]["deterministic_share"] == 0.5 and q["tertiary"]["output_tokens_p50"] is None
    assert quality_figures(Ledger()) == {}


def test_lines() -> None:
    ledger = master_of({"w1": W1, "w2": W2})
    ledger.quality("secondary", "ok", 120)
    ledger.quality("secondary", "truncated", None)
    ledger.fallback.setdefault("tertiary", type(ledger.fallback["secondary"])())  # nothing checked: no line
    assert lines(drill_figures(ledger, LENIENT), quality_figures(ledger)) == [
        "drill 0 primary http_503 at +20.0 s for 20.0 s: detected 0.40 s p50 / 0.80 s max (2 workers); "
        "failed over 0.45 / 0.83 s; failed back 5.6 s max",
        "  user-visible errors 3 of 7 (42.9 %) in the drill, 3 of 5 in the switch; attempt errors 5 of 9; "
        "TTFT p95 failed-over 85.0 ms vs 60.0 ms before (users 60.0 ms before, 85.0 ms during, 55.0 ms after); "
        "traffic primary 100 % -> 56 % -> 100 %, secondary 0 % -> 44 % -> 0 %; in flight at the start 0 (0 failed)",
        "  verdict PASS: failover 0.83 s <= 5 s; user errors 42.9 % <= 50 %; detection 0.80 s <= 1 s; "
        "failback 5.6 s <= 10 s",
        "fallback quality secondary: 2 checked, 1 ok; schema-valid 100 %, deterministic 100 %, truncated 50.0 %; "
        "output tokens p50 120 mean 120",
    ]


def test_lines_of_a_failing_and_a_running_drill() -> None:
    stuck = [e for e in W2 if not (e[0] == "u" and e[3] == "secondary" and e[2] == "primary")]
    figures = drill_figures(master_of({"w1": W1, "w2": stuck}, drills=DRILL[:1]), Targets())
    head, _, verdict = lines(figures, {})
    assert head == (
        "drill 0 primary http_503 at +20.0 s still running: detected 0.40 s p50 / 0.80 s max (2 workers); "
        "failed over 0.45 / 0.45 s"
    )
    assert verdict.startswith("  verdict FAIL: worker w2 never failed over; user errors ")
    assert lines(drill_figures(master_of({"w1": W1}), NONE), {})[2] == "  verdict -: no targets set"


def test_a_long_runs_traffic_doubles_its_bins_and_keeps_every_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """A master merging a worker's 1-s bins for 4 x MAX_BINS seconds (here 100): the bins double twice, every
    attempt is still counted, and a drill's shares still hold, placed by the wider bins' midpoints."""
    monkeypatch.setattr(traffic, "MAX_BINS", 100)
    master, w = Ledger("master"), Ledger("w1")
    master.start(T0)
    w.start(T0)
    for s in range(400):
        w.attempt("primary" if s < 300 else "secondary", s % 10 != 0, T0 + s + 0.5)
        if s % 3 == 0:
            master.merge("w1", w.ship())
    master.merge("w1", w.ship())
    master.drill_started(0, "primary", "error_5xx", T0 + 300.0)
    series = traffic_series(master)
    assert series["step_s"] == 4 and series["seconds"] == list(range(0, 400, 4))
    assert max(len(b) for b in master.traffic.values()) <= 100
    assert sum(series["by_endpoint"]["primary"]) == 300 and sum(series["failed"]["primary"]) == 30
    assert sum(series["by_endpoint"]["secondary"]) == 100
    (fig,) = drill_figures(master, NONE)
    assert fig["traffic_share"]["before"] == {"primary": 1.0, "secondary": 0.0}
    assert fig["traffic_share"]["during"] == {"primary": 0.0, "secondary": 1.0}


def test_a_long_local_run_bounds_its_own_bins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(traffic, "MAX_BINS", 100)
    local = Ledger()
    local.start(T0)
    for s in range(1000):
        local.attempt("primary", True, T0 + s + 0.5)
    series = traffic_series(local)
    assert series["step_s"] == 16 and len(local.traffic["primary"]) <= 100
    assert sum(series["by_endpoint"]["primary"]) == 1000
