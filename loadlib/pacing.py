"""Open-loop arrivals: a target request rate that does not slow down when the server does (docs/metrics.md, "Timing").

Locust's users are closed-loop: a user waits for its answer before it asks again, so a slow server receives fewer
requests and its queueing never shows (coordinated omission). Here one schedule per worker hands out intended send
times (Poisson or evenly spaced) to whichever user is free; the user sleeps until its slot and sends. When every
user is busy, slots fall behind: the request goes out late, its schedule lag (actual - intended send) is recorded, and
latency measured from the intended send time includes the wait a user arriving on schedule would have had.

Times are milliseconds on the `time.perf_counter()` clock, the clock `loadlib.transport.stream` stamps t0 with. The
user-count maths of the load shapes (`loadlib.locust.shapes`) lives here too, free of Locust.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from time import perf_counter

PROCESSES = ("poisson", "constant")


def interarrival_ms(process: str, rate_per_s: float, rng: random.Random) -> float:
    """Gap to the next arrival: exponential with mean 1/rate (Poisson arrivals), or exactly 1/rate."""
    mean = 1000.0 / rate_per_s
    return rng.expovariate(1.0 / mean) if process == "poisson" else mean


class ArrivalSchedule:
    """Intended send times at `rate_per_s`, shared by all users of one worker. Not thread-safe (one gevent hub)."""

    def __init__(
        self,
        rate_per_s: float,
        process: str = "poisson",
        seed: int = 0,
        clock: Callable[[], float] = perf_counter,
    ) -> None:
        if not rate_per_s > 0:
            raise ValueError(f"arrival rate must be > 0 requests/s, got {rate_per_s!r}")
        if process not in PROCESSES:
            raise ValueError(f"arrival process must be one of {', '.join(PROCESSES)}, got {process!r}")
        self.rate_per_s = rate_per_s
        self.process = process
        self._rng = random.Random(seed)
        self._clock = clock
        self._next_ms: float | None = None
        self.issued = 0
        self.epoch = 0  # bumped by every new rate: a slot taken before it is void

    def set_rate(self, rate_per_s: float) -> None:
        """A new rate from now on (the capacity search's rate steps): the old schedule and its backlog are void."""
        if not rate_per_s > 0:
            raise ValueError(f"arrival rate must be > 0 requests/s, got {rate_per_s!r}")
        self.rate_per_s, self._next_ms = rate_per_s, None
        self.epoch += 1

    def now_ms(self) -> float:
        return self._clock() * 1000.0

    def take(self) -> float:
        """The next free slot (it may already be in the past when users fell behind). The first slot is now."""
        if self._next_ms is None:
            self._next_ms = self.now_ms()
        slot = self._next_ms
        self._next_ms = slot + interarrival_ms(self.process, self.rate_per_s, self._rng)
        self.issued += 1
        return slot

    def backlog(self) -> int:
        """Slots already due that no user has taken yet: how far behind the schedule the worker is."""
        if self._next_ms is None:
            return 0
        behind = self.now_ms() - self._next_ms
        return int(behind * self.rate_per_s / 1000.0) + 1 if behind >= 0 else 0


def wait_for_slot(schedule: ArrivalSchedule, sleep: Callable[[float], object]) -> float:
    """Take the next slot, sleep until it (if it is still ahead) and return its intended send time in ms. A new rate
    set meanwhile voids the slot (`sleep` may return early when it is set): the user takes one of the new schedule."""
    while True:
        epoch = schedule.epoch
        slot = schedule.take()
        delay_s = (slot - schedule.now_ms()) / 1000.0
        if delay_s > 0:
            sleep(delay_s)
        if schedule.epoch == epoch:
            return slot


def worker_rate(total_rate: float, expected_workers: int | None) -> float:
    """A worker's share of the run's target rate: rate / workers (the master's --expect-workers)."""
    return total_rate / expected_workers if expected_workers and expected_workers > 1 else total_rate


def ramp_users(elapsed_s: float, target: int, ramp_s: float) -> int:
    """Users after `elapsed_s` of a linear ramp from 1 to `target` over `ramp_s` seconds (then hold)."""
    if ramp_s <= 0 or elapsed_s >= ramp_s:
        return target
    return max(1, int(target * elapsed_s / ramp_s))


def step_users(elapsed_s: float, target: int, steps: int, step_s: float) -> int:
    """Users after `elapsed_s` of `steps` equal steps of `step_s` seconds up to `target` (then hold)."""
    steps = max(1, steps)
    step = min(int(elapsed_s // step_s) + 1 if step_s > 0 else steps, steps)
    return max(1, round(target * step / steps))
