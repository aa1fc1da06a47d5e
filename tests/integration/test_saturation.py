"""The run says so when the load generator itself is saturated, instead of reporting inflated latencies as the
server's; and does not cry wolf on a healthy run."""

from __future__ import annotations

import pytest

from tests.integration.locust_runs import headless, load, locust_cmd, run

pytestmark = pytest.mark.integration


def test_a_saturated_client_is_flagged(tmp_path):
    summary = tmp_path / "s.json"
    p = run(
        locust_cmd(
            *headless(4, 5),
            "--llm-summary",
            str(summary),
            locustfile="tests/fixtures/locustfiles/busy_client.py",
        )
    )
    assert p.returncode == 0, p.stderr[-2000:]
    s = load(summary)
    assert s["client_saturated"] is True
    assert any("loop lag" in r for r in s["client"]["reasons"]), s["client"]
    assert s["client"]["loop_lag_p99_ms"] > 50
    assert "CLIENT SATURATED" in p.stdout
