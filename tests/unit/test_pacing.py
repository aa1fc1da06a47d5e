"""Open-loop arrival schedule (rates, Poisson statistics, late slots, worker shares; fake clock, no sleeping) and
the user counts of the load shapes."""

from __future__ import annotations

import itertools
import random
import statistics

import pytest

from loadlib.pacing import (
    PHASE_MIN_S,
    ArrivalSchedule,
    Phase,
    ThinkTime,
    interarrival_ms,
    mean_wait_s,
    parse_phase,
    parse_think,
    ramp_users,
    step_users,
    wait_for_slot,
    worker_rate,
)


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


def test_a_held_schedule_sends_nothing_until_the_next_rate() -> None:
    """The capacity search's drain: users asleep on a slot of the old rate wake and sleep again, a minute at a time,
    without sending (its backlog is void), until a rate is set; then the new schedule starts at once."""
    clock = FakeClock()
    s = ArrivalSchedule(10, "constant", clock=clock)
    s.take()
    clock.t += 5.0  # every user busy: 50 slots due
    s.hold()
    assert s.backlog() == 0, "a held schedule has no backlog"
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.t += seconds if len(slept) < 3 else 0.5
        if len(slept) == 3:
            s.set_rate(4)

    slot = wait_for_slot(s, sleep)
    assert slept[:2] == pytest.approx([60.0, 60.0]), "a held slot is a sleep, taken again when it ends"
    assert slot == pytest.approx(clock.t * 1000.0), "the new rate's first slot is now"
    assert s.take() - slot == pytest.approx(250.0) and s.issued == 3, "held slots are not issued"


# closed-loop users: phase and think time


@pytest.mark.parametrize(
    ("text", "window"),
    [("auto", None), ("", None), ("off", 0.0), ("0", 0.0), ("2", 2.0), ("2s", 2.0), ("500ms", 0.5), ("1m", 60.0)],
)
def test_phase_options_read(text: str, window: float | None) -> None:
    assert parse_phase(text) == Phase(window)


@pytest.mark.parametrize("text", ["-1", "soon", "2h", "1-3"])
def test_a_bad_phase_is_one_line(text: str) -> None:
    with pytest.raises(ValueError, match=r"^--llm-user-phase .*: expected auto, off \(or 0\)"):
        parse_phase(text)


def test_the_auto_window_is_the_larger_of_a_second_and_the_mean_think_time() -> None:
    assert Phase().window(None) == PHASE_MIN_S == 1.0
    assert Phase().window(0.2) == 1.0 and Phase().window(4.0) == 4.0
    assert Phase(0.0).window(4.0) == 0.0 and Phase(2.5).window(9.0) == 2.5


@pytest.mark.parametrize(
    ("text", "think"),
    [
        ("", None),
        ("exp:2", ThinkTime("exp", 2.0, 2.0)),
        ("exp:500ms", ThinkTime("exp", 0.5, 0.5)),
        ("2s", ThinkTime("constant", 2.0, 2.0)),
        ("0", ThinkTime("constant", 0.0, 0.0)),
        ("1-3", ThinkTime("uniform", 1.0, 3.0)),
    ],
)
def test_think_time_options_read(text: str, think: ThinkTime | None) -> None:
    assert parse_think(text) == think


@pytest.mark.parametrize("text", ["exp:", "exp:1-3", "3-1", "1-", "poisson:2", "x"])
def test_a_bad_think_time_is_one_line(text: str) -> None:
    with pytest.raises(ValueError, match=r"^--llm-think-time .*: expected empty"):
        parse_think(text)


@pytest.mark.parametrize("think", [ThinkTime("exp", 2.0, 2.0), ThinkTime("uniform", 1.0, 3.0)])
def test_think_times_have_their_mean(think: ThinkTime) -> None:
    rng = random.Random(3)
    draws = [think.draw(rng) for _ in range(20_000)]
    assert statistics.fmean(draws) == pytest.approx(think.mean_s, rel=0.03)
    assert min(draws) >= think.low if think.kind == "uniform" else min(draws) >= 0.0
    assert ThinkTime("constant", 2.0, 2.0).draw(rng) == 2.0 and ThinkTime("exp", 0.0, 0.0).draw(rng) == 0.0


def test_the_mean_of_locusts_own_wait_times_is_read_from_them() -> None:
    from locust import User, between, constant, constant_pacing, constant_throughput, poisson

    assert mean_wait_s(between(1, 3)) == 2.0 and mean_wait_s(constant(0.5)) == 0.5
    assert mean_wait_s(poisson(4)) == 0.25
    assert mean_wait_s(constant_pacing(5)) == 5.0 and mean_wait_s(constant_throughput(2)) == 0.5
    assert mean_wait_s(User.wait_time) == 0.0, "Locust's default: no think time"
    assert mean_wait_s(lambda user: 1.0) is None, "a think time of one's own is unknown"
