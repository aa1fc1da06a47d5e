"""The open-file budget: the limit raised as far as the hard limit allows, -u checked against it, and a connect that
failed for lack of files classified as the load generator's fault, not the endpoint's."""

from __future__ import annotations

import errno
import resource
from collections.abc import Iterator

import pytest

from loadlib.config import Timeouts, make_endpoint
from loadlib.errors import ErrorClass
from loadlib.transport.connection import Connection
from loadlib.transport.open_files import LOCUST_MINIMUM, RESERVE, out_of_files, raise_limit, users_problem
from loadlib.transport.stream import StreamOutcome, _classify_connect_failure


@pytest.fixture
def limits() -> Iterator[tuple[int, int]]:
    saved = resource.getrlimit(resource.RLIMIT_NOFILE)
    yield saved
    resource.setrlimit(resource.RLIMIT_NOFILE, saved)


def test_the_soft_limit_is_raised_within_the_hard_one(limits: tuple[int, int]) -> None:
    """Locust asks for 10,000 and keeps 1,024 when the hard limit is lower; here it goes as far as it may (only the
    soft limit is lowered for the test: a lowered hard limit could not be raised back)."""
    _, hard = limits
    if hard != resource.RLIM_INFINITY and hard < 512:
        pytest.skip("the hard limit leaves no room to test")
    want = LOCUST_MINIMUM if hard == resource.RLIM_INFINITY else min(hard, LOCUST_MINIMUM)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    assert raise_limit() == want == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert raise_limit() == want, "once raised, left alone"


def test_users_that_cannot_fit_are_one_line_naming_the_fix() -> None:
    assert users_problem(1000, 1000 + RESERVE) is None
    line = users_problem(1100, 1024)
    assert line is not None and "-u 1100 needs at least 1164 open files" in line
    assert "may open 1024 (`ulimit -n`)" in line and "more workers" in line
    assert users_problem(10**6, resource.RLIM_INFINITY) is None


def test_a_connect_out_of_files_is_the_load_generators_fault() -> None:
    conn = Connection(make_endpoint("http://127.0.0.1:9/v1", model="m", api_key_env="none"), Timeouts())
    out = StreamOutcome()
    _classify_connect_failure(out, OSError(errno.EMFILE, "Too many open files"), conn)
    assert out.status is ErrorClass.CONNECT_ERROR and out.client_fault == out.message
    assert out.message is not None and out.message.startswith("this load generator ran out of open files (EMFILE")
    assert out.fatal is None and out.unreachable is None, "not the endpoint's: no back-off, no unreachable stop"
    assert "fs.file-max" in out_of_files(errno.ENFILE)
