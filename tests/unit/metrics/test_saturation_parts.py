"""The health sampler files each sample in its part of the run with its second's cause; the health part merges the
parts of every node and judges each node's own window, a local run's node included."""

from __future__ import annotations

from types import SimpleNamespace

from loadlib.locust.health import HealthSampler, Reading
from loadlib.locust.parts import HealthPart
from loadlib.metrics.saturation import CPU_BOUND, MACHINE_BUSY, MEASURED, STALL, STARTUP, STOP, WindowSamples
from loadlib.settings import resolve


def sampler() -> tuple[HealthSampler, list[dict]]:
    emitted: list[dict] = []
    return HealthSampler(lambda: 2, lambda **kw: emitted.append(kw), lambda: "running", 50.0), emitted


def test_a_second_is_filed_by_part_and_tagged_with_its_cause() -> None:
    s, emitted = sampler()
    s._second([(STARTUP, 90.0), (MEASURED, 1.0)], Reading(5.0, 80.0, 0.0, 100.0, 2))
    s._second([(MEASURED, 70.0), (MEASURED, 2.0)], Reading(95.0, 0.0, 0.0, 0.0, 2))
    s._second([(MEASURED, 60.0), (STOP, 1.0)], Reading(3.0, 1.0, 0.0, 0.0, 2))
    data = s.take()
    measured = WindowSamples.from_dict(data)
    assert measured.lag.count == 4 and measured.over == {CPU_BOUND: 1, STALL: 1}
    assert measured.cpu.count == 1, "only the second wholly in the window gives a CPU sample to it"
    assert WindowSamples.from_dict(data[STARTUP]).over == {MACHINE_BUSY: 1}
    assert WindowSamples.from_dict(data[STOP]).lag.count == 1
    assert [e["loop_lag_ms"] for e in emitted] == [90.0, 70.0, 60.0], "every second is emitted, whatever its part"
    assert WindowSamples.from_dict(s.take()).lag.count == 0, "taken samples are reset"


def test_a_local_run_lists_its_own_node_and_judges_its_window() -> None:
    s, _ = sampler()
    s._second([(STARTUP, 87.0)] + [(MEASURED, 1.0)] * 9, Reading(4.0, 1.0, 0.0, 100.0, 2))
    part = HealthPart()
    part.sampler = s
    summary: dict = {"total": {}}
    part.summarize(summary)
    assert summary["client_saturated"] is False
    assert list(summary["clients"]) == ["local"], "the web UI's table by worker shows the local node"
    assert summary["client"]["window"]["excluded"]["startup"] == {"samples": 1, "lag_max_ms": 87.0}
    assert part.lines(summary)[0].startswith("client judged over the measured window")


def test_each_worker_judges_its_own_window_and_the_master_merges() -> None:
    quiet, busy = sampler()[0], sampler()[0]
    quiet._second([(STARTUP, 95.0)] + [(MEASURED, 1.0)] * 9, Reading(4.0, 1.0, 0.0, 100.0, 2))
    busy._second([(MEASURED, 80.0)] * 10, Reading(4.0, 70.0, 0.0, 190.0, 2))
    part = HealthPart()
    part.start(SimpleNamespace(options=resolve(None), generates_load=False))
    part.merge(quiet.take(), "w1")
    part.merge(busy.take(), "w2")
    summary: dict = {"total": {}}
    part.summarize(summary)
    assert summary["clients"]["w1"]["saturated"] is False
    assert summary["clients"]["w2"]["cause"] == MACHINE_BUSY
    assert summary["client"]["saturated"] is True and summary["client"]["window"]["samples"] == 19
    assert summary["client"]["window"]["excluded"]["startup"]["lag_max_ms"] == 95.0
    assert part.lines({"client": None}) == []


def test_take_files_the_second_under_way() -> None:
    s, emitted = sampler()
    s._probe = SimpleNamespace(read=lambda: Reading(4.0, 50.0, 0.0, 100.0, 2))
    s._pending = [(MEASURED, 1.0), (STOP, 88.0)]
    data = s.take()
    assert WindowSamples.from_dict(data).lag.count == 1
    assert WindowSamples.from_dict(data[STOP]).over == {MACHINE_BUSY: 1}
    assert s._pending == [] and emitted == [], "filed for the report, not emitted as a second"


def test_a_process_out_of_open_files_keeps_its_lag_samples_without_a_cpu_sample(monkeypatch) -> None:
    """/proc cannot be opened at EMFILE: the probe says so (None) instead of killing the sampler, and the lags are
    filed without a made-up CPU figure."""
    from loadlib.locust import health

    def out_of_files(*_: object) -> float:
        raise OSError(24, "Too many open files")

    probe = health.Probe()
    monkeypatch.setattr(probe.proc, "cpu_percent", out_of_files)
    assert probe.read() is None
    s, _ = sampler()
    s._pending, s._probe = [(MEASURED, 80.0), (MEASURED, 1.0)], probe
    measured = WindowSamples.from_dict(s.take())
    assert measured.lag.count == 2 and measured.over == {STALL: 1} and measured.cpu.count == 0
