"""Fixtures for tests that talk to a real InfluxDB 1.x: skipped (with the reason) when `influxd` is not installed
locally; CI installs the Debian package `influxdb`.

The scenarios' SLO defaults are switched off for every Locust process the tests start (LLM_SCENARIO_SLO, read like
--scenario-slo): most tests run a few seconds to check something else, too short for a p95 (100 requests), so the
defaults would make them invalid (exit 3). Tests of the defaults pass --scenario-slo on. So is the users' phase
(LLM_USER_PHASE, read like --llm-user-phase): it holds each user's first request up to a second and spreads it once
more over its first cycle, which in a run of a few seconds takes a good share of the requests the test was written to
count on; tests of the phase (test_lockstep.py) pass --llm-user-phase. Tests not marked `alone` may run beside
another one (pytest-xdist, scripts/test.sh): their client-saturation bar is raised (below)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from influx_server import InfluxServer, find_influxd

from tests.integration.hostile_runs import Hostile, LiveRun
from tests.integration.locust_runs import locust_cmd

os.environ["LLM_SCENARIO_SLO"] = "off"
os.environ["LLM_USER_PHASE"] = "off"
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Two tests at a time (scripts/test.sh): a test's Locust shares the cores with another test's, so its client is
    # busy for reasons that are not its own. The tests run so are about function, not timing (timing tests are marked
    # `alone`), and a saturated verdict (exit 3) would hide what they check: the bar is raised for them.
    os.environ["LLM_LAG_THRESHOLD_MS"] = "2000"
    os.environ["LLM_CPU_THRESHOLD"] = "100"


@pytest.fixture(scope="session")
def influxd_binary() -> str:
    binary, why = find_influxd()
    if binary is None:
        pytest.skip(why)
    return binary


@pytest.fixture
def influx(influxd_binary: str, tmp_path: Path) -> Iterator[InfluxServer]:
    """A fresh influxd on free loopback ports, stopped (and its data removed with tmp_path) after the test."""
    server = InfluxServer(influxd_binary, tmp_path / "influxd")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def hostile() -> Iterator[Callable[..., Hostile]]:
    """Start hostile servers (`hostile("flood")`, loadlib.mock.hostile); every one is stopped after the test."""
    servers: list[Hostile] = []

    def start(behaviour: str, *args: str) -> Hostile:
        servers.append(Hostile(behaviour, *args))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def live() -> Iterator[Callable[..., LiveRun]]:
    """Start real Locust processes on locustfiles/chat.py (`live(*args, environ=...)`); killed after the test."""
    runs: list[LiveRun] = []

    def start(*args: str, environ: dict[str, str] | None = None) -> LiveRun:
        runs.append(LiveRun(locust_cmd(*args), environ))
        return runs[-1]

    yield start
    for run in runs:
        run.close()
