"""Open-loop arrivals: a target request rate that does not slow down when the server does (docs/metrics.md, "Timing").

Locust's users are closed-loop: a user waits for its answer before it asks again, so a slow server receives fewer
requests and its queueing never shows (coordinated omission). Here one schedule per worker hands out intended send
times (Poisson or evenly spaced) to whichever user is free; the user sleeps until its slot and sends. When every
user is busy, slots fall behind: the request goes out late, its schedule lag (actual - intended send) is recorded, and
latency measured from the intended send time includes the wait a user arriving on schedule would have had.

Times are milliseconds on the `time.perf_counter()` clock, the clock `loadlib.transport.stream` stamps t0 with. The
user-count maths of the load shapes (`loadlib.locust.shapes`) lives here too, free of Locust, and so does a
closed-loop user's pacing: its phase (when its first request goes, `--llm-user-phase`) and its think time
(`--llm-think-time`), docs/scenarios.md "What a user models".
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter
from typing import Any

PROCESSES = ("poisson", "constant")
HELD_MS = 60_000.0  # a held schedule's slot is this far ahead: a user sleeps until the next rate wakes it


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
        self.epoch = 0  # bumped by every new rate (and hold): a slot taken before it is void
        self.held = False  # no arrivals until the next rate (the capacity search's drain)

    def set_rate(self, rate_per_s: float) -> None:
        """A new rate from now on (the capacity search's rate steps): the old schedule and its backlog are void."""
        if not rate_per_s > 0:
            raise ValueError(f"arrival rate must be > 0 requests/s, got {rate_per_s!r}")
        self.rate_per_s, self._next_ms, self.held = rate_per_s, None, False
        self.epoch += 1

    def hold(self) -> None:
        """No arrivals until the next `set_rate` (the capacity search drains the server's queue before a step): the
        old schedule and its backlog are void, and a slot taken meanwhile is a sleep, never a send."""
        self._next_ms, self.held = None, True
        self.epoch += 1

    def now_ms(self) -> float:
        return self._clock() * 1000.0

    def take(self) -> float:
        """The next free slot (it may already be in the past when users fell behind). The first slot is now; a held
        schedule's is HELD_MS ahead (`wait_for_slot` never sends on it)."""
        if self.held:
            return self.now_ms() + HELD_MS
        if self._next_ms is None:
            self._next_ms = self.now_ms()
        slot = self._next_ms
        self._next_ms = slot + interarrival_ms(self.process, self.rate_per_s, self._rng)
        self.issued += 1
        return slot

    def backlog(self) -> int:
        """Slots already due that no user has taken yet: how far behind the schedule the worker is."""
        if self._next_ms is None or self.held:
            return 0
        behind = self.now_ms() - self._next_ms
        return int(behind * self.rate_per_s / 1000.0) + 1 if behind >= 0 else 0


def wait_for_slot(schedule: ArrivalSchedule, sleep: Callable[[float], object]) -> float:
    """Take the next slot, sleep until it (if it is still ahead) and return its intended send time in ms. A new rate
    set meanwhile voids the slot (`sleep` may return early when it is set): the user takes one of the new schedule. A
    held schedule's slot is never sent: the user sleeps until a rate is set."""
    while True:
        epoch = schedule.epoch
        slot = schedule.take()
        delay_s = (slot - schedule.now_ms()) / 1000.0
        if delay_s > 0:
            sleep(delay_s)
        if schedule.epoch == epoch and not schedule.held:
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


# Closed-loop users: a phase and a think time of their own (docs/scenarios.md, "What a user models")

PHASE_MIN_S = 1.0  # the auto phase window's floor: a spawn burst spread over a second spans dozens of a server's steps
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m)?$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}
PHASE_SYNTAX = "auto, off (or 0), or a window such as 2s, 500ms or 1.5"
THINK_SYNTAX = "empty (the user class's own), exp:MEAN (e.g. exp:2, a Poisson user), a constant such as 2s, or 1-3"


def duration_s(text: str) -> float | None:
    """`2`, `2s`, `500ms`, `1m` in seconds; None when the text is not one."""
    found = _DURATION.match(text.strip().lower())
    return None if found is None else float(found.group(1)) * _UNIT_S[found.group(2)]


@dataclass(frozen=True, slots=True)
class Phase:
    """`--llm-user-phase`: each closed-loop user's first request goes at a random offset, uniform over a window after
    its connection is opened. `window_s` None is `auto`: the larger of 1 s and the users' mean think time."""

    window_s: float | None = None

    def window(self, mean_think_s: float | None) -> float:
        """The window for users whose mean think time is `mean_think_s` (None: unknown, as none)."""
        if self.window_s is not None:
            return self.window_s
        return max(PHASE_MIN_S, mean_think_s or 0.0)


def parse_phase(text: str) -> Phase:
    """`auto` (or empty) -> Phase(); `off` or `0` -> Phase(0.0); `2s` -> Phase(2.0); else a one-line ValueError."""
    raw = str(text or "").strip().lower()
    if raw in ("", "auto"):
        return Phase()
    seconds = 0.0 if raw == "off" else duration_s(raw)
    if seconds is None:
        raise ValueError(f"--llm-user-phase {text!r}: expected {PHASE_SYNTAX}")
    return Phase(seconds)


@dataclass(frozen=True, slots=True)
class ThinkTime:
    """`--llm-think-time`: seconds between a user's answer and its next request: `exp` (exponential with mean `low`:
    the user's requests are a Poisson stream while it waits for none), `uniform` over [low, high] or `constant`."""

    kind: str
    low: float
    high: float

    @property
    def mean_s(self) -> float:
        return (self.low + self.high) / 2.0

    def draw(self, rng: random.Random) -> float:
        if self.kind == "exp":
            return rng.expovariate(1.0 / self.low) if self.low > 0 else 0.0
        return rng.uniform(self.low, self.high) if self.kind == "uniform" else self.low


def parse_think(text: str) -> ThinkTime | None:
    """Empty -> None (the class's own think time); `exp:2` exponential, `2s` constant, `1-3` uniform; else a one-line
    ValueError."""
    raw = str(text or "").strip().lower()
    if not raw:
        return None
    exp = raw.startswith("exp:")
    low_text, dash, high_text = raw.removeprefix("exp:").partition("-")
    low, high = duration_s(low_text), duration_s(high_text if dash else low_text)
    if low is None or high is None or high < low or (exp and dash):
        raise ValueError(f"--llm-think-time {text!r}: expected {THINK_SYNTAX}")
    return ThinkTime("exp" if exp else "uniform" if dash else "constant", low, high)


def mean_wait_s(wait_time: Any) -> float | None:
    """The mean of one of Locust's own wait_time functions, read from its closure: `constant(x)` and `between(a, b)`
    their mean think time, `poisson(rate)` 1/rate, `constant_pacing(p)` and `constant_throughput(1/p)` their period
    p (the whole cycle, answer included). None for any other (a scenario's own think_time): unknown."""
    fn = getattr(wait_time, "__func__", wait_time)
    if getattr(fn, "__module__", None) != "locust.user.wait_time":
        return None
    cells = getattr(fn, "__closure__", None) or ()
    free = dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in cells), strict=False))
    kind = fn.__qualname__.split(".")[0]
    try:
        if kind == "between":
            return (float(free["min_wait"]) + float(free["max_wait"])) / 2.0
        if kind in ("constant", "constant_pacing"):
            return float(free["wait_time"])
        if kind == "poisson":
            return 1.0 / float(free["rate"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None
    return None
