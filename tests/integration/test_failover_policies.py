"""Failover policies in real Locust runs against real mock processes: hedging (the winner's first token is the
user's TTFT, the cancelled loser stays a record with its cost), and a 429 storm that the retry budget keeps from
multiplying the load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.request import urlopen

import pytest

from loadlib.mock import MockConfig, start_subprocess
from tests.integration.locust_runs import headless, load, locust_cmd, run

pytestmark = pytest.mark.integration  # the tests that time against ground truth are marked `alone` one by one
HEDGE_AFTER_MS = 100.0


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def hedged_run(tmp_path: Path, seconds: int, **pool_extra: Any) -> tuple[Any, dict, list[dict], list[dict]]:
    """Two users against a slow primary (first token after 600 ms) and a fast secondary (30 ms), hedged after
    100 ms: every request is hedged and every hedge wins, nothing fails. The process, the summary, the attempt
    records and Locust's final table (--json-file)."""
    slow, fast = MockConfig(ttft_ms=600, itl_ms=5, output_tokens=8), MockConfig(ttft_ms=30, itl_ms=5, output_tokens=8)
    with start_subprocess(slow) as primary, start_subprocess(fast) as secondary:
        pool = {
            "endpoints": [
                {"name": "primary", "base_url": primary.url + "/v1", "admin_url": primary.url, "key_env": "none"},
                {"name": "secondary", "base_url": secondary.url + "/v1", "key_env": "none", "priority": 2},
            ],
            "hedge": {"after_ms": HEDGE_AFTER_MS},
            "retry": {"budget": 1.0},
            **pool_extra,
        }
        summary, recs, table = tmp_path / "s.json", tmp_path / "r.jsonl", tmp_path / "locust"
        outputs = ("--llm-summary", str(summary), "--llm-records", str(recs), "--json-file", str(table))
        graceful = ("--stop-timeout", "3")  # the request in flight at -t ends by itself: a stop mid-race is unit-tested
        proc = run(locust_cmd(*headless(2, seconds), *graceful, "--llm-pool", json.dumps(pool), *outputs), timeout=90)
    return proc, load(summary), records(recs), json.loads(Path(f"{table}.json").read_text())


@pytest.mark.alone
def test_hedging_first_token_wins_and_the_loser_is_counted(tmp_path: Path) -> None:
    """The losers are attempts (records, LLM rows: cancelled, with their cost) but neither errors nor Locust
    requests; hedge wins are not failovers; so a run where nothing failed passes by Locust's own rule. Every winning
    hedge has its loser's record (users finish their request at -t here; a user stopped mid-race is
    tests/unit/failover/test_dispatch.py's)."""
    proc, summary, recs, table = hedged_run(tmp_path, 5)
    assert proc.returncode == 0, proc.stderr[-3000:]
    users = summary["failover"]["user_requests"]
    assert users["requests"] > 5 and users["errors"] == 0 and users["hedged"] == users["requests"]
    assert users["hedged_won"] == users["requests"] and users["failed_over"] == 0
    ttft = users["ttft_ms"]["p50"]
    assert HEDGE_AFTER_MS + 30 <= ttft < HEDGE_AFTER_MS + 30 + 60, ttft  # hedge delay + the fast endpoint's TTFT
    by_status: dict[str, list[dict]] = {}
    for r in recs:
        by_status.setdefault(r["status"], []).append(r)
    losers, winners = by_status.pop("cancelled"), by_status.pop("ok")
    cut = by_status.pop("cut_off", [])  # attempts the end of the run cut off (records of their own, not losers)
    assert not by_status, by_status.keys()
    assert all(r["endpoint"] == "primary" and not r["hedge"] for r in losers)
    assert all(r["endpoint"] == "secondary" and r["hedge"] for r in winners)
    assert all(r["cost_usd"] and r["cost_usd"] > 0 for r in losers), "the loser's prompt was billed"
    assert {r["user_request_id"] for r in losers} >= {r["user_request_id"] for r in winners} - {None}
    total = summary["total"]
    assert (total["count"], total["cancelled"], total["errors_total"], total["errors"]) == (
        len(recs),
        len(losers),
        0,
        {},
    )
    assert sum(e["num_failures"] for e in table) == 0
    in_table = sum(e["num_requests"] for e in table)  # a cut-off attempt is one, in its own `(cut off)` row
    assert in_table == len(winners) + len(cut), "a loser is not a Locust request"
    assert f"{users['hedged_won']} won by the hedge, 0 failed over" in proc.stdout + proc.stderr


