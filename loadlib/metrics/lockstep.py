"""Do the closed-loop users move in lockstep? A self-check on the gaps between consecutive request starts.

Why (docs/metrics.md, "Users in lockstep"): users that start together stay together against a server that batches:
it prefills the whole cluster in one step and ends their answers in one step, so they come back together. Each
request's TTFT then carries the prefill of all the others: it measures how the load generator started its users,
not the server. People do not arrive in lockstep.

How it is judged, per node (a node's starts are stamped on its own clock; another node's clock is not comparable to
2 ms): consecutive starts less than `GAP_MS` apart form a cluster. N independent users at a total rate of λ requests/s
are a Poisson stream (the sum of many independent streams), whose gaps are under `GAP_MS` with probability
1 - exp(-λ · GAP_MS). The run's starts cluster when, over at least `MIN_GAPS` gaps:
- the share of gaps under `GAP_MS` is over max(`SHARE_FACTOR` × that expectation, expectation + `SHARE_MARGIN`), and
- a request's cluster holds `CLUSTER_MIN` requests or more on average (the cluster a request started in, averaged
  over requests: Σ size² / Σ size). A server that answers in steps ends several answers in one step, and
  independent users with no think time come back together then: clusters of one or two, a few at most, which can
  lift the gap share alone above the Poisson figure; users in lockstep make clusters of a large share of all users.
Memory is a handful of counters per node, whatever the run's length.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

GAP_MS = 2.0
GAP_NS = int(GAP_MS * 1e6)
MIN_GAPS = 100
SHARE_FACTOR = 3.0
SHARE_MARGIN = 0.2
CLUSTER_MIN = 4.0


def expected_share(rate_per_s: float, gap_ms: float = GAP_MS) -> float:
    """The share of a Poisson stream's gaps under `gap_ms` at `rate_per_s`: what independent users would give."""
    return 1.0 - math.exp(-max(rate_per_s, 0.0) * gap_ms / 1000.0)


@dataclass(slots=True)
class GapCounts:
    """One node's start gaps: how many, how many under GAP_MS, their total length (for the rate), and its closed
    clusters: how many, Σ size, Σ size² and the largest."""

    gaps: int = 0
    small: int = 0
    span_ns: int = 0
    clusters: int = 0
    sizes: int = 0
    sizes_sq: int = 0
    largest: int = 0

    def close(self, size: int) -> None:
        self.clusters += 1
        self.sizes += size
        self.sizes_sq += size * size
        self.largest = max(self.largest, size)

    def merge(self, other: GapCounts) -> None:
        self.gaps += other.gaps
        self.small += other.small
        self.span_ns += other.span_ns
        self.clusters += other.clusters
        self.sizes += other.sizes
        self.sizes_sq += other.sizes_sq
        self.largest = max(self.largest, other.largest)

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> GapCounts:
        return cls(**{f.name: int(d.get(f.name) or 0) for f in fields(cls)})

    @property
    def rate_per_s(self) -> float:
        """Starts per second over the node's gaps (infinite when they all fell in one nanosecond)."""
        return self.gaps * 1e9 / self.span_ns if self.span_ns > 0 else math.inf


class StartGaps:
    """One node's request starts, taken in the order they go out (one event loop: wall-clock nanoseconds that never
    go back, barring a clock step, whose negative gap is skipped). `take(now_ns)` hands over what was counted since
    the last take; the cluster under way stays open until no start can join it."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.counts = GapCounts()
        self.last_ns: int | None = None
        self.run = 0  # the size of the cluster under way

    def add(self, start_ns: int) -> None:
        last, self.last_ns = self.last_ns, start_ns
        if last is None or start_ns < last:
            self._end_cluster()
            return
        gap = start_ns - last
        self.counts.gaps += 1
        self.counts.span_ns += gap
        if gap < GAP_NS:
            self.counts.small += 1
            self.run += 1
        else:
            self._end_cluster()

    def take(self, now_ns: int) -> GapCounts:
        """The counts since the last take (then zero); the cluster under way is closed first when it can no longer
        grow (no start within GAP_MS of its last one by `now_ns`)."""
        if self.run and self.last_ns is not None and now_ns - self.last_ns >= GAP_NS:
            self.counts.close(self.run)
            self.run = 0
        counts, self.counts = self.counts, GapCounts()
        return counts

    def _end_cluster(self) -> None:
        """The start just taken begins a new cluster: the one before it is closed."""
        if self.run:
            self.counts.close(self.run)
        self.run = 1


@dataclass(frozen=True, slots=True)
class Lockstep:
    """The figures over every node: the share of start gaps under GAP_MS, what independent users at each node's rate
    would give (averaged over the nodes' gaps), the largest cluster and the cluster a request started in (mean);
    `clustered`: the rule of the module's docstring holds."""

    gaps: int
    share: float
    expected: float
    largest_cluster: int
    request_cluster: float
    clustered: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "gap_ms": GAP_MS,
            "gaps": self.gaps,
            "share_under_gap": round(self.share, 4),
            "expected_share": round(self.expected, 4),
            "largest_cluster": self.largest_cluster,
            "request_cluster": round(self.request_cluster, 2),
            "clustered": self.clustered,
        }


def judge(nodes: Mapping[str, GapCounts]) -> Lockstep | None:
    """The figures and the rule over each node's counts; None without a single gap."""
    gaps = sum(c.gaps for c in nodes.values())
    if not gaps:
        return None
    share = sum(c.small for c in nodes.values()) / gaps
    expected = sum(c.gaps * expected_share(c.rate_per_s) for c in nodes.values()) / gaps
    sizes = sum(c.sizes for c in nodes.values())
    request_cluster = sum(c.sizes_sq for c in nodes.values()) / sizes if sizes else 1.0
    largest = max(c.largest for c in nodes.values())
    clustered = clusters_too_much(gaps, share, expected, request_cluster)
    return Lockstep(gaps, share, expected, largest, request_cluster, clustered)


def clusters_too_much(gaps: int, share: float, expected: float, request_cluster: float) -> bool:
    """The rule: enough gaps, a gap share far beyond independent users', and clusters of several requests."""
    beyond = share > max(SHARE_FACTOR * expected, expected + SHARE_MARGIN)
    return gaps >= MIN_GAPS and beyond and request_cluster >= CLUSTER_MIN


def lockstep_line(figures: Mapping[str, Any] | None, phase_on: bool) -> str | None:
    """The console line of a run whose starts cluster (None otherwise), with the advice that fits: independent
    phases when they were off, a think time when users already had them (a step server regroups zero-think users)."""
    if not figures or not figures.get("clustered"):
        return None
    head = (
        f"Request starts cluster (users in lockstep): {figures['share_under_gap']:.0%} of the gaps between request "
        f"starts are under {figures['gap_ms']:g} ms (independent users at this rate: {figures['expected_share']:.0%}), "
        f"in clusters of up to {figures['largest_cluster']} requests; a batching server prefills each cluster at "
        "once, so TTFT measures how the users started, not the server: "
    )
    if not phase_on:
        return head + "let each user start at its own phase (--llm-user-phase auto, the default)"
    return head + (
        "the users had their own phases, so they came back together after answers that ended in the same step; "
        "give them a think time (--llm-think-time exp:1)"
    )
