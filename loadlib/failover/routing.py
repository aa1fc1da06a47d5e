"""Which endpoint a user-visible request tries first, and which next (docs/failover.md, "A user-visible request").

Runs once per user-visible request: a single endpoint or the `priority` policy returns a cached list; `weighted`
draws one exponential key per endpoint and sorts (endpoint counts are small).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection, Sequence

POLICIES = ("priority", "weighted")


class Router:
    """The order in which one user-visible request tries the pool's endpoints; element 0 is its preferred one.

    - `priority`: ascending priority (1 first), ties in the given order; always the same list, no randomness.
    - `weighted`: a weighted random order without replacement. The first is endpoint i with probability
      w_i / sum(w); each next one is drawn by weight among the rest, so when an endpoint fails its traffic spreads
      over the others by weight rather than all landing on one neighbour. Drawn as an exponential race (key
      Exp(w_i), ascending), which gives exactly that distribution in one pass. A weight <= 0 is never preferred
      while a positive one exists (such endpoints come last, in the given order).

    The returned list is shared (cached) whenever it does not change: callers must not modify it.
    """

    def __init__(
        self,
        names: Sequence[str],
        policy: str,
        priorities: Sequence[int],
        weights: Sequence[float],
        rng: random.Random,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown routing policy {policy!r} (expected one of {', '.join(POLICIES)})")
        self.policy = policy
        self.names = list(names)
        self.rng = rng
        self._weights = [float(w) for w in weights]
        ranked = sorted(range(len(self.names)), key=lambda i: priorities[i])
        self._fixed = [self.names[i] for i in ranked] if policy == "priority" or len(self.names) == 1 else None

    def order(self) -> list[str]:
        """The order for the next user-visible request (see the class docstring)."""
        if self._fixed is not None:
            return self._fixed
        return self._weighted()

    def _weighted(self) -> list[str]:
        expo = self.rng.expovariate
        keys = [expo(w) if w > 0 else math.inf for w in self._weights]
        names = self.names
        return [names[i] for i in sorted(range(len(keys)), key=keys.__getitem__)]


def pick(order: Sequence[str], admit: Callable[[str], int | None], tried: Collection[str]) -> tuple[str, int] | None:
    """The endpoint the next attempt goes to, with its breaker's permit: the first in `order` not in `tried` whose
    breaker admits; failing that (every endpoint tried, or the untried ones refuse), the first tried one that admits
    (a retry to the same endpoint beats giving up); None when no breaker admits.

    Each breaker is asked at most once, and asking stops at the first permit: admitting may take a half-open probe
    slot, so a breaker asked must be the one the attempt goes to.
    """
    found = _first_admitting(order, admit, tried, False)
    if found is None and tried:
        found = _first_admitting(order, admit, tried, True)
    return found


def _first_admitting(
    order: Sequence[str], admit: Callable[[str], int | None], tried: Collection[str], was_tried: bool
) -> tuple[str, int] | None:
    """The first endpoint in `order` whose membership of `tried` is `was_tried` and whose breaker admits."""
    for name in order:
        if (name in tried) is was_tried:
            permit = admit(name)
            if permit is not None:
                return name, permit
    return None
