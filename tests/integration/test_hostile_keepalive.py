"""Keep-alive connections a middlebox or the server forgot while they were idle (loadlib.mock.hostile_keepalive's
`idle-drop`), through real Locust processes over loopback: a request on such a connection fails before any byte of a
response (an RST or a FIN that comes only once the request is sent, so no check before reuse can see it). It is the
client's pooling, not the endpoint's answer: the request is sent again once on a new connection, no endpoint error
is counted, and every retry is counted in the summary, the printed summary and the records, agreeing with what the
server injected. Setting --llm-keepalive-idle-s below the server's idle limit avoids them. Numbers are printed (-s)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from loadlib.metrics.summary import stale_line
from loadlib.mock.hostile_keepalive import FIN, IDLE_LIMIT_S, RESET
from tests.integration.hostile_runs import Hostile, LiveRun, records
from tests.integration.locust_runs import completed, headless, locust_cmd
from tests.integration.test_hostile import END_MARGIN_S, finished, target

pytestmark = pytest.mark.integration

USERS, RUN_S = 3, 3
TUNED_IDLE_S = 0.06  # below the server's IDLE_LIMIT_S, with room for a loaded machine's scheduling


def _run(tmp_path: Path, *extra: str) -> tuple[dict, list[dict], dict, str]:
    """One run against a fresh idle-drop server: (the summary, the records, the server's counts, stdout)."""
    server = Hostile("idle-drop")
    outputs = ("--llm-records", str(tmp_path / "records.jsonl"), "--llm-summary", str(tmp_path / "summary.json"))
    run = LiveRun(locust_cmd(*target(server), *headless(USERS, RUN_S), *outputs, *extra))
    try:
        rc, took = finished(run, 40)
        stats = server.stats()
    finally:
        run.close()
        server.stop()
    assert took <= RUN_S + END_MARGIN_S and rc in (0, 1), run.stderr[-3000:]
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    return json.loads((tmp_path / "summary.json").read_text()), records(tmp_path / "records.jsonl"), stats, run.stdout


def test_stale_keep_alive_connections_are_retried_once_counted_and_never_an_endpoint_error(tmp_path: Path) -> None:
    summary, recs, stats, stdout = _run(tmp_path)
    total = summary["total"]
    injected = stats.get("injected", {})
    dropped = injected.get(RESET, 0) + injected.get(FIN, 0)
    retried = [r for r in recs if r.get("stale_retry_ms") is not None]
    cut = total.get("cut_off", 0)
    statuses = Counter(r["status"] for r in recs)
    print(
        f"\nidle-drop (idle limit {IDLE_LIMIT_S:g} s) -u {USERS} -t {RUN_S}s: {len(recs)} attempts {dict(statuses)}, "
        f"errors {total['errors_total']} {total['errors']}; server dropped {dropped} ({injected}) over "
        f"{stats['connections']} connections and {stats['requests']} requests; summary stale_connection_retries "
        f"{total.get('stale_connection_retries')}, records {len(retried)}, time lost up to "
        f"{max((r['stale_retry_ms'] for r in retried), default=0):.2f} ms"
    )
    assert total["errors_total"] == 0, f"a stale connection counted as the endpoint's error: {total['errors']}"
    assert {r["status"] for r in completed(recs)} == {"ok"}
    assert injected.get(RESET, 0) > 0 and injected.get(FIN, 0) > 0, f"both kinds of drop must be exercised: {stats}"
    assert (
        total["stale_connection_retries"]
        == len(retried)
        == sum(row["stale_connection_retries"] for row in summary["rows"])
    )
    assert len(retried) <= dropped <= len(retried) + cut, "every drop the server injected is one counted retry"
    assert all(r["attempt"] == 1 for r in recs), "the pooling retry is below the user-visible request's retries"
    for r in retried:
        assert 0 < r["stale_retry_ms"] <= r["ttfb_ms"], "t0 stays the first send: the lost time is in the timings"
    assert stale_line(len(retried)) in stdout, stdout[-3000:]


def test_an_idle_limit_below_the_servers_avoids_stale_connections(tmp_path: Path) -> None:
    summary, recs, stats, _ = _run(tmp_path, "--llm-keepalive-idle-s", str(TUNED_IDLE_S))
    total = summary["total"]
    print(
        f"\nidle-drop with --llm-keepalive-idle-s {TUNED_IDLE_S}: {len(recs)} attempts, errors "
        f"{total['errors_total']}, server {stats}, stale_connection_retries {total.get('stale_connection_retries')}"
    )
    assert total["errors_total"] == 0 and stats.get("injected", {}) == {}
    assert total["stale_connection_retries"] == 0 and not [r for r in recs if r.get("stale_retry_ms") is not None]
    assert len(recs) >= USERS * RUN_S
