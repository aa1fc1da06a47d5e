from loadlib.locust.fatal import BACKOFF_MAX_S, FatalStop, backoff_s


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_backoff_doubles_to_a_cap():
    assert [backoff_s(n) for n in range(6)] == [0.0, 0.5, 1.0, 2.0, 4.0, 8.0]
    assert backoff_s(50) == BACKOFF_MAX_S


def test_stops_when_every_attempt_of_the_window_failed_fatally():
    clock = Clock()
    watch = FatalStop(5.0, clock)
    assert watch.observe("HTTP 401 from x") is None
    clock.t += 4.9
    assert watch.observe("HTTP 401 from x") is None
    clock.t += 0.2
    verdict = watch.observe("HTTP 401 from x")
    assert verdict is not None and "HTTP 401 from x" in verdict and "all 3 requests" in verdict
    assert watch.observe("HTTP 401 from x") is None  # decided once


def test_one_healthy_attempt_means_never_stop():
    clock = Clock()
    watch = FatalStop(5.0, clock)
    watch.observe("cannot resolve the host name x")
    watch.observe(None)
    clock.t += 60
    assert watch.observe("cannot resolve the host name x") is None


def test_zero_window_never_stops():
    assert FatalStop(0.0).observe("TLS certificate verification failed") is None


def test_a_failure_of_the_load_generator_stops_at_once_and_is_said_once() -> None:
    watch = FatalStop(5.0)
    said = watch.client_fault("this load generator ran out of open files (EMFILE: ...)")
    assert said is not None and said.startswith("this load generator ran out of open files")
    assert "not the endpoint's" in said
    assert watch.client_fault("this load generator ran out of open files (EMFILE: ...)") is None
    assert FatalStop(5.0).client_fault(None) is None


def test_a_user_backing_off_wakes_at_the_windows_end_so_the_stop_is_not_late() -> None:
    """A wrong key, -t 6s: backoffs of 0.5, 1, 2 and 4 s put the fifth attempt at 7.5 s, after the end of the run."""
    clock = Clock()
    watch = FatalStop(5.0, clock)
    assert watch.due_in() == float("inf"), "the window starts with the first attempt"
    attempts = 0
    while (said := watch.observe("HTTP 401 from x")) is None:
        attempts += 1
        clock.t += backoff_s(attempts, watch.due_in())
        assert attempts < 10
    assert clock.t - 100.0 < 5.1 and "all 5 requests of the first 5 s" in said, (clock.t, said)
    assert watch.due_in() == float("inf") and backoff_s(5, watch.due_in()) == 8.0, "decided: the plain backoff"
