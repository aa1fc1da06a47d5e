"""Failures that cannot heal by themselves (a certificate nobody trusts, a host name that does not resolve, a key the
endpoint refuses, a path or model it does not have, a redirect: --host is not the final URL): users back off instead
of spinning, and a run whose first seconds show nothing else stops with one line naming the cause. Pure logic; the
Locust side is in loadlib.locust.install."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from time import perf_counter

BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 10.0
WAKE_AFTER_S = 0.05  # a user backing off wakes this long after the window's end, so its attempt falls past it


def backoff_s(consecutive: int, due_in: float = math.inf) -> float:
    """How long a user waits after its `consecutive`-th fatal failure in a row: 0.5 s doubling to 10 s, but never
    past the fatal-stop window's end (`due_in`, FatalStop.due_in): its next attempt then lets the watch decide at the
    window's end. Without that cap a run of a few seconds whose every request fails (a wrong key) ended, its users
    all asleep in a backoff, before any attempt came after the window, and passed instead of stopping."""
    if consecutive <= 0:
        return 0.0
    return min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** (consecutive - 1), due_in + WAKE_AFTER_S)


class FatalStop:
    """Watches one node's attempts from the start of a run. The verdict comes with the first attempt at or after
    `window_s`: stop when every attempt so far failed fatally; once any attempt did not, it never stops."""

    def __init__(self, window_s: float, clock: Callable[[], float] = perf_counter) -> None:
        self.window_s = window_s
        self.clock = clock
        self.started: float | None = None
        self.attempts = 0
        self.causes: Counter[str] = Counter()
        self.decided = window_s <= 0
        self.client_fault_said = False

    def observe(self, cause: str | None) -> str | None:
        """Account one attempt (`cause` None: it did not fail fatally); the stop message once the run should stop."""
        if self.decided:
            return None
        now = self.clock()
        if self.started is None:
            self.started = now
        self.attempts += 1
        if cause is None:
            self.decided = True
            return None
        self.causes[cause] += 1
        elapsed = now - self.started
        if elapsed < self.window_s:
            return None
        self.decided = True
        worst = self.causes.most_common(1)[0][0]
        return (
            f"all {self.attempts} requests of the first {elapsed:.0f} s failed: {worst} (stopping; "
            "--llm-stop-on-fatal-s 0 keeps going)"
        )

    def due_in(self) -> float:
        """Seconds until the window ends while the watch may still stop the run; inf before the first attempt (the
        window starts with it) and once decided."""
        if self.decided or self.started is None:
            return math.inf
        return max(0.0, self.started + self.window_s - self.clock())

    def client_fault(self, message: str | None) -> str | None:
        """A failure of the load generator itself (loadlib.transport.open_files): the stop message the first time,
        whatever the window (its errors would count against the endpoint), then None."""
        if message is None or self.client_fault_said:
            return None
        self.client_fault_said = True
        return f"{message} (stopping: the errors that followed would be this machine's, not the endpoint's)"
