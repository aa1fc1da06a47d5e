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
