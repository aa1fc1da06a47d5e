"""Open-loop arrivals for real: a target rate that does not slow down when the server does, so the queueing a slow
server causes shows up as schedule lag and in the latency measured from the intended send time."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from loadlib.mock import MockConfig, start_subprocess
from tests.integration.locust_runs import ROOT, env, headless, load, locust_cmd

pytestmark = [pytest.mark.integration, pytest.mark.alone]  # timing-sensitive: run with nothing beside it


def open_loop_run(mock_url: str, tmp_path: Path, rate: float, users: int, seconds: int, slow_at_s: float | None):
    """Support chat (one turn per conversation, so every prompt is alike) at `rate` requests/s; optionally tell
    the mock to slow down `slow_at_s` seconds after Locust starts. Returns the summary."""
    summary = tmp_path / "summary.json"
    cmd = locust_cmd(
        *headless(users, seconds),
        "--only-summary",
        "--host",
        mock_url + "/v1",
        "--llm-api-key-env",
        "none",
        "--chat-turns",
        "1",
        "--arrival-rate",
        str(rate),
        "--arrival-process",
        "constant",
        "--data-cache-dir",
        str(tmp_path / "cache"),
        "--llm-summary",
        str(summary),
        locustfile="locustfiles/support_chat.py",
    )
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if slow_at_s is not None:
            time.sleep(slow_at_s)
            req = urllib.request.Request(mock_url + "/mock/config", data=b"ttft_ms=400", method="POST")
            with urllib.request.urlopen(req, timeout=5) as r:
                assert json.load(r)["ttft_ms"] == 400
        _out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err[-3000:]
    return load(summary)


def test_a_slowing_server_shows_as_schedule_lag_and_intended_latency(tmp_path: Path) -> None:
    """Target 10 req/s with 2 users: fine at 20 ms TTFT, but at 400 ms the users can send 5 req/s at most. The
    achieved rate falls short, requests go out late, and latency from the intended send exceeds the service
    latency by exactly that lateness (the queueing the slowdown injects)."""
    with start_subprocess(MockConfig(ttft_ms=20, itl_ms=0, output_tokens=8)) as mock:
        s = open_loop_run(mock.url, tmp_path, rate=10, users=2, seconds=8, slow_at_s=3.5)
    row = s["rows"][0]
    assert row["errors_total"] == 0
    ol = row["open_loop"]
    lag, e2e = ol["schedule_lag_ms"], row["latency_ms"]["e2e"]
    intended = ol["e2e_from_intended_ms"]
    assert lag["count"] == row["count"] - row["cut_off"] == intended["count"]  # cut off by the end: no timings
    assert lag["p99"] > 500, lag
    assert intended["mean"] - e2e["mean"] == pytest.approx(lag["mean"], abs=1.0), "E2E from intended = E2E + lag"
    assert intended["p99"] > e2e["p99"] + 500
    plan = s["scenarios"]["open_loop"]
    assert plan["target_rps"] == 10 and plan["process"] == "constant"
    assert plan["achieved_rps"] < 9, plan


def test_an_unsaturated_run_keeps_its_schedule(tmp_path: Path) -> None:
    with start_subprocess(MockConfig(ttft_ms=20, itl_ms=0, output_tokens=8)) as mock:
        s = open_loop_run(mock.url, tmp_path, rate=5, users=6, seconds=5, slow_at_s=None)
    row = s["rows"][0]
    ol = row["open_loop"]
    assert ol["schedule_lag_ms"]["p99"] < 50, ol
    assert ol["e2e_from_intended_ms"]["p50"] - row["latency_ms"]["e2e"]["p50"] < 10
    plan = s["scenarios"]["open_loop"]
    assert 4 <= plan["achieved_rps"] <= 6, plan
