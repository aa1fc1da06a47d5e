"""Fixtures for tests that talk to a real InfluxDB 1.x: skipped (with the reason) when `influxd` is not installed
locally; CI installs the Debian package `influxdb`.

The scenarios' SLO defaults are switched off for every Locust process the tests start (LLM_SCENARIO_SLO, read like
--scenario-slo): most tests run a few seconds to check something else, too short for a p95 (100 requests), so the
defaults would make them invalid (exit 3). Tests of the defaults pass --scenario-slo on."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from influx_server import InfluxServer, find_influxd

os.environ["LLM_SCENARIO_SLO"] = "off"


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
