"""Client health: how late the worker's event loop runs, and its CPU, sampled beside the load.

Latencies measured while the loop lags are inflated by the load generator itself (docs/metrics.md, "Timing"); these
samples let every summary say so instead of reporting the inflated numbers as the server's.
"""

from __future__ import annotations

import gevent

from collections.abc import Callable
from time import perf_counter
from typing import Any

import psutil

from loadlib.metrics.histogram import Histogram

SAMPLE_INTERVAL_S = 0.1
EMIT_INTERVAL_S = 1.0


class HealthSampler:
    """Records loop lag every 100 ms and CPU every second; `emit(users=, cpu_percent=, loop_lag_ms=)` once a second."""

    def __init__(self, user_count: Callable[[], int], emit: Callable[..., Any]) -> None:
        self.user_count = user_count
        self.emit = emit
        self.loop_lag = Histogram()
        self.cpu = Histogram()
        self._greenlet: gevent.Greenlet | None = None

    def start(self) -> None:
        if self._greenlet is None:
            self._greenlet = gevent.spawn(self._run)

    def stop(self) -> None:
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
            self._greenlet = None

    def take(self) -> dict[str, Any]:
        """Serialised samples since the last call (shipped to the master, then reset like Locust's stats)."""
        data = {"loop_lag_ms": self.loop_lag.to_dict(), "cpu_percent": self.cpu.to_dict()}
        self.loop_lag = Histogram()
        self.cpu = Histogram()
        return data

    def _run(self) -> None:
        proc = psutil.Process()
        proc.cpu_percent(None)
        last_emit = perf_counter()
        lag_max = 0.0
        while True:
            t = perf_counter()
            gevent.sleep(SAMPLE_INTERVAL_S)
            now = perf_counter()
            lag = max((now - t - SAMPLE_INTERVAL_S) * 1000.0, 0.0)
            self.loop_lag.record(lag)
            lag_max = max(lag_max, lag)
            if now - last_emit >= EMIT_INTERVAL_S:
                cpu = proc.cpu_percent(None)
                self.cpu.record(cpu)
                self.emit(users=self.user_count(), cpu_percent=cpu, loop_lag_ms=lag_max)
                lag_max = 0.0
                last_emit = now
