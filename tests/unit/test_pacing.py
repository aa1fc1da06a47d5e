"""Open-loop arrival schedule (rates, Poisson statistics, late slots, worker shares; fake clock, no sleeping) and
the user counts of the load shapes."""

from __future__ import annotations

import itertools
import random
import statistics

import pytest

from loadlib.pacing import ArrivalSchedule, interarrival_ms, ramp_users, step_users, wait_for_slot, worker_rate


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0  # seconds, like perf_counter

    def __call__(self) -> float:
        return self.t


def test_constant_slots_are_evenly_spaced_from_the_first_take() -> None:
    clock = FakeClock()
    s = ArrivalSchedule(20, "constant", clock=clock)
    slots = [s.take() for _ in range(5)]
    assert slots[0] == pytest.approx(100_000.0)
    assert [b - a for a, b in itertools.pairwise(slots)] == pytest.approx([50.0] * 4)
    assert s.issued == 5


def test_poisson_gaps_have_the_right_mean_and_spread() -> None:
    rng = random.Random(3)
    gaps = [interarrival_ms("poisson", 10.0, rng) for _ in range(20_000)]
    assert statistics.fmean(gaps) == pytest.approx(100.0, rel=0.03)
    assert statistics.pstdev(gaps) == pytest.approx(100.0, rel=0.05), "exponential: sd equals the mean"
    assert min(gaps) >= 0


def test_same_seed_same_schedule() -> None:
    a = ArrivalSchedule(5, "poisson", seed=9, clock=FakeClock())
    b = ArrivalSchedule(5, "poisson", seed=9, clock=FakeClock())
    assert [a.take() for _ in range(50)] == [b.take() for _ in range(50)]


def test_wait_sleeps_until_the_slot_and_not_when_late() -> None:
    clock = FakeClock()
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        clock.t += s

    s = ArrivalSchedule(4, "constant", clock=clock)
    first = wait_for_slot(s, sleep)
    second = wait_for_slot(s, sleep)
    assert slept == pytest.approx([0.25]) and second - first == pytest.approx(250.0)
    clock.t += 2.0  # every user was busy for 2 s: slots are due already
    late = wait_for_slot(s, sleep)
    assert len(slept) == 1, "a late slot is sent at once"
    assert clock.t * 1000 - late == pytest.approx(1750.0), "its schedule lag is how late it is"
    assert s.backlog() == 7, "the slots that fell due meanwhile wait for a free user"


def test_worker_share_and_validation() -> None:
    assert worker_rate(30, 3) == 10
    assert worker_rate(30, None) == worker_rate(30, 1) == 30
    with pytest.raises(ValueError, match="> 0"):
        ArrivalSchedule(0)
    with pytest.raises(ValueError, match="poisson, constant"):
        ArrivalSchedule(1, "bursty")


def test_ramp_and_step_user_counts() -> None:
    assert [ramp_users(t, 100, 10) for t in (0, 1, 5, 10, 30)] == [1, 10, 50, 100, 100]
    assert ramp_users(15, 40, 30) == 20
    assert [step_users(t, 100, 4, 10) for t in (0, 9.9, 10, 25, 39, 100)] == [25, 25, 50, 75, 100, 100]
    assert step_users(5, 3, 10, 1) == 2, "more steps than users still climbs"


def test_a_new_rate_voids_the_slots_taken_and_starts_now() -> None:
    """The capacity search's rate steps: a user asleep on a slot of the old rate wakes (its sleep is cut short when
    the rate changes) and takes a slot of the new schedule, which starts at once with no backlog."""
    clock = FakeClock()
    s = ArrivalSchedule(1, "constant", clock=clock)
    start = s.take()  # the first slot: now
    woken: list[float] = []

    def sleep(seconds: float) -> None:  # asleep until the next slot, 1 s away; the rate changes after 0.1 s
        woken.append(seconds)
        clock.t += 0.1
        if len(woken) == 1:
            s.set_rate(10)

    slot = wait_for_slot(s, sleep)
    assert woken[0] == pytest.approx(1.0)
    assert slot - start == pytest.approx(100.0), "the new schedule's first slot is when the rate changed"
    assert s.take() - slot == pytest.approx(100.0), "then every 100 ms"
    with pytest.raises(ValueError, match="> 0"):
        s.set_rate(0)
