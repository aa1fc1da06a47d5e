"""Locust wiring of the sink (loadlib.locust.sink_part), run in a subprocess because importing Locust monkey-patches
gevent, which the shared pytest process must not be."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[3]
DRIVER = Path(__file__).with_name("plugin_driver.py")


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INFLUX_", "LOCUST_"))}
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env.get('PYTHONPATH', '')}"
    proc = subprocess.run(
        [sys.executable, str(DRIVER)],
        cwd=tmp_path_factory.mktemp("plugin"),  # no locust.conf / pyproject.toml to pick up
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def lines(observed: dict[str, Any]) -> list[str]:
    return [ln for body in observed["bodies"] for ln in body.split("\n")]


def test_options_defaults_and_web_ui_visibility(observed: dict[str, Any]) -> None:
    opts = observed["local"]["opts"]
    assert opts["influx_api"] == "v1"  # as given; the default is v2
    assert (opts["influx_db"], opts["influx_bucket"], opts["influx_buffer"], opts["influx_batch"]) == (
        "locust",
        "locust",
        100_000,
        5000,
    )
    assert opts["influx_close_timeout"] == 5.0
    web_ui = observed["local"]["web_ui"]
    assert web_ui["influx_url"] is True and web_ui["influx_buffer"] is False


def test_local_run_writes_records_health_endpoint_events_and_test_markers(observed: dict[str, Any]) -> None:
    written = lines(observed)
    requests = [ln for ln in written if ln.startswith("llm_request,")]
    assert len(requests) == 20
    assert all(",run_id=run-7," in ln and ",worker=local " in ln for ln in requests)
    health = [ln for ln in written if ln.startswith("llm_worker,")]
    assert len(health) == 1 and "users=3i,cpu_percent=12.5,loop_lag_ms=0.75,sink_buffered=" in health[0]
    events = [ln for ln in written if ln.startswith("llm_event,")]
    kinds = [ln.split("kind=")[1].split(",")[0] for ln in events]
    assert kinds == ["test_start", "failover", "test_stop"]
    assert "endpoint=backup" in events[1] and 'message="primary open"' in events[1]


def test_submits_are_buffered_then_flushed_and_counted(observed: dict[str, Any]) -> None:
    during, after = observed["local"]["during"], observed["local"]["after"]
    assert during["submitted"] == during["buffered"] == 23 and during["written"] == 0  # nothing on the submit path
    assert after["submitted"] == after["written"] == 24 and after["dropped"] == 0
    assert after["nodes"]["local"]["closed"] is True and after["errors"] == {}


def test_workers_report_their_counts_and_the_master_totals_them(observed: dict[str, Any]) -> None:
    dist = observed["distributed"]
    assert dist["worker_report"]["submitted"] == 5
    assert dist["worker_final"]["written"] == 5 and dist["worker_final"]["closed"] is True
    master = dist["master"]
    assert set(master["nodes"]) == {"master", "host_abc123", "host_def456"}
    assert master["nodes"]["master"]["written"] == 2  # test_start + test_stop
    assert master["written"] == 7 and master["dropped"] == 0
    assert master["errors"] == {"host_def456": "no token"}


def test_a_worker_without_credentials_runs_without_the_sink_and_says_why(observed: dict[str, Any]) -> None:
    assert observed["distributed"]["no_token_report"] == {
        "error": "--influx-api v2 needs the token in the environment variable INFLUX_TOKEN"
    }


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("ok_v2", "ok v2"),
        ("ok_v1", "ok v1"),
        ("ok_v1_auth", "ok v1"),
        ("ok_strings_from_web_ui", "ok v2"),
        ("off", None),
        ("v2_no_token", "error --influx-api v2 needs the token in the environment variable INFLUX_TOKEN"),
        ("v2_no_org", "error --influx-api v2 needs --influx-org"),
        ("v1_user_only", "error set both INFLUX_USER and INFLUX_PASSWORD, or neither"),
        ("v1_no_db", "error --influx-api v1 needs --influx-db"),
        ("bad_api", "error --influx-api must be v1 or v2"),
        ("bad_url", "error --influx-url: not an http(s) URL"),
        ("creds_in_url", "error --influx-url: credentials do not belong in the URL"),
        ("batch_over_buffer", "error --influx-batch (20) must not exceed --influx-buffer (10)"),
        ("zero_buffer", "error --influx-buffer must be > 0"),
        ("bad_number", "error --influx-batch must be a number"),
        ("zero_flush", "error --influx-flush-interval must be > 0"),
        ("negative_close", "error --influx-close-timeout must be >= 0"),
    ],
)
def test_configuration_is_validated_in_one_line(observed: dict[str, Any], case: str, expected: str | None) -> None:
    got = observed["config"][case]
    if expected is None:
        assert got is None
    else:
        assert got is not None and got.startswith(expected) and "\n" not in got


def test_secrets_stay_out_of_the_config_repr(observed: dict[str, Any]) -> None:
    assert "'t'" not in observed["config"]["ok_v2"] and "token=" not in observed["config"]["ok_v2"]
    assert "password" not in observed["config"]["ok_v1_auth"]


def test_bad_configuration_exits_non_zero_at_init(observed: dict[str, Any]) -> None:
    assert observed["init"]["exit_code"] == 2
