"""Client health: how late the worker's event loop runs, and its CPU, sampled beside the load.

Latencies measured while the loop lags are inflated by the load generator itself (docs/metrics.md, "Timing"); these
samples let every summary say so instead of reporting the inflated numbers as the server's. Each sample is placed in
the part of the run it was taken in (start-up, measured window, stop: loadlib.metrics.saturation.RunWindow) and each
second carries what kept the loop late (the worker's own CPU, the machine, or neither), so the verdict judges the
measured window only and fits its advice to the cause.
"""

from __future__ import annotations

import gevent

from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from typing import Any

import psutil

from loadlib.metrics.saturation import (
    MEASURED,
    RUNNING,
    STALL,
    STARTUP,
    STOP,
    RunWindow,
    WindowSamples,
    second_cause,
    second_phase,
)

SAMPLE_INTERVAL_S = 0.1
EMIT_INTERVAL_S = 1.0
SCHEDSTAT = "/proc/thread-self/schedstat"  # Linux: this thread's time on a CPU and waiting for one, in ns


def runq_wait_ns(path: str = SCHEDSTAT) -> int | None:
    """How long the calling thread (the event loop's) has waited on the run queue for a CPU, in total; None where
    the kernel does not say (not Linux, schedstats off)."""
    try:
        with open(path) as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


def machine_shares(before: Any, after: Any) -> tuple[float | None, float | None]:
    """(steal %, busy %) of the whole machine between two psutil.cpu_times() readings. Busy leaves out idle and
    iowait: a CPU waiting on I/O is free for the loop."""
    fields = after._fields
    delta = {f: getattr(after, f) - getattr(before, f) for f in fields}
    total = sum(v for f, v in delta.items() if f not in ("guest", "guest_nice"))  # guest time is inside user
    if total <= 0:
        return None, None
    steal = delta.get("steal", 0.0) / total * 100.0
    busy = (total - delta.get("idle", 0.0) - delta.get("iowait", 0.0)) / total * 100.0
    return steal, busy


@dataclass(frozen=True, slots=True)
class Reading:
    """One second of CPU context: the worker's own CPU (% of one core), its loop thread's run-queue wait, the
    machine's steal (%) and the CPU other processes used (% of one core), on `ncpu` CPUs."""

    own_cpu: float
    runq_wait_ms: float | None
    steal_percent: float | None
    others_cpu: float | None
    ncpu: int = 1


class Probe:
    """Reads the CPU context of the last second (each read covers the time since the previous one)."""

    def __init__(self) -> None:
        self.proc = psutil.Process()
        self.proc.cpu_percent(None)
        self.ncpu = psutil.cpu_count() or 1
        self.times = psutil.cpu_times()
        self.runq = runq_wait_ns()

    def read(self) -> Reading | None:
        """None when /proc cannot be read: a process out of open files (EMFILE) must keep judging its loop lag."""
        try:
            own = self.proc.cpu_percent(None)
            times, runq = psutil.cpu_times(), runq_wait_ns()
        except OSError:
            return None
        steal, busy = machine_shares(self.times, times)
        wait = (runq - self.runq) / 1e6 if runq is not None and self.runq is not None else None
        self.times, self.runq = times, runq
        others = None if busy is None else max(busy * self.ncpu - own, 0.0)
        return Reading(own, wait, steal, others, self.ncpu)


class HealthSampler:
    """Records loop lag every 100 ms and CPU every second, each in its part of the run (`state()` is the runner's
    state); `emit(users=, cpu_percent=, loop_lag_ms=)` once a second, whatever the part."""

    def __init__(
        self,
        user_count: Callable[[], int],
        emit: Callable[..., Any],
        state: Callable[[], str] | None = None,
        lag_limit_ms: float = 50.0,
    ) -> None:
        self.user_count = user_count
        self.emit = emit
        self.state = state or (lambda: RUNNING)
        self.lag_limit_ms = lag_limit_ms
        self.window = RunWindow()
        self.parts = _parts()
        self._pending: list[tuple[str, float]] = []  # (part of the run, lag ms) of the second under way
        self._probe: Probe | None = None
        self._greenlet: gevent.Greenlet | None = None

    def start(self) -> None:
        """A test starts: its start-up comes first again (the sampler itself keeps running across tests)."""
        self.window.reset()
        if self._greenlet is None:
            self._greenlet = gevent.spawn(self._run)

    def stop(self) -> None:
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
            self._greenlet = None

    def take(self) -> dict[str, Any]:
        """Serialised samples since the last call (shipped to the master, then reset like Locust's stats): the
        measured window's at the top level, start-up and stop under their names. The second under way is filed
        first, so a worker's last report before it quits holds its last samples too."""
        if self._pending and self._probe is not None:
            self._file(self._pending, self._probe.read())
            self._pending = []
        parts, self.parts = self.parts, _parts()
        return {**parts[MEASURED].to_dict(), STARTUP: parts[STARTUP].to_dict(), STOP: parts[STOP].to_dict()}

    def _run(self) -> None:
        self._probe = probe = Probe()
        last_emit = perf_counter()
        while True:
            t = perf_counter()
            gevent.sleep(SAMPLE_INTERVAL_S)
            now = perf_counter()
            lag = max((now - t - SAMPLE_INTERVAL_S) * 1000.0, 0.0)
            self._pending.append((self.window.place(self.state(), now), lag))
            if now - last_emit >= EMIT_INTERVAL_S:
                reading = probe.read()
                if reading is not None:  # else its lag samples wait for the next second that has a reading
                    self._second(self._pending, reading)
                    self._pending, last_emit = [], now

    def _second(self, pending: list[tuple[str, float]], reading: Reading) -> None:
        """One second: file its samples, then emit it (whatever its part of the run)."""
        lag_max = self._file(pending, reading)
        self.emit(users=self.user_count(), cpu_percent=reading.own_cpu, loop_lag_ms=lag_max)

    def _file(self, pending: list[tuple[str, float]], reading: Reading | None) -> float:
        """File lag samples, each in its part of the run and tagged with what kept the loop late over their
        second, and the second's CPU sample (none without a reading: a stall of unknown cause); the worst lag."""
        lag_max = max(lag for _, lag in pending)
        r = reading
        cause = STALL
        if r is not None:
            cause = second_cause(lag_max, r.own_cpu, r.runq_wait_ms, r.steal_percent, r.others_cpu, r.ncpu)
        for phase, lag in pending:
            self.parts[phase].add_lag(lag, self.lag_limit_ms, cause)
        if r is not None:
            self.parts[second_phase(phase for phase, _ in pending)].cpu.record(r.own_cpu)
        return lag_max


def _parts() -> dict[str, WindowSamples]:
    return {MEASURED: WindowSamples(), STARTUP: WindowSamples(), STOP: WindowSamples()}
