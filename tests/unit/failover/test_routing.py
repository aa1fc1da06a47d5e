"""Router orders (priority, weighted) and pick(): which endpoint an attempt goes to."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from loadlib.errors import ErrorClass
from loadlib.failover.breaker import BreakerConfig, CircuitBreaker, State
from loadlib.failover.routing import POLICIES, Router, pick

NAMES = ("a", "b", "c")


def within(count: int, n: int, p: float) -> bool:
    """`count` of `n` draws is within 5 binomial standard deviations of `p` (a seeded test, so no flakes either way)."""
    return abs(count - n * p) <= 5 * math.sqrt(n * p * (1 - p))


def test_priority_order_is_stable() -> None:
    rng = random.Random(1)
    state = rng.getstate()
    r = Router(["p2", "p1", "q2", "q1"], "priority", [2, 1, 2, 1], [1, 1, 1, 1], rng)
    assert r.order() == ["p1", "q1", "p2", "q2"]  # ascending priority, ties in the given order
    assert all(r.order() == ["p1", "q1", "p2", "q2"] for _ in range(100))
    assert rng.getstate() == state  # no randomness used


@pytest.mark.parametrize("policy", POLICIES)
def test_single_endpoint_is_a_cached_list(policy: str) -> None:
    rng = random.Random(1)
    state = rng.getstate()
    r = Router(["only"], policy, [1], [3.0], rng)
    first = r.order()
    assert first == ["only"] and r.order() is first
    assert rng.getstate() == state


def test_unknown_policy() -> None:
    with pytest.raises(ValueError, match="unknown routing policy 'fastest'"):
        Router(list(NAMES), "fastest", [1, 2, 3], [1, 1, 1], random.Random(0))


def test_weighted_first_follows_the_weights() -> None:
    weights = [5.0, 3.0, 2.0]
    r = Router(list(NAMES), "weighted", [1, 1, 1], weights, random.Random(2024))
    n = 30_000
    firsts = Counter(r.order()[0] for _ in range(n))
    total = sum(weights)
    for name, w in zip(NAMES, weights, strict=True):
        assert within(firsts[name], n, w / total), (name, firsts[name])


def test_weighted_rest_is_weighted_without_replacement() -> None:
    """Second place: P(j) = sum over i != j of w_i / W * w_j / (W - w_i); each order is a permutation."""
    weights = [5.0, 3.0, 2.0]
    total = sum(weights)
    r = Router(list(NAMES), "weighted", [1, 1, 1], weights, random.Random(77))
    n = 30_000
    orders = [r.order() for _ in range(n)]
    assert all(sorted(o) == sorted(NAMES) for o in orders)
    seconds = Counter(o[1] for o in orders)
    for j, wj in enumerate(weights):
        p = sum(wi / total * wj / (total - wi) for i, wi in enumerate(weights) if i != j)
        assert within(seconds[NAMES[j]], n, p), (NAMES[j], seconds[NAMES[j]], p)


def test_weighted_zero_weight_comes_last() -> None:
    r = Router(list(NAMES), "weighted", [1, 1, 1], [0.0, 1.0, 1.0], random.Random(5))
    assert all(r.order()[2] == "a" for _ in range(200))


def test_weighted_same_seed_same_orders() -> None:
    def orders(seed: int) -> list[list[str]]:
        r = Router(list(NAMES), "weighted", [1, 1, 1], [1.0, 2.0, 3.0], random.Random(seed))
        return [r.order() for _ in range(20)]

    assert orders(9) == orders(9)


# -- pick ----------------------------------------------------------------------------------------------------------


class Breakers:
    """admit() of fake breakers: a permit per open name, None for the refusing ones; remembers who was asked."""

    def __init__(self, refusing: set[str]) -> None:
        self.refusing = refusing
        self.asked: list[str] = []

    def admit(self, name: str) -> int | None:
        self.asked.append(name)
        return None if name in self.refusing else 7


def test_pick_first_admitting() -> None:
    b = Breakers(set())
    assert pick(["a", "b", "c"], b.admit, []) == ("a", 7)
    assert b.asked == ["a"]  # asking stops at the first permit


def test_pick_skips_refused() -> None:
    b = Breakers({"a", "b"})
    assert pick(["a", "b", "c"], b.admit, []) == ("c", 7)
    assert b.asked == ["a", "b", "c"]


def test_pick_skips_tried() -> None:
    b = Breakers(set())
    assert pick(["a", "b", "c"], b.admit, ["a"]) == ("b", 7)
    assert pick(["a", "b", "c"], b.admit, ("a", "b")) == ("c", 7)
    assert "a" not in b.asked


def test_pick_skips_tried_and_refused() -> None:
    b = Breakers({"b"})
    assert pick(["a", "b", "c"], b.admit, {"a"}) == ("c", 7)
    assert b.asked == ["b", "c"]


def test_pick_all_tried_goes_back_in_order() -> None:
    b = Breakers({"a"})
    assert pick(["a", "b", "c"], b.admit, ["c", "a", "b"]) == ("b", 7)
    assert b.asked == ["a", "b"]


def test_pick_untried_refuse_falls_back_to_a_tried_one() -> None:
    b = Breakers({"b", "c"})
    assert pick(["a", "b", "c"], b.admit, ["a"]) == ("a", 7)
    assert b.asked == ["b", "c", "a"]  # each breaker asked once


def test_pick_none_admits() -> None:
    b = Breakers({"a", "b", "c"})
    assert pick(["a", "b", "c"], b.admit, []) is None
    assert pick(["a", "b", "c"], b.admit, ["b"]) is None
    assert b.asked == ["a", "b", "c", "a", "c", "b"]
    assert pick([], b.admit, []) is None


def test_pick_with_real_breakers_takes_one_probe_slot() -> None:
    now = [0.0]
    cfg = BreakerConfig(failures=1, cooldown_s=1.0, probes=1)
    breakers = {n: CircuitBreaker(n, cfg, lambda: now[0]) for n in NAMES}
    for n in ("a", "b"):
        breakers[n].record(breakers[n].admit() or 0, ErrorClass.HTTP_5XX)
    now[0] = 1.0

    def admit(name: str) -> int | None:
        return breakers[name].admit()

    assert pick(list(NAMES), admit, []) == ("a", 2)  # a half-open: its one probe
    assert breakers["b"].state is State.HALF_OPEN  # b was not asked: its probe slot is still free
    assert pick(list(NAMES), admit, []) == ("b", 2)
    assert pick(list(NAMES), admit, []) == ("c", 0)


def adaptive(policy: str, **kw: object) -> Router:
    return Router(["a", "b", "c"], policy, [1, 2, 3], [1, 1, 1], random.Random(7), **kw)  # type: ignore[arg-type]


def test_latency_prefers_the_lowest_moving_average_ttft_and_still_explores() -> None:
    r = adaptive("latency")
    assert r.order()[0] == "a"  # nothing measured: all count as 0, priority order
    for name, ttft in (("a", 1.2), ("b", 0.15), ("c", 0.4)):
        r.started(name)
        r.ended(name, ttft, True)
    r.started("b")
    r.ended("b", None, False)  # a failure's time says nothing of its latency
    firsts = [r.order()[0] for _ in range(2000)]
    assert r.ewma["b"] == 0.15 and r.in_flight == {"a": 0, "b": 0, "c": 0}
    assert 0.07 < firsts.count("a") / 2000 < 0.13  # the exploring share, in priority order
    assert firsts.count("b") / 2000 > 0.85


def test_least_busy_prefers_the_endpoint_with_fewest_attempts_in_flight() -> None:
    r = adaptive("least_busy")
    for name in ("a", "a", "b"):
        r.started(name)
    assert r.order() == ["c", "b", "a"]
    r.ended("a", 0.1, True)
    r.ended("a", 0.1, True)
    assert r.order() == ["a", "c", "b"]  # ties keep priority order


def test_cost_takes_the_cheapest_endpoint_within_the_ttft_bound() -> None:
    r = adaptive("cost", prices=[10.0, 1.0, 3.0], ttft_p95_max_s=0.5)
    for ttft in (0.1, 0.9, 0.9):  # b, the cheapest, gets slow: p95 0.9 s
        r.started("b")
        r.ended("b", ttft, True)
    r.rng = random.Random(1)
    orders = [r.order() for _ in range(200)]
    assert sum(o == ["c", "a", "b"] for o in orders) > 170  # c within the bound and cheaper than a; b last


def test_a_cancelled_loser_s_wait_is_a_lower_bound_of_its_ttft() -> None:
    """A hedge outran it before its first output: its TTFT is at least its wait, which counts when it says more than
    the average does (else a slow endpoint that always loses its races would never look slow)."""
    r = adaptive("latency")
    r.started("a")
    r.ended("a", 0.1, True)
    r.started("a")
    r.ended("a", None, False, waited_s=0.4)
    assert r.ewma["a"] == pytest.approx(0.25) and list(r.recent["a"]) == [0.1, 0.4]
    r.started("a")
    r.ended("a", None, False, waited_s=0.05)  # cancelled early: says nothing the average does not
    assert r.ewma["a"] == pytest.approx(0.25) and r.in_flight["a"] == 0
