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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from loadlib.metrics.histogram import Histogram

LOOP_LAG_PERCENTILE = 99.0
CPU_PERCENTILE = 90.0


@dataclass(frozen=True, slots=True)
class SaturationThresholds:
    loop_lag_p99_ms: float = 50.0
    cpu_percent: float = 90.0


@dataclass(frozen=True, slots=True)
class Verdict:
    """`saturated` with one reason per crossed threshold; the measured values for the summary line (None: no data)."""

    saturated: bool
    reasons: list[str] = field(default_factory=list)
    loop_lag_p99_ms: float | None = None
    cpu_p90_percent: float | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "saturated": self.saturated,
            "reasons": list(self.reasons),
            "loop_lag_p99_ms": self.loop_lag_p99_ms,
            "cpu_p90_percent": self.cpu_p90_percent,
            "warnings": list(self.warnings),
        }


def saturation_verdict(
    loop_lag: Histogram,
    cpu_percent_samples: Histogram | Sequence[float],
    thresholds: SaturationThresholds | None = None,
    itl_p50_ms: float | None = None,
) -> Verdict:
    """Judge client saturation from merged loop-lag (ms) and CPU (%) samples. No samples: that part is not judged.
    With the run's median ITL, also warn when the loop lags by more than a token gap."""
    t = thresholds or SaturationThresholds()
    if isinstance(cpu_percent_samples, Histogram):
        cpu = cpu_percent_samples
    else:
        cpu = Histogram()
        cpu.record_many(cpu_percent_samples)
    lag_p99 = loop_lag.percentile(LOOP_LAG_PERCENTILE)
    cpu_p90 = cpu.percentile(CPU_PERCENTILE)
    reasons = []
    if lag_p99 is not None and lag_p99 > t.loop_lag_p99_ms:
        reasons.append(
            f"worker event-loop lag p99 {lag_p99:.1f} ms > {t.loop_lag_p99_ms:g} ms: latencies are inflated by the "
            "load generator, add workers"
        )
    if cpu_p90 is not None and cpu_p90 > t.cpu_percent:
        reasons.append(
            f"worker CPU p90 {cpu_p90:.1f} % > {t.cpu_percent:g} %: the load generator is CPU-bound and its "
            "latencies are inflated, add workers or lower the load"
        )
    warnings = []
    if lag_p99 is not None and itl_p50_ms and lag_p99 > itl_p50_ms:
        warnings.append(
            f"loop lag p99 {lag_p99:.1f} ms > ITL p50 {itl_p50_ms:.1f} ms: tokens that arrived while the loop ran late "
            "were read together, so the ITL tail is the load generator's (TTFT, TPOT and E2E use arrival stamps)"
        )
    return Verdict(
        saturated=bool(reasons),
        reasons=reasons,
        loop_lag_p99_ms=lag_p99,
        cpu_p90_percent=cpu_p90,
        warnings=warnings,
    )
