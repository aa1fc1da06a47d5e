"""Bracket, then bisect: the largest load (users) that holds the SLOs, to a stated relative precision.

Bracketing multiplies the load by `growth` from `start` until a step fails (or `maximum` is reached); bisection then
halves the gap between the largest load that held and the smallest that failed until it is within `precision` of
the one that held (and at least one user). Pure: the caller runs each step and reports whether it held."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass
class Search:
    """The search's state: `held` the largest load that held, `failed` the smallest that failed (None: none yet)."""

    start: int = 1
    maximum: int = 1000
    precision: float = 0.05
    growth: float = 2.0
    held: int = 0
    failed: int | None = None
    tried: list[int] = field(default_factory=list)

    def first(self) -> int:
        return max(1, min(self.start, self.maximum))

    def record(self, load: int, passed: bool) -> None:
        """The step at `load` held its SLOs (`passed`) or not."""
        self.tried.append(load)
        if passed:
            self.held = max(self.held, load)
        elif self.failed is None or load < self.failed:
            self.failed = load

    def next(self) -> int | None:
        """The next load to try, None when the search is done (precise enough, or the maximum held)."""
        if self.failed is None:
            if self.held >= self.maximum:
                return None
            return min(self.maximum, max(self.held + 1, math.ceil(self.held * self.growth)))
        if self.failed - self.held <= self.gap():
            return None
        return (self.held + self.failed) // 2

    def gap(self) -> int:
        """The widest gap between held and failed that counts as found: `precision` of the load that held, at least
        one user."""
        return max(1, math.floor(self.held * self.precision))

    @property
    def max_reached(self) -> bool:
        return self.failed is None and self.held >= self.maximum


def bound_steps(start: int, maximum: int, precision: float, growth: float = 2.0) -> int:
    """The most steps a search can take: the bracket (start, start × growth, ... up to the maximum) and the bisection
    of the last gap (start × growth^k / growth wide) down to `precision` of its lower end, plus one."""
    start = max(1, min(start, maximum))
    bracket = 1 + max(0, math.ceil(math.log(maximum / start, growth)))
    widest = max(1.0, maximum - maximum / growth)
    lowest = max(1.0, maximum / growth * precision)
    return bracket + max(0, math.ceil(math.log2(widest / lowest))) + 1
