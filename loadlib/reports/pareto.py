"""The latency–cost Pareto front: the endpoints no other endpoint beats on both cost and latency at once.

Pure functions over (cost, latency) pairs, both minimised. A point is dominated when another is no worse on both
figures and strictly better on at least one; the front is every point that is not dominated. Two points equal on both
figures do not dominate each other, so ties stay on the front together: the front says "nothing is strictly better",
not "this one is best"."""

from __future__ import annotations

from collections.abc import Mapping

Point = tuple[float, float]  # (cost, latency), both lower-is-better


def dominates(a: Point, b: Point) -> bool:
    """`a` is at least as good as `b` on both figures and strictly better on one."""
    return a[0] <= b[0] and a[1] <= b[1] and (a[0] < b[0] or a[1] < b[1])


def pareto_front(points: Mapping[str, Point]) -> list[str]:
    """The names of the non-dominated points, in the mapping's order."""
    return [name for name, p in points.items() if not any(dominates(q, p) for q in points.values())]


def dominated_by(points: Mapping[str, Point], name: str) -> list[str]:
    """Who dominates `name` (empty when it is on the front): the reason an endpoint is off the front."""
    p = points[name]
    return [other for other, q in points.items() if other != name and dominates(q, p)]
