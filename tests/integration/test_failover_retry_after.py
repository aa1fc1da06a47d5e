"""Retry-After per endpoint, observed on the wire: the primary answers 429 asking for 1 s, the secondary 503 without
asking; the third attempt of each request goes back to the primary, and the primary's own log (GET /mock/truth)
shows it arriving 1 s after the primary's 429 went out, not a backoff after the secondary's 503."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from loadlib.mock import MockConfig, start_subprocess
from loadlib.mock.truth import bare_id
from tests.integration.locust_runs import headless, locust_cmd, run

pytestmark = [pytest.mark.integration, pytest.mark.alone]  # times against ground truth
ASKED_S, RUN_S = 1.0, 3


def fault(url: str, body: dict[str, Any]) -> None:
    req = urllib.request.Request(url + "/mock/fault", data=json.dumps(body).encode(), method="POST")
    urllib.request.urlopen(req, timeout=5).read()


def test_the_retry_to_the_primary_waits_for_the_primary_s_own_retry_after(tmp_path: Path) -> None:
    cfg = MockConfig(ttft_ms=20, itl_ms=2, output_tokens=4)
    records = tmp_path / "r.jsonl"
    with start_subprocess(cfg) as primary, start_subprocess(cfg) as secondary:
        fault(primary.url, {"kind": "rate_limit", "for_s": 60, "retry_after_s": ASKED_S})
        fault(secondary.url, {"kind": "http_503", "for_s": 60})
        pool = {
            "endpoints": [
                {"name": "primary", "base_url": primary.url + "/v1", "key_env": "none"},
                {"name": "secondary", "base_url": secondary.url + "/v1", "key_env": "none", "priority": 2},
            ],
            "breaker": {"failures": 0, "failure_rate": 0},
            "retry": {"max_attempts": 3, "budget": 2.0, "backoff_base_s": 0.05, "backoff_max_s": 0.1},
        }
        args = ("--llm-pool", json.dumps(pool), "--llm-records", str(records), "--stop-timeout", "3")
        proc = run(locust_cmd(*headless(1, RUN_S), *args, locustfile="locustfiles/failover_drill.py"), timeout=90)
        with urllib.request.urlopen(primary.url + "/mock/truth?limit=1000", timeout=5) as r:
            truth = {t["request_id"]: t for t in json.load(r)["records"]}
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    by_request: dict[str, dict[int, dict]] = {}
    for line in records.read_text().splitlines():
        rec = json.loads(line)
        if rec["endpoint"] == "primary" and rec.get("server_request_id"):
            by_request.setdefault(rec["user_request_id"], {})[rec["attempt"]] = truth[bare_id(rec["server_request_id"])]
    gaps = [a[3]["received_unix"] - a[1]["end_unix"] for a in by_request.values() if {1, 3} <= set(a)]
    print("primary's 429 to the retry on the wire, s:", [round(g, 4) for g in gaps])
    assert gaps and all(ASKED_S <= g <= ASKED_S + 0.05 for g in gaps), gaps