@pytest.mark.alone
def test_a_drill_that_hedging_absorbs_has_no_errors_and_no_failover(tmp_path: Path) -> None:
    """The primary slows down by 200 ms for 3 s: hedges keep winning. The drill sees its attempts without errors and
    no failover (nothing failed over: the hedges were faster), and its verdict on user errors passes."""
    drill = {"endpoint": "primary", "fault": "latency", "at": 1, "for": 3, "delay_ms": 200}
    targets = {"failover_within_s": None, "user_error_rate_max": 0.0}
    proc, summary, _, table = hedged_run(tmp_path, 5, drills=[drill], targets=targets)
    assert proc.returncode == 0, proc.stderr[-3000:]
    fig = summary["failover"]["drills"][0]
    assert fig["attempts"] > 0 and fig["attempt_errors"] == 0 and fig["user_errors"] == 0, fig
    assert fig["failover_s"]["max"] is None and fig["passed"], fig
    assert sum(e["num_failures"] for e in table) == 0 and summary["total"]["errors_total"] == 0
    assert "failed over - / - s" in proc.stdout + proc.stderr


def test_a_429_storm_stays_within_one_plus_the_budget(tmp_path: Path) -> None:
    budget = 0.25
    storm = MockConfig(ttft_ms=5, itl_ms=1, output_tokens=4, fault="rate_limit", retry_after_s=0.01)
    with start_subprocess(storm) as mock:
        summary = tmp_path / "s.json"
        proc = run(
            locust_cmd(
                *headless(8, 5),
                *("--host", mock.url + "/v1", "--llm-api-key-env", "none", "--llm-summary", str(summary)),
                *("--llm-max-attempts", "5", "--llm-retry-budget", str(budget)),
            ),
            timeout=90,
        )
    assert proc.returncode == 1, proc.stderr[-3000:]
    users = load(summary)["failover"]["user_requests"]
    assert users["requests"] > 50 and users["ok"] == 0
    assert users["attempts"] <= users["requests"] * (1 + budget)
    assert users["attempts"] > users["requests"] * (1 + budget * 0.5), users  # the budget was used


def test_a_client_side_drill_breaks_a_real_endpoint_without_touching_it(tmp_path: Path) -> None:
    """An endpoint without an admin API is broken by the pool itself: attempts in the window never leave the client,
    the breaker opens, the secondary answers, and the primary gets its traffic back after the window."""
    cfg = MockConfig(ttft_ms=20, itl_ms=2, output_tokens=8)
    with start_subprocess(cfg) as primary, start_subprocess(cfg) as secondary:
        pool = {
            "endpoints": [
                {"name": "primary", "base_url": primary.url + "/v1", "key_env": "none"},
                {"name": "secondary", "base_url": secondary.url + "/v1", "key_env": "none", "priority": 2},
            ],
            "breaker": {"failures": 3, "cooldown_s": 1},
            "retry": {"max_attempts": 2, "budget": 1.0},
            "drills": [{"endpoint": "primary", "fault": "refuse", "at": 2, "for": 3}],
        }
        summary, recs = tmp_path / "s.json", tmp_path / "r.jsonl"
        proc = run(
            locust_cmd(
                *headless(4, 8),
                *("--llm-pool", json.dumps(pool), "--llm-summary", str(summary), "--llm-records", str(recs)),
            ),
            timeout=90,
        )
        served_by_primary = json.loads(urlopen(primary.url + "/mock/stats", timeout=5).read())["requests"]
    assert proc.returncode == 0, proc.stderr[-3000:]  # the drill's verdict decides
    data = load(summary)["failover"]
    refused = [r for r in records(recs) if (r["error_message"] or "").startswith("drill (client-side)")]
    assert refused and all(r["endpoint"] == "primary" and r["status"] == "connect_error" for r in refused)
    sent_to_primary = sum(1 for r in records(recs) if r["endpoint"] == "primary")
    assert sent_to_primary - len(refused) <= served_by_primary <= sent_to_primary - len(refused) + 4
    kinds = {e["kind"] for e in data["events"]}
    assert {"drill_start", "drill_stop", "circuit_open", "failover", "failback"} <= kinds
    assert data["drills"][0]["passed"], data["drills"][0]
