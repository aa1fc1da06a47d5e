"""Client-side drill faults: how the pool breaks a real endpoint for a drill window without touching the provider
(docs/failover.md, "Drills"). A mock endpoint is broken on the server instead (its admin API, loadlib.mock.faults).

During the window, an attempt to the endpoint gets the outcome the fault stands for, made here rather than received:
`refuse` a connect error, `http_500`/`http_503` that status, `rate_limit` a 429 with Retry-After, `stall` no answer
until the TTFT timeout (or the window's end), `latency` the real answer `delay_ms` later (every time measured from the
attempt's start includes the delay). Faults at a `rate` below 1 hit that share of attempts.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from loadlib.config import Timeouts
from loadlib.errors import ErrorClass
from loadlib.transport.outcome import StreamOutcome

PREFIX = "drill (client-side): "


@dataclass(frozen=True, slots=True)
class ClientFault:
    kind: str
    until: float  # time.monotonic() when the window ends
    params: Mapping[str, float] = field(default_factory=dict)

    def active(self, now: float) -> bool:
        return now < self.until

    def hits(self, rng: random.Random) -> bool:
        rate = float(self.params.get("rate", 1.0))
        return rate >= 1.0 or rng.random() < rate


def made_outcome(fault: ClientFault, timeouts: Timeouts, wait: Callable[[float], object]) -> StreamOutcome | None:
    """The outcome of an attempt the fault answers itself; None when the real call goes ahead (`latency`, after its
    delay has been waited). `wait(seconds)` sleeps and may return early when the attempt is cancelled."""
    out = StreamOutcome()
    out.t0 = time.perf_counter()
    kind = fault.kind
    if kind == "latency":
        wait(float(fault.params.get("delay_ms", 1000.0)) / 1000.0)
        return None
    if kind == "stall":
        wait(max(0.0, min(timeouts.ttft, fault.until - time.monotonic())))
        out.status, out.message = ErrorClass.TIMEOUT_TTFT, PREFIX + "no first token (stall)"
    elif kind == "refuse":
        out.status, out.message = ErrorClass.CONNECT_ERROR, PREFIX + "connection refused"
    elif kind == "rate_limit":
        retry_after = float(fault.params.get("retry_after_s", 1.0))
        out.status, out.http_status = ErrorClass.RATE_LIMITED, 429
        out.headers = {"retry-after": f"{retry_after:g}", "retry-after-ms": f"{retry_after * 1000:g}"}
        out.message = PREFIX + f"HTTP 429, Retry-After {retry_after:g} s"
    else:
        out.status, out.http_status = ErrorClass.HTTP_5XX, 500 if kind == "http_500" else 503
        out.message = PREFIX + f"HTTP {out.http_status}"
    out.e2e_ms = (time.perf_counter() - out.t0) * 1000.0
    return out


def delayed(out: StreamOutcome, delay_s: float) -> StreamOutcome:
    """A real outcome seen through a `latency` fault: every time from the attempt's start grows by the delay."""
    ms = delay_s * 1000.0
    out.t0 -= delay_s
    for name in ("ttfb_ms", "first_event_ms", "ttft_ms", "ttfo_ms", "e2e_ms", "stale_retry_ms"):
        value = getattr(out, name)
        if value is not None:
            setattr(out, name, value + ms)
    stamps = out.output_stamps_ms
    for i in range(len(stamps)):
        stamps[i] += ms
    return out
