"""The bracket-then-bisect search finds the largest load that holds, to its precision, within its step bound."""

from __future__ import annotations

import pytest

from loadlib.capacity.search import Search, bound_steps


def run(search: Search, capacity: float) -> Search:
    load: float | None = search.first()
    while load is not None:
        search.record(load, load <= capacity)
        load = search.next()
    return search


@pytest.mark.parametrize("capacity", [1, 2, 3, 7, 24, 25, 63, 100, 173, 640, 999])
@pytest.mark.parametrize("start", [1, 4, 10])
def test_the_answer_is_within_the_precision_below_the_truth(capacity: int, start: int) -> None:
    s = run(Search(start=start, maximum=1000, precision=0.05), capacity)
    assert s.failed is not None and s.held <= capacity < s.failed
    assert s.failed - s.held <= max(1, int(s.held * 0.05))
    assert len(s.tried) <= bound_steps(start, 1000, 0.05)


def test_one_user_already_failing_is_zero() -> None:
    s = run(Search(start=1), 0)
    assert (s.held, s.failed, s.tried) == (0, 1, [1])


def test_a_start_above_the_truth_bisects_down_from_it() -> None:
    s = run(Search(start=50, precision=0.1), 12)
    assert s.tried[0] == 50 and s.held <= 12 < s.failed and s.failed - s.held <= 1


def test_the_maximum_holding_ends_the_search_as_a_lower_bound() -> None:
    s = run(Search(start=4, maximum=20), 10_000)
    assert s.tried == [4, 8, 16, 20] and s.max_reached and s.held == 20 and s.failed is None


def test_the_bound_counts_bracket_and_bisection() -> None:
    assert bound_steps(1, 1000, 0.05) == 11 + 5 + 1  # 1, 2, 4 ... 512, 1000; a gap of 500 halved to 25; one more
    assert bound_steps(8, 8, 0.05) == 1 + 2 + 1


@pytest.mark.parametrize("capacity", [0.7, 3.3, 9.5, 15.0, 41.75, 120.0])
@pytest.mark.parametrize("start", [1.0, 8.0])
def test_a_rate_search_finds_the_rate_to_its_precision(capacity: float, start: float) -> None:
    s = run(Search(start=start, maximum=1000, precision=0.05, control="rate"), capacity)
    assert s.failed is not None and s.held <= capacity < s.failed
    assert s.failed - s.held <= max(s.held, start) * 0.05
    assert len(s.tried) <= 20


def test_a_rate_search_brackets_by_doubling_and_bisects_in_fractions() -> None:
    s = run(Search(start=8, precision=0.05, control="rate"), 30.0)
    assert s.tried[:4] == [8, 16, 32, 24] and s.tried[4:] == [28, 30, 31]
    assert (s.held, s.failed) == (30, 31)


def test_a_rate_search_whose_every_step_fails_ends_below_the_first_rate() -> None:
    s = run(Search(start=8, precision=0.05, control="rate"), 0.1)
    assert s.held == 0 and s.failed is not None and s.failed <= 0.4 and len(s.tried) <= 6
