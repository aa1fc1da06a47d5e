"""Per-threshold abort on fail (loadlib.locust.abort): which thresholds may stop the run and from when, k6's
abortOnFail / delayAbortEval of a threshold file against the --llm-abort-on-fail / --llm-abort-delay defaults."""

from __future__ import annotations

import dataclasses
import time
from types import SimpleNamespace
from typing import Any

import pytest

from loadlib.locust.abort import AbortWatch, abort_rules
from loadlib.verdicts.thresholds import Threshold, parse


def t(expr: str, abort: bool | None = None, delay: float | None = None) -> Threshold:
    return dataclasses.replace(parse(expr), abort_on_fail=abort, abort_delay_s=delay)


MIXED = [t("ttft p95 < 1s", True, 2.0), t("e2e p99 < 2s", False), t("error_rate < 1%"), t("requests > 10", None, 5.0)]


def test_without_the_flag_only_thresholds_with_their_own_abort_on_fail_may_abort() -> None:
    assert abort_rules(MIXED, on_fail=False, delay_s=10.0) == {"ttft p95 < 1s": 2.0}


def test_the_flag_is_the_default_an_own_false_stays_false_and_own_delays_win() -> None:
    assert abort_rules(MIXED, on_fail=True, delay_s=10.0) == {
        "ttft p95 < 1s": 2.0,
        "error_rate < 1%": 10.0,
        "requests > 10": 5.0,
    }


def test_a_threshold_written_twice_aborts_if_either_does_from_the_shorter_delay() -> None:
    twice = [t("ttft p95 < 1s", False), t("ttft p95 < 1s", True, 30.0), t("ttft p95 < 1s", True, 3.0)]
    assert abort_rules(twice, on_fail=False, delay_s=10.0) == {"ttft p95 < 1s": 3.0}


def test_no_threshold_that_may_abort_means_nothing_to_watch() -> None:
    assert abort_rules([t("ttft p95 < 1s")], on_fail=False, delay_s=10.0) == {}
    assert abort_rules([], on_fail=True, delay_s=10.0) == {}


def lost_result(expr: str) -> dict[str, Any]:
    th = parse(expr)
    return {
        "expression": expr,
        "metric": th.metric,
        "op": th.op,
        "limit": th.limit,
        "value": 1e9,
        "passed": False,
        "reason": "lost",
    }


class FakeRun:
    """The run context as the watch sees it: thresholds, a summary with results, and where the abort goes."""

    def __init__(self, thresholds: list[Threshold], lost: list[str]) -> None:
        self.verdicts = SimpleNamespace(thresholds=thresholds, aborted=None)
        self.started_at = time.time()
        self.results = [lost_result(e) for e in lost]
        self.ended = 0

    def summary(self) -> dict[str, Any]:
        return {"thresholds": self.results}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr("loadlib.locust.abort.time.monotonic", lambda: now[0])
    return now


def test_a_lost_threshold_aborts_only_once_its_own_delay_has_passed(clock: list[float]) -> None:
    run = FakeRun(MIXED, lost=["ttft p95 < 1s", "error_rate < 1%"])
    watch = AbortWatch(run, 10.0, lambda: setattr(run, "ended", run.ended + 1), on_fail=True)
    clock[0] += 1.0
    assert watch.check() is False and run.ended == 0  # ttft's 2 s have not passed
    clock[0] += 1.0
    assert watch.check() is True and run.ended == 1
    assert run.verdicts.aborted["thresholds"] == ["ttft p95 < 1s"]  # error_rate waits for its 10 s


def test_a_lost_threshold_that_may_not_abort_never_does(clock: list[float]) -> None:
    run = FakeRun(MIXED, lost=["e2e p99 < 2s"])
    watch = AbortWatch(run, 0.0, lambda: setattr(run, "ended", 1), on_fail=True)
    clock[0] += 100.0
    assert watch.check() is False and run.ended == 0 and run.verdicts.aborted is None
