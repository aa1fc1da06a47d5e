"""Bracket, then bisect: the largest load (users, or an arrival rate) that holds the SLOs, to a stated relative
precision.

Bracketing multiplies the load by `growth` from `start` until a step fails (or `maximum` is reached); bisection then
halves the gap between the largest load that held and the smallest that failed until it is within `precision` of
the one that held. Users are whole (the gap is at least one user); a rate is not, so its gap is at least `precision`
of the first step's rate, which also ends a search whose every step fails. Pure: the caller runs each step and
reports whether it held."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

USERS, RATE = "users", "rate"
CONTROLS = (USERS, RATE)


@dataclass
class Search:
    """The search's state: `held` the largest load that held, `failed` the smallest that failed (None: none yet).
    `control` says what a load is: a user count (whole) or an arrival rate in requests/s."""

    start: float = 1
    maximum: float = 1000
    precision: float = 0.05
    growth: float = 2.0
    control: str = USERS
    held: float = 0
    failed: float | None = None
    tried: list[float] = field(default_factory=list)

    def first(self) -> float:
        if self.control == USERS:
            return max(1, min(math.ceil(self.start), int(self.maximum)))
        return min(self.start, self.maximum)

    def record(self, load: float, passed: bool) -> None:
        """The step at `load` held its SLOs (`passed`) or not."""
        self.tried.append(load)
        if passed:
            self.held = max(self.held, load)
        elif self.failed is None or load < self.failed:
            self.failed = load

    def next(self) -> float | None:
        """The next load to try, None when the search is done (precise enough, or the maximum held)."""
        if self.failed is None:
            if self.held >= self.maximum:
                return None
            grown = self.held * self.growth
            return min(self.maximum, max(self.held + 1, math.ceil(grown)) if self.control == USERS else grown)
        if self.failed - self.held <= self.gap():
            return None
        middle = (self.held + self.failed) / 2
        return math.floor(middle) if self.control == USERS else _rounded(middle)

    def gap(self) -> float:
        """The widest gap between held and failed that counts as found: `precision` of the load that held, at least
        one user, or `precision` of the first rate."""
        if self.control == USERS:
            return max(1, math.floor(self.held * self.precision))
        return max(self.held, self.first()) * self.precision

    @property
    def max_reached(self) -> bool:
        return self.failed is None and self.held >= self.maximum


def _rounded(rate: float) -> float:
    """A rate as a step shows it: four significant figures are far finer than any step can tell apart."""
    return float(f"{rate:.4g}")


def bound_steps(start: float, maximum: float, precision: float, growth: float = 2.0) -> int:
    """The most steps a search can take: the bracket (start, start × growth, ... up to the maximum) and the bisection
    of the last gap (start × growth^k / growth wide) down to `precision` of its lower end, plus one."""
    start = max(1, min(start, maximum))
    bracket = 1 + max(0, math.ceil(math.log(maximum / start, growth)))
    widest = max(1.0, maximum - maximum / growth)
    lowest = max(1.0, maximum / growth * precision)
    return bracket + max(0, math.ceil(math.log2(widest / lowest))) + 1
