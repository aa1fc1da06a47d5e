"""The latency–cost Pareto front on hand-built points: ties, dominated points, one endpoint, all dominated but one."""

from __future__ import annotations

from loadlib.reports.pareto import dominated_by, dominates, pareto_front


def test_a_point_dominates_when_no_worse_on_both_and_better_on_one() -> None:
    assert dominates((1.0, 100.0), (2.0, 200.0))
    assert dominates((1.0, 100.0), (1.0, 200.0))  # equal cost, faster
    assert dominates((1.0, 100.0), (2.0, 100.0))  # equal latency, cheaper
    assert not dominates((1.0, 100.0), (1.0, 100.0))  # a tie dominates nothing
    assert not dominates((1.0, 300.0), (2.0, 100.0))  # a trade-off: neither dominates
    assert not dominates((2.0, 100.0), (1.0, 300.0))


def test_ties_are_both_on_the_front() -> None:
    points = {"a": (1.0, 100.0), "b": (1.0, 100.0), "c": (2.0, 200.0)}
    assert pareto_front(points) == ["a", "b"]
    assert dominated_by(points, "c") == ["a", "b"]
    assert dominated_by(points, "a") == []


def test_dominated_points_leave_the_front_and_trade_offs_stay() -> None:
    points = {
        "fast": (3.0, 100.0),
        "middle": (1.0, 250.0),
        "slow": (0.5, 600.0),
        "worse": (2.0, 700.0),  # dearer and slower than middle and slow
        "pricier_twin": (3.5, 100.0),  # as fast as fast, dearer
    }
    assert pareto_front(points) == ["fast", "middle", "slow"]
    assert dominated_by(points, "worse") == ["middle", "slow"]
    assert dominated_by(points, "pricier_twin") == ["fast"]


def test_a_single_endpoint_is_the_front() -> None:
    assert pareto_front({"only": (0.001, 380.0)}) == ["only"]
    assert pareto_front({}) == []


def test_all_dominated_but_one() -> None:
    points = {"best": (1.0, 100.0), "b": (1.0, 101.0), "c": (1.5, 100.0), "d": (9.0, 900.0)}
    assert pareto_front(points) == ["best"]
    assert all(dominated_by(points, n) == ["best"] for n in ("b", "c"))
    assert dominated_by(points, "d") == ["best", "b", "c"]
