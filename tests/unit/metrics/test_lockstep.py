"""The lockstep self-check's maths (loadlib.metrics.lockstep): gaps and clusters counted as starts go out, shipped in
pieces without losing a gap or splitting a cluster, the Poisson expectation, and the rule on synthetic start times:
users in lockstep, independent users, and independent users with no think time against a server that answers in
steps (its starts bunch into step ends without lockstep)."""

from __future__ import annotations

import math
import random

import pytest

from loadlib.metrics.lockstep import (
    CLUSTER_MIN,
    GAP_NS,
    MIN_GAPS,
    GapCounts,
    StartGaps,
    expected_share,
    judge,
    lockstep_line,
)

MS = 1_000_000


def counted(starts_ns: list[int], now_ns: int | None = None) -> GapCounts:
    gaps = StartGaps()
    for t in starts_ns:
        gaps.add(t)
    return gaps.take(now_ns if now_ns is not None else starts_ns[-1] + GAP_NS)


def lockstep_starts(users: int, rounds: int, cycle_ms: float) -> list[int]:
    """Every user starts within 0.1 ms of the others, round after round."""
    return [int((r * cycle_ms + u * 0.1) * MS) for r in range(rounds) for u in range(users)]


def poisson_starts(rate_per_s: float, n: int, seed: int = 1) -> list[int]:
    rng, t, out = random.Random(seed), 0.0, []
    for _ in range(n):
        t += rng.expovariate(rate_per_s)
        out.append(int(t * 1e9))
    return out


def stepped_starts(users: int, steps: int, step_ms: float, seed: int = 1) -> list[int]:
    """Independent users with no think time against a server stepping every `step_ms`: each user's next request goes
    as its answer ends, at the end of a step, a user's phase being its step modulo the cycle (steps + 2); users
    that share a step end come back within a fraction of a millisecond (the client reads one after the other)."""
    rng, cycle = random.Random(seed), steps + 2
    slots = [rng.randrange(cycle) for _ in range(users)]
    out = []
    for rnd in range(6):
        for slot in sorted(slots):
            out.append(int(((rnd * cycle + slot) * step_ms + rng.uniform(0.0, 0.5)) * MS))
    return sorted(out)


def test_gaps_and_clusters_are_counted_as_starts_go_out() -> None:
    c = counted([0, 1 * MS, int(1.5 * MS), 10 * MS, 30 * MS, int(30.2 * MS)])
    assert (c.gaps, c.small, c.span_ns) == (5, 3, int(30.2 * MS))
    assert (c.clusters, c.sizes, c.sizes_sq, c.largest) == (3, 6, 9 + 1 + 4, 3), "clusters of 3, 1 and 2"


def test_a_take_keeps_the_cluster_under_way_open_and_loses_no_gap() -> None:
    starts = [0, MS, 20 * MS, int(20.5 * MS), 21 * MS, 40 * MS]
    gaps = StartGaps()
    for t in starts[:4]:
        gaps.add(t)
    first = gaps.take(int(20.6 * MS))  # the cluster at 20 ms could still grow: it stays open
    for t in starts[4:]:
        gaps.add(t)
    second = gaps.take(60 * MS)
    first.merge(second)
    whole = counted(starts, 60 * MS)
    assert first == whole
    assert whole.largest == 3


def test_a_clock_stepping_back_is_no_gap() -> None:
    c = counted([10 * MS, 5 * MS, 6 * MS])
    assert (c.gaps, c.small) == (1, 1)


def test_counts_travel_as_dicts() -> None:
    c = counted(lockstep_starts(4, 3, 100.0))
    assert GapCounts.from_dict(c.to_dict()) == c


@pytest.mark.parametrize("rate", [10.0, 100.0, 500.0])
def test_the_expectation_is_a_poisson_stream_s(rate: float) -> None:
    c = counted(poisson_starts(rate, 20_000))
    assert c.small / c.gaps == pytest.approx(expected_share(rate), abs=0.01)
    assert c.rate_per_s == pytest.approx(rate, rel=0.03)
    assert expected_share(rate) == pytest.approx(1.0 - math.exp(-rate * 0.002))


def test_users_in_lockstep_cluster() -> None:
    figures = judge({"w1": counted(lockstep_starts(32, 6, 1500.0))})
    assert figures is not None and figures.clustered
    assert figures.share == pytest.approx(31 / 32, abs=0.01) and figures.largest_cluster == 32
    assert figures.request_cluster == pytest.approx(32.0)
    assert figures.expected < 0.1


def test_independent_users_do_not() -> None:
    figures = judge({"w1": counted(poisson_starts(40.0, 2000))})
    assert figures is not None and not figures.clustered
    assert figures.share == pytest.approx(figures.expected, abs=0.02)


def test_a_step_server_bunching_zero_think_users_is_not_lockstep() -> None:
    """64 users with 64-token answers: about one answer ends per step, so a third of the gaps are under 2 ms, far
    over the Poisson share, yet a request's cluster holds one or two: not the users' doing."""
    figures = judge({"w1": counted(stepped_starts(64, 64, 27.0))})
    assert figures is not None and not figures.clustered
    assert figures.share > 3 * figures.expected and figures.request_cluster < CLUSTER_MIN


def test_too_few_gaps_are_not_judged() -> None:
    figures = judge({"w1": counted(lockstep_starts(8, 4, 1000.0))})
    assert figures is not None and figures.gaps < MIN_GAPS and not figures.clustered


def test_each_node_is_compared_with_its_own_rate() -> None:
    """Two nodes whose clocks differ: each node's gaps are its own; the expectation is weighted by their gaps."""
    slow, fast = counted(poisson_starts(5.0, 400)), counted(poisson_starts(200.0, 1600, seed=2))
    figures = judge({"a": slow, "b": fast})
    assert figures is not None and figures.gaps == slow.gaps + fast.gaps
    weighted = (slow.gaps * expected_share(slow.rate_per_s) + fast.gaps * expected_share(fast.rate_per_s)) / (
        slow.gaps + fast.gaps
    )
    assert figures.expected == pytest.approx(weighted)
    assert judge({}) is None


def test_the_line_fits_the_advice_to_the_phase() -> None:
    figures = judge({"w1": counted(lockstep_starts(32, 6, 1500.0))})
    assert figures is not None
    off = lockstep_line(figures.to_dict(), phase_on=False)
    on = lockstep_line(figures.to_dict(), phase_on=True)
    assert off is not None and "97% of the gaps between request starts are under 2 ms" in off
    assert "clusters of up to 32 requests" in off and "--llm-user-phase auto" in off
    assert on is not None and "--llm-think-time" in on and "--llm-user-phase" not in on
    quiet = judge({"w1": counted(poisson_starts(40.0, 2000))})
    assert quiet is not None and lockstep_line(quiet.to_dict(), phase_on=False) is None
    assert lockstep_line(None, phase_on=False) is None
