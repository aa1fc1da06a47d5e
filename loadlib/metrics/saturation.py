"""Is the load generator itself the bottleneck? A verdict from worker event-loop lag and CPU samples.

Why (docs/metrics.md, "Timing"): every timestamp is taken by a greenlet that must first be scheduled. When a
worker's event loop runs a 100 ms timer 120 ms late, a token that arrived on time is stamped up to 120 ms late too,
so TTFT, ITL and E2E grow with the client's backlog, not the server's. Such a run must say so in every summary
instead of reporting the inflated latencies as the server's.

How it is judged:
- Loop lag: the p99 of all lag samples (merged across workers) above `loop_lag_p99_ms`. p99 rather than the mean,
  because a loop that stalls 1 % of the time inflates exactly the tail percentiles the run reports.
- CPU: the p90 of all per-worker CPU samples (one a second, merged across workers) above `cpu_percent`. A pegged
  core is what makes the loop lag; p90 tolerates short bursts (start-up connection storms, garbage collection) but
  flags pegged samples once they are more than a tenth of all samples: one worker pegged for over 10 % of the run,
  or one pegged worker among fewer than ten. 90 % is also where Locust itself starts warning about CPU.
- Below those thresholds, TTFT, TTFB, TPOT and E2E hold on a lagging loop (the kernel's arrival stamps, kept for a
  stream's first token by loadlib.transport.stamps), but tokens that arrive while the loop runs late are read together
  and share the newest one's stamp, so inter-token gaps shrink to zero and grow to the lag. When the loop-lag p99
  exceeds the run's median ITL, the verdict warns that the ITL tail belongs to the load generator.
- Window: only the measured window is judged, from `SETTLE_S` after the runner first reports all users spawned to
  the moment the test stops. Spawning users and the first requests (connections, first-use imports) and stopping
  them (Locust walks every frame's source file when it stops) stall the loop for tens of milliseconds on a busy
  machine, and in a short run those few samples alone make the p99. They are counted and their worst lag is stated
  instead. A run stopped before its window opened is judged on its start-up samples, so it is never left unjudged.
- Cause: each lag sample carries the cause of its second (`second_cause`): the worker's own CPU high (too many users
  per worker: add workers), the machine busy (the loop's thread waited for a CPU held by other processes, or the
  hypervisor stole it: more workers on this machine will not help), or neither (a stall: a blocking call or a
  garbage collection). The advice follows the cause of most over-limit samples.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loadlib.histogram import Histogram

LOOP_LAG_PERCENTILE = 99.0
CPU_PERCENTILE = 90.0
SETTLE_S = 1.0  # after all users are spawned: their first requests still open connections and import on first use

STARTUP, MEASURED, STOP = "startup", "measured", "stop"  # the parts of a run a sample belongs to
RUNNING = "running"  # Locust's runner state once spawning is complete (also on a worker)
STOPPED_STATES = frozenset({"cleanup", "stopping", "stopped"})

CPU_BOUND, MACHINE_BUSY, STALL = "cpu_bound", "machine_busy", "stall"
CAUSES = (CPU_BOUND, MACHINE_BUSY, STALL)
OWN_CPU_HIGH = 80.0  # % of one core: a gevent worker above it has little left for its loop
STEAL_HIGH = 10.0  # % of the machine's CPU time taken by the hypervisor
FEW_STALLS = 3  # this many over-limit samples or fewer are single stalls, not sustained lag

MEASURED_SPAN = f"the measured window, from {SETTLE_S:g} s after all users were spawned to the stop"
STARTUP_SPAN = "start-up only (the run stopped before all users were spawned)"
ADVICE = {
    CPU_BOUND: "the worker's own CPU was high, too many users per worker: add workers or lower the load",
    MACHINE_BUSY: (
        "the machine was busy (the loop waited for a CPU held by other processes, or stolen by the hypervisor, while "
        "the worker's own CPU was low): run on a quieter machine or a dedicated core; more workers here will not help"
    ),
    STALL: (
        "the loop stalled while the CPU was free (a blocking call or a garbage collection): more workers will not help"
    ),
}


@dataclass(frozen=True, slots=True)
class SaturationThresholds:
    loop_lag_p99_ms: float = 50.0
    cpu_percent: float = 90.0


@dataclass(frozen=True, slots=True)
class Verdict:
    """`saturated` with one reason per crossed threshold; the measured values for the summary line (None: no data);
    the `cause` of the lag (None: not saturated or unknown) and the `window` the samples were judged over."""

    saturated: bool
    reasons: list[str] = field(default_factory=list)
    loop_lag_p99_ms: float | None = None
    cpu_p90_percent: float | None = None
    warnings: list[str] = field(default_factory=list)
    cause: str | None = None
    window: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "saturated": self.saturated,
            "reasons": list(self.reasons),
            "loop_lag_p99_ms": self.loop_lag_p99_ms,
            "cpu_p90_percent": self.cpu_p90_percent,
            "warnings": list(self.warnings),
            "cause": self.cause,
            "window": self.window,
        }


def over_text(value: float, limit: float) -> str:
    """`value` with as many decimals as it takes to read above `limit` when it is above it: 50.04 against 50 is
    "50.04", never "50.0" (a reason that reads "50.0 ms > 50 ms" contradicts itself)."""
    for digits in range(1, 7):
        text = f"{value:.{digits}f}"
        if value <= limit or float(text) > limit:
            return text
    return repr(value)


class RunWindow:
    """Which part of the run a sample belongs to, from the runner's state when the sample is taken: start-up until
    `settle_s` after the state first reads "running", stop once it leaves running for good (cleanup, stopping,
    stopped), measured in between (later spawns, from a shape or the web UI, are load the user asked for)."""

    def __init__(self, settle_s: float = SETTLE_S) -> None:
        self.settle_s = settle_s
        self.warming: Callable[[], bool] = lambda: False  # --llm-warmup under way: its samples count as start-up
        self.reset()

    def reset(self) -> None:
        """A new test starts: its start-up comes first again."""
        self.running_since: float | None = None
        self.closed = False

    def place(self, state: str, now: float) -> str:
        if self.closed or (self.running_since is not None and state in STOPPED_STATES):
            self.closed = True
            return STOP
        if self.running_since is None and state == RUNNING:
            self.running_since = now
            return STARTUP  # the sample's interval began before spawning was complete
        if self.running_since is None or now - self.running_since < self.settle_s or self.warming():
            return STARTUP
        return MEASURED


def second_phase(phases: Iterable[str]) -> str:
    """The part of the run one second belongs to: measured only when all its samples were."""
    seen = set(phases)
    return STOP if STOP in seen else STARTUP if STARTUP in seen else MEASURED


def second_cause(
    lag_max_ms: float,
    own_cpu: float,
    runq_wait_ms: float | None,
    steal_percent: float | None,
    others_cpu: float | None,
    ncpu: int,
) -> str:
    """What kept the loop late in one second. Own CPU high: the worker's own work (too many users). Else the machine,
    when the loop's thread waited on the run queue for at least half its worst lag (Linux schedstat: the direct
    measure of "runnable, but another task had the CPU"), or the hypervisor stole over a tenth of the CPU, or (no
    schedstat) other processes left less than half a core free. Else a stall on the loop itself."""
    if own_cpu >= OWN_CPU_HIGH:
        return CPU_BOUND
    if runq_wait_ms is not None and runq_wait_ms > 0 and runq_wait_ms >= 0.5 * lag_max_ms:
        return MACHINE_BUSY
    if steal_percent is not None and steal_percent >= STEAL_HIGH:
        return MACHINE_BUSY
    if runq_wait_ms is None and others_cpu is not None and others_cpu >= (ncpu - 0.5) * 100.0:
        return MACHINE_BUSY
    return STALL


@dataclass(slots=True)
class WindowSamples:
    """One part of a run's samples: loop lag (ms), CPU (%), and the over-limit lag samples counted by cause."""

    lag: Histogram = field(default_factory=Histogram)
    cpu: Histogram = field(default_factory=Histogram)
    over: dict[str, int] = field(default_factory=dict)

    def add_lag(self, lag_ms: float, limit_ms: float, cause: str) -> None:
        self.lag.record(lag_ms)
        if lag_ms > limit_ms:
            self.over[cause] = self.over.get(cause, 0) + 1

    def merge(self, other: WindowSamples) -> None:
        self.lag.merge(other.lag)
        self.cpu.merge(other.cpu)
        for cause, n in other.over.items():
            self.over[cause] = self.over.get(cause, 0) + n

    def to_dict(self) -> dict[str, Any]:
        return {"loop_lag_ms": self.lag.to_dict(), "cpu_percent": self.cpu.to_dict(), "over_limit": dict(self.over)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> WindowSamples:
        over = {str(k): int(v) for k, v in (d.get("over_limit") or {}).items()}
        return cls(Histogram.from_dict(d["loop_lag_ms"]), Histogram.from_dict(d["cpu_percent"]), over)


def lag_cause(over: Mapping[str, int]) -> str | None:
    """The cause of most over-limit lag samples (ties: the worker's own load first); None without any."""
    counted = [(over.get(c, 0), -i, c) for i, c in enumerate(CAUSES)]
    n, _, cause = max(counted)
    return cause if n > 0 else None


def judge_window(
    phases: Mapping[str, WindowSamples],
    thresholds: SaturationThresholds | None = None,
    itl_p50_ms: float | None = None,
) -> Verdict | None:
    """The verdict over the measured window (start-up only when the window never opened); None: no samples at all.
    The verdict's `window` states the span judged and, for each part left out, its sample count and worst lag."""
    empty = WindowSamples()
    judged, span = phases.get(MEASURED, empty), MEASURED_SPAN
    left_out: tuple[str, ...] = (STARTUP, STOP)
    if not judged.lag.count:
        judged, span, left_out = phases.get(STARTUP, empty), STARTUP_SPAN, (STOP,)
    if not judged.lag.count:
        return None
    excluded = {k: _extent(phases.get(k, empty)) for k in left_out}
    window = {"span": span, "samples": judged.lag.count, "excluded": excluded}
    return saturation_verdict(judged.lag, judged.cpu, thresholds, itl_p50_ms, over=judged.over, window=window)


def _extent(part: WindowSamples) -> dict[str, Any]:
    return {"samples": part.lag.count, "lag_max_ms": part.lag.max if part.lag.count else None}


def saturation_verdict(
    loop_lag: Histogram,
    cpu_percent_samples: Histogram | Sequence[float],
    thresholds: SaturationThresholds | None = None,
    itl_p50_ms: float | None = None,
    over: Mapping[str, int] | None = None,
    window: dict[str, Any] | None = None,
) -> Verdict:
    """Judge client saturation from merged loop-lag (ms) and CPU (%) samples. No samples: that part is not judged.
    With the run's median ITL, also warn when the loop lags by more than a token gap. `over` (over-limit lag samples
    by cause) fits the advice to the cause; without it the advice is the generic "add workers"."""
    t = thresholds or SaturationThresholds()
    cpu = _histogram(cpu_percent_samples)
    lag_p99 = loop_lag.percentile(LOOP_LAG_PERCENTILE)
    cpu_p90 = cpu.percentile(CPU_PERCENTILE)
    lag_over = lag_p99 is not None and lag_p99 > t.loop_lag_p99_ms
    cpu_over = cpu_p90 is not None and cpu_p90 > t.cpu_percent
    cause = (CPU_BOUND if cpu_over else None) or (lag_cause(over or {}) if lag_over else None)
    reasons = []
    if lag_p99 is not None and lag_over:
        reasons.append(_lag_reason(lag_p99, t.loop_lag_p99_ms, cause, over))
    if cpu_p90 is not None and cpu_over:
        reasons.append(
            f"worker CPU p90 {over_text(cpu_p90, t.cpu_percent)} % > {t.cpu_percent:g} %: the load generator is "
            "CPU-bound and its latencies are inflated, add workers or lower the load"
        )
    warnings = []
    if lag_p99 is not None and itl_p50_ms and lag_p99 > itl_p50_ms:
        warnings.append(
            f"loop lag p99 {over_text(lag_p99, itl_p50_ms)} ms > ITL p50 {itl_p50_ms:.1f} ms: tokens that arrived "
            "while the loop ran late were read together, so the ITL tail is the load generator's (TTFT, TPOT and E2E "
            "use arrival stamps)"
        )
    return Verdict(bool(reasons), reasons, lag_p99, cpu_p90, warnings, cause if reasons else None, window)


def _histogram(samples: Histogram | Sequence[float]) -> Histogram:
    if isinstance(samples, Histogram):
        return samples
    h = Histogram()
    h.record_many(samples)
    return h


def _lag_reason(lag_p99: float, limit: float, cause: str | None, over: Mapping[str, int] | None) -> str:
    """The loop-lag reason, its advice fitted to the cause (generic without cause data)."""
    lag = over_text(lag_p99, limit)
    head = f"worker event-loop lag p99 {lag} ms > {limit:g} ms: latencies are inflated by the load generator"
    if cause is None or not over:
        return head + ", add workers"
    n = sum(over.values())
    if cause == STALL and n <= FEW_STALLS:
        return f"{head}; {n} stall{'s' if n != 1 else ''} over the limit: {ADVICE[STALL]}"
    return f"{head}; {ADVICE[cause]}"


def window_line(client: Mapping[str, Any] | None) -> str | None:
    """The console line that says which samples the client verdict judged and which it left out (None: no window)."""
    window = (client or {}).get("window")
    if not window:
        return None
    line = f"client judged over {window.get('span')}: {window.get('samples')} loop-lag samples"
    parts = [_excluded_text(k, e) for k, e in (window.get("excluded") or {}).items() if e.get("samples")]
    return line + (f"; left out: {', '.join(parts)}" if parts else "")


def _excluded_text(phase: str, extent: Mapping[str, Any]) -> str:
    worst = extent.get("lag_max_ms")
    name = "start-up" if phase == STARTUP else phase
    return f"{name} {extent.get('samples')}" + ("" if worst is None else f" (worst lag {worst:.1f} ms)")
