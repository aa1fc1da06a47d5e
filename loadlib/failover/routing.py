"""Which endpoint a user-visible request tries first, and which next (docs/failover.md, "A user-visible request").

Runs once per user-visible request: a single endpoint or the `priority` policy returns a cached list; `weighted`
draws one exponential key per endpoint and sorts (endpoint counts are small).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Callable, Collection, Sequence

POLICIES = ("priority", "weighted", "latency", "least_busy", "cost")
ADAPTIVE = frozenset({"latency", "least_busy", "cost"})  # policies that learn from the attempts (Router.started/ended)
EWMA_ALPHA = 0.5  # weight of the newest TTFT in the latency policy's moving average
EXPLORE = 0.1  # share of requests the latency and cost policies send in priority order, to keep measuring everyone
RECENT_TTFTS = 50  # TTFTs per endpoint behind the cost policy's p95


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
        prices: Sequence[float] | None = None,
        ttft_p95_max_s: float | None = None,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown routing policy {policy!r} (expected one of {', '.join(POLICIES)})")
        self.policy = policy
        self.names = list(names)
        self.rng = rng
        self._weights = [float(w) for w in weights]
        ranked = sorted(range(len(self.names)), key=lambda i: priorities[i])
        self._ranked = [self.names[i] for i in ranked]
        self._fixed = self._ranked if policy == "priority" or len(self.names) == 1 else None
        self.prices = dict(zip(self.names, prices or [math.inf] * len(self.names), strict=True))
        self.ttft_p95_max_s = ttft_p95_max_s
        self.ewma: dict[str, float | None] = dict.fromkeys(self.names)
        self.in_flight = dict.fromkeys(self.names, 0)
        self.recent: dict[str, deque[float]] = {n: deque(maxlen=RECENT_TTFTS) for n in self.names}

    def order(self) -> list[str]:
        """The order for the next user-visible request (see the class docstring)."""
        if self._fixed is not None:
            return self._fixed
        if self.policy == "weighted":
            return self._weighted()
        if self.policy == "least_busy":
            return sorted(self._ranked, key=self.in_flight.__getitem__)  # stable: ties keep priority order
        if self.rng.random() < EXPLORE:
            return self._ranked
        return self._by_latency() if self.policy == "latency" else self._by_cost()

    def _by_latency(self) -> list[str]:
        """Lowest moving-average TTFT first; an endpoint not measured yet counts as 0 (it is tried)."""
        return sorted(self._ranked, key=lambda n: self.ewma[n] or 0.0)

    def _by_cost(self) -> list[str]:
        """The cheapest endpoint whose recent TTFT p95 meets the bound first (one without TTFTs yet meets it), then
        the others by p95."""
        p95 = {n: _p95(self.recent[n]) for n in self._ranked}
        bound = self.ttft_p95_max_s

        def key(n: str) -> tuple[int, float]:
            fits = bound is None or p95[n] <= bound
            return (0, self.prices[n]) if fits else (1, p95[n])

        return sorted(self._ranked, key=key)

    def started(self, name: str) -> None:
        """An attempt to `name` was sent (adaptive policies only)."""
        self.in_flight[name] += 1

    def ended(self, name: str, ttft_s: float | None, ok: bool, waited_s: float | None = None) -> None:
        """An attempt to `name` ended; an answer's TTFT feeds the averages (a failure's time says nothing of it).

        `waited_s`: a hedge's loser, cancelled before its first output, waited that long for it, so its TTFT is at
        least that. When that is more than the endpoint's average it counts as a TTFT: else a slow endpoint whose
        attempts a hedge always outruns would never show its slowness and keep its place."""
        self.in_flight[name] -= 1
        if not ok and waited_s is not None and waited_s > (self.ewma[name] or 0.0):
            ttft_s, ok = waited_s, True
        if not ok or ttft_s is None:
            return
        old = self.ewma[name]
        self.ewma[name] = ttft_s if old is None else old + EWMA_ALPHA * (ttft_s - old)
        self.recent[name].append(ttft_s)

    def _weighted(self) -> list[str]:
        expo = self.rng.expovariate
        keys = [expo(w) if w > 0 else math.inf for w in self._weights]
        names = self.names
        return [names[i] for i in sorted(range(len(keys)), key=keys.__getitem__)]


def _p95(values: Collection[float]) -> float:
    """Nearest-rank p95; 0 without values."""
    if not values:
        return 0.0
    ranked = sorted(values)
    return ranked[max(0, math.ceil(0.95 * len(ranked)) - 1)]


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
