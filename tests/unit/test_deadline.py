import pytest

from loadlib.config import Timeouts
from loadlib.errors import ErrorClass
from loadlib.transport.deadline import Deadline, DeadlineExceeded

T = Timeouts(connect=1.0, ttft=2.0, idle=0.5, total=10.0)


def test_waits_are_bounded_by_idle_ttft_and_total():
    d = Deadline(100.0, T)
    assert d.until(100.0, awaiting_output=True) == 100.5
    assert d.until(101.8, awaiting_output=True) == 102.0  # TTFT limit comes first
    assert d.until(109.8, awaiting_output=False) == 110.0  # total limit comes first
    assert d.head_at == 102.0


def test_a_crossed_limit_raises_even_while_data_keeps_coming():
    d = Deadline(100.0, T)
    with pytest.raises(Exception) as exc:
        d.until(102.0, awaiting_output=True)  # keep-alives only: no output token after 2 s
    assert exc.value.status is ErrorClass.TIMEOUT_TTFT
    with pytest.raises(Exception) as exc:
        d.until(110.0, awaiting_output=False)  # a stream that never ends
    assert exc.value.status is ErrorClass.TIMEOUT_TOTAL


def test_which_limit_a_silent_wait_crossed():
    d = Deadline(100.0, T)
    assert d.exceeded(100.6, awaiting_output=False).status is ErrorClass.TIMEOUT_IDLE
    assert d.exceeded(102.0, awaiting_output=True).status is ErrorClass.TIMEOUT_TTFT
    assert d.exceeded(110.0, awaiting_output=True).status is ErrorClass.TIMEOUT_TOTAL
    assert d.head_exceeded().status is ErrorClass.TIMEOUT_TTFT
    assert Deadline(0.0, Timeouts(ttft=5.0, total=3.0)).head_exceeded().status is ErrorClass.TIMEOUT_TOTAL


def test_after_the_terminal_event_the_wait_ends_at_a_point_no_read_pushes_back():
    """It was `now + 5 s` per read: a body that sent a comment every second after [DONE] held its user until the
    total limit. Now the end of the body is awaited until `end_by`, fixed at the terminal event, with or without
    output (an empty stream's [DONE] too)."""
    d = Deadline(100.0, Timeouts(idle=30.0, total=600.0))
    assert d.until(101.0, awaiting_output=False, end_by=101.25) == 101.25
    assert d.until(101.2, awaiting_output=False, end_by=101.25) == 101.25
    assert d.until(101.0, awaiting_output=True, end_by=101.25) == 101.25
    with pytest.raises(DeadlineExceeded):
        d.until(101.3, awaiting_output=False, end_by=101.25)
