"""Client saturation over the measured window: which samples are judged, what caused the lag, and reasons whose
printed numbers agree with the comparison they state (issue 21 item 9)."""

from __future__ import annotations

import re
from collections import namedtuple

import pytest

from loadlib.histogram import Histogram
from loadlib.metrics.saturation import (
    CPU_BOUND,
    MACHINE_BUSY,
    MEASURED,
    MEASURED_SPAN,
    STALL,
    STARTUP,
    STARTUP_SPAN,
    STOP,
    RunWindow,
    SaturationThresholds,
    WindowSamples,
    judge_window,
    lag_cause,
    over_text,
    saturation_verdict,
    second_cause,
    second_phase,
    window_line,
)


def lags(values: list[float], cause: str = STALL, limit: float = 50.0) -> WindowSamples:
    part = WindowSamples()
    for v in values:
        part.add_lag(v, limit, cause)
    part.cpu.record_many([5.0] * max(len(values) // 10, 1))
    return part


@pytest.mark.parametrize(
    ("value", "limit", "text"),
    [
        (50.04, 50.0, "50.04"),
        (50.0004, 50.0, "50.0004"),
        (87.0, 50.0, "87.0"),
        (49.96, 50.0, "50.0"),
        (3.25, 50, "3.2"),
    ],
)
def test_a_value_over_the_limit_never_reads_equal_to_it(value: float, limit: float, text: str) -> None:
    assert over_text(value, limit) == text


def test_over_text_agrees_with_the_comparison_across_the_boundary() -> None:
    for i in range(1, 2000):
        value = 50.0 + i * 1e-5
        assert float(over_text(value, 50.0)) > 50.0, value


def test_the_reason_prints_the_p99_that_crossed_the_limit() -> None:
    lag = Histogram()
    lag.record_many([1.0] * 90 + [50.04] * 10)
    verdict = saturation_verdict(lag, [5.0], SaturationThresholds(loop_lag_p99_ms=50.0))
    assert verdict.saturated
    printed = float(re.search(r"lag p99 ([\d.]+) ms > 50 ms", verdict.reasons[0]).group(1))
    assert printed > 50.0 and printed == pytest.approx(verdict.loop_lag_p99_ms, abs=0.01)


def test_the_window_opens_a_settle_time_after_spawning_and_closes_at_the_stop() -> None:
    w = RunWindow(settle_s=1.0)
    placed = [w.place(state, now) for state, now in [("spawning", 0.1), ("running", 0.2), ("running", 1.1)]]
    assert placed == [STARTUP, STARTUP, STARTUP], "the first second after spawning is still start-up"
    assert w.place("running", 1.3) == MEASURED
    assert w.place("spawning", 2.0) == MEASURED, "a later spawn (shape, web UI) is load the user asked for"
    assert w.place("cleanup", 3.0) == STOP
    assert w.place("running", 3.1) == STOP, "stays closed until the next test"
    w.reset()
    assert w.place("running", 4.0) == STARTUP


def test_samples_inside_the_runs_warmup_count_with_the_start_up() -> None:
    """--llm-warmup: the client verdict leaves the warm-up out as it leaves out the start-up."""
    warming = [True]
    w = RunWindow(settle_s=1.0)
    w.warming = lambda: warming[0]
    assert [w.place("running", t) for t in (0.1, 2.0, 5.0)] == [STARTUP, STARTUP, STARTUP]
    warming[0] = False
    assert w.place("running", 5.1) == MEASURED
    assert w.place("cleanup", 6.0) == STOP


def test_a_stop_before_spawning_completed_is_start_up() -> None:
    w = RunWindow()
    assert [w.place(s, t) for s, t in [("spawning", 0.1), ("stopped", 0.2)]] == [STARTUP, STARTUP]


def test_a_second_is_measured_only_when_all_its_samples_are() -> None:
    assert second_phase([MEASURED] * 10) == MEASURED
    assert second_phase([STARTUP, MEASURED]) == STARTUP
    assert second_phase([MEASURED, STOP]) == STOP


@pytest.mark.parametrize(
    ("args", "cause"),
    [
        ((80.0, 95.0, 70.0, 0.0, 100.0, 2), CPU_BOUND),  # own CPU high, whatever else
        ((80.0, 5.0, 60.0, 0.0, 100.0, 2), MACHINE_BUSY),  # waited on the run queue for most of the lag
        ((80.0, 5.0, 10.0, 0.0, 100.0, 2), STALL),  # on the CPU, not waiting: something on the loop blocked
        ((80.0, 5.0, 10.0, 25.0, 100.0, 2), MACHINE_BUSY),  # the hypervisor took a quarter of the CPU
        ((80.0, 5.0, None, None, 160.0, 2), MACHINE_BUSY),  # no schedstat: others leave under half a core free
        ((80.0, 5.0, None, None, 100.0, 2), STALL),  # a hog on the other core leaves ours free
    ],
)
def test_what_kept_the_loop_late_in_a_second(args: tuple, cause: str) -> None:
    assert second_cause(*args) == cause


def test_the_cause_of_most_over_limit_samples_wins() -> None:
    assert lag_cause({MACHINE_BUSY: 3, STALL: 1}) == MACHINE_BUSY
    assert lag_cause({MACHINE_BUSY: 2, CPU_BOUND: 2}) == CPU_BOUND, "ties: the worker's own load first"
    assert lag_cause({}) is None and lag_cause({STALL: 0}) is None


def test_start_up_and_stop_stalls_do_not_saturate_the_measured_window() -> None:
    phases = {MEASURED: lags([1.0] * 80), STARTUP: lags([87.0, 2.0]), STOP: lags([64.5])}
    verdict = judge_window(phases)
    assert verdict is not None and not verdict.saturated and verdict.cause is None
    assert verdict.window == {
        "span": MEASURED_SPAN,
        "samples": 80,
        "excluded": {"startup": {"samples": 2, "lag_max_ms": 87.0}, "stop": {"samples": 1, "lag_max_ms": 64.5}},
    }
    line = window_line(verdict.to_dict())
    assert line.startswith("client judged over the measured window, from 1 s after all users were spawned")
    assert line.endswith("left out: start-up 2 (worst lag 87.0 ms), stop 1 (worst lag 64.5 ms)")


def test_a_window_that_lags_is_still_flagged() -> None:
    verdict = judge_window({MEASURED: lags([1.0] * 90 + [120.0] * 10, CPU_BOUND)})
    assert verdict.saturated and verdict.cause == CPU_BOUND
    assert "too many users per worker: add workers" in verdict.reasons[0]


def test_a_run_that_never_finished_spawning_is_judged_on_its_start_up() -> None:
    verdict = judge_window({STARTUP: lags([1.0] * 50 + [90.0] * 5, MACHINE_BUSY), STOP: lags([70.0])})
    assert verdict.saturated and verdict.window["span"] == STARTUP_SPAN
    assert list(verdict.window["excluded"]) == ["stop"]
    assert judge_window({}) is None and judge_window({STOP: lags([3.0])}) is None


def test_the_advice_fits_the_cause() -> None:
    busy = judge_window({MEASURED: lags([1.0] * 90 + [60.0] * 10, MACHINE_BUSY)})
    assert busy.cause == MACHINE_BUSY and "the machine was busy" in busy.reasons[0]
    assert "add workers" not in busy.reasons[0] and "more workers here will not help" in busy.reasons[0]
    stall = judge_window({MEASURED: lags([1.0] * 60 + [87.0], STALL)})
    assert (
        stall.cause == STALL and "1 stall over the limit" in stall.reasons[0] and "add workers" not in stall.reasons[0]
    )
    cpu = Histogram()
    cpu.record_many([97.0] * 10)
    pegged = saturation_verdict(Histogram(), cpu, over={})
    assert pegged.cause == CPU_BOUND and pegged.reasons[0].startswith("worker CPU p90 97.0 % > 90 %")


def test_without_cause_data_the_reason_keeps_its_generic_advice() -> None:
    lag = Histogram()
    lag.record_many([1.0] * 95 + [120.3] * 5)
    verdict = saturation_verdict(lag, [10.0])
    assert verdict.cause is None and verdict.reasons[0].endswith(
        "latencies are inflated by the load generator, add workers"
    )


def test_window_samples_travel_and_merge() -> None:
    a, b = lags([1.0, 70.0], MACHINE_BUSY), lags([90.0], STALL)
    back = WindowSamples.from_dict(a.to_dict())
    assert back.lag == a.lag and back.over == {MACHINE_BUSY: 1}
    back.merge(b)
    assert back.lag.count == 3 and back.over == {MACHINE_BUSY: 1, STALL: 1}
    old = {"loop_lag_ms": a.lag.to_dict(), "cpu_percent": a.cpu.to_dict()}  # a payload without counts by cause
    assert WindowSamples.from_dict(old).over == {}
    assert window_line(None) is None and window_line({"saturated": False}) is None


def test_machine_shares_and_the_run_queue_read(tmp_path) -> None:
    from loadlib.locust.health import machine_shares, runq_wait_ns

    Times = namedtuple("Times", "user system idle iowait steal guest")
    steal, busy = machine_shares(Times(0, 0, 0, 0, 0, 0), Times(50, 10, 30, 5, 5, 20))
    assert steal == pytest.approx(5.0) and busy == pytest.approx(65.0)
    assert machine_shares(Times(1, 1, 1, 1, 1, 1), Times(1, 1, 1, 1, 1, 1)) == (None, None)
    stat = tmp_path / "schedstat"
    stat.write_text("541324865 8772384 53\n")
    assert runq_wait_ns(str(stat)) == 8772384
    assert runq_wait_ns(str(tmp_path / "missing")) is None
