"""A failover drill end to end: two real mock processes, a real master with two real workers and a real influxd.
The primary returns 503 from t=8 s for 12 s; the breakers open, traffic moves to the secondary, fails back after the
recovery; detection, failover and failback lie within bounds derived from the configuration below; no request is lost
from the counts; every dashboard query, failover panels included, returns data from this run."""

from __future__ import annotations

import json
import math
import re
import urllib.request

import pytest
from influx_server import InfluxServer
from test_dashboard_queries import CAPACITY_QUERIES, COMPLIANCE_QUERIES, SERVER_QUERIES, run_dashboard_queries

from loadlib.mock import MockConfig, start_subprocess
from tests.integration.locust_runs import load, run_distributed

pytestmark = [pytest.mark.integration, pytest.mark.alone]  # timing-sensitive: run with nothing beside it
DB = "locust"
USERS, WORKERS, RATE = 20, 2, 2.0  # users ask RATE times a second (locustfiles/failover_drill.py)
AT_S, FOR_S, RUN_S = 8, 12, 28
PRIMARY = MockConfig(ttft_ms=60, itl_ms=8, output_tokens=32)
SECONDARY = MockConfig(ttft_ms=150, itl_ms=12, output_tokens=32)
FAILURES, COOLDOWN_S, PROBES = 5, 5.0, 2
USER_ERRORS_PANEL = "Attempt errors vs user-visible errors [B]"
SLACK_S = 1.0  # drill message, clock reading and scheduling on a busy two-core box


def duration_s(cfg: MockConfig) -> float:
    return (cfg.ttft_ms + (cfg.output_tokens - 1) * cfg.itl_ms) / 1000.0


def bounds() -> dict[str, float]:
    """What the configuration allows. Primary requests in flight at the outage's start still succeed (up to one
    primary duration D_p); after that every user's next request fails: each user sends one within max(period,
    D_s) (its previous task may be a retry on the secondary), and U users per worker give ceil(N / U) rounds to
    reach N consecutive failures. The first failure comes within one period and its retry on the secondary answers
    D_s later. After the recovery the breaker is half-open within one cool-down, the next request is a probe and
    answers D_p later."""
    period, d_p, d_s = 1.0 / RATE, duration_s(PRIMARY), duration_s(SECONDARY)
    rounds = math.ceil(FAILURES / (USERS // WORKERS))
    return {
        "detect": d_p + rounds * max(period, d_s) + SLACK_S,
        "failover": period + d_s + SLACK_S,
        "failback": COOLDOWN_S + period + d_p + SLACK_S,
    }


def pool(primary_url: str, secondary_url: str) -> str:
    return json.dumps(
        {
            "policy": "priority",
            "endpoints": [
                {"name": "primary", "base_url": primary_url + "/v1", "admin_url": primary_url, "key_env": "none"},
                {"name": "secondary", "base_url": secondary_url + "/v1", "key_env": "none", "priority": 2},
            ],
            "breaker": {"failures": FAILURES, "failure_rate": 0, "cooldown_s": COOLDOWN_S, "probes": PROBES},
            "retry": {"max_attempts": 2, "budget": 0.5},
            "drills": [{"endpoint": "primary", "fault": "http_503", "at": AT_S, "for": FOR_S}],
            "targets": {"failover_within_s": 5, "user_error_rate_max": 0.05},
        }
    )


def served(url: str) -> int:
    with urllib.request.urlopen(url + "/mock/stats", timeout=5) as r:
        return int(json.load(r)["requests"])


def tag_values(influx: InfluxServer, measurement: str, key: str, run_id: str) -> set[str]:
    res = influx.query(f'SHOW TAG VALUES FROM "{measurement}" WITH KEY = "{key}" WHERE "run_id" = \'{run_id}\'', DB)
    return {v[1] for s in res["results"][0].get("series", []) for v in s["values"]}


@pytest.fixture(scope="module")
def drill(tmp_path_factory: pytest.TempPathFactory, influxd_binary: str) -> dict:
    tmp = tmp_path_factory.mktemp("drill")
    influx = InfluxServer(influxd_binary, tmp / "influx")
    influx.start()
    summary = tmp / "summary.json"
    try:
        with start_subprocess(PRIMARY) as primary, start_subprocess(SECONDARY) as secondary:
            rc, err, _ = run_distributed(
                *("-u", str(USERS), "-r", str(USERS), "-t", f"{RUN_S}s", "--llm-summary", str(summary)),
                *("--llm-pool", pool(primary.url, secondary.url), "--influx-url", influx.url, "--influx-api", "v1"),
                *("--influx-db", DB),
                workers=WORKERS,
                locustfile="locustfiles/failover_drill.py",
                timeout=RUN_S + 90,
            )
            served_total = served(primary.url) + served(secondary.url)
        yield {"rc": rc, "err": err, "summary": load(summary), "served": served_total, "influx": influx}
    finally:
        influx.stop()


def test_the_drill_passes_and_exits_by_its_verdict(drill: dict) -> None:
    assert drill["rc"] == 0, drill["err"][-3000:]
    figures = drill["summary"]["failover"]["drills"]
    assert len(figures) == 1 and figures[0]["passed"], figures
    assert figures[0]["in_flight"] > 0, "the users' phases are spread: the outage begins with streams in flight"


def test_detection_failover_and_failback_lie_within_the_derived_bounds(drill: dict) -> None:
    f = drill["summary"]["failover"]["drills"][0]
    limit = bounds()
    for figure, key in (("detect_s", "detect"), ("failover_s", "failover"), ("failback_s", "failback")):
        per_worker = f[figure]["per_worker"]
        assert len(per_worker) == WORKERS and all(v is not None for v in per_worker.values()), (figure, per_worker)
        assert 0 <= f[figure]["max"] <= limit[key], (figure, f[figure], limit[key])


def test_breakers_open_traffic_moves_and_comes_back(drill: dict) -> None:
    data = drill["summary"]["failover"]
    kinds_by_worker: dict[str, set[str]] = {}
    for e in data["events"]:
        kinds_by_worker.setdefault(e["worker"], set()).add(e["kind"])
    workers = [w for w in kinds_by_worker if w != "master"]
    assert len(workers) == WORKERS
    for w in workers:
        assert {"circuit_open", "circuit_half_open", "circuit_closed", "failover", "failback"} <= kinds_by_worker[w]
    assert {"drill_start", "drill_stop"} <= kinds_by_worker["master"]
    share = data["drills"][0]["traffic_share"]
    assert share["before"]["primary"] > 0.95 and share["during"]["primary"] < 0.15  # failures until open, probes
    assert share["after"]["primary"] > share["during"]["primary"]
    assert all(s["primary"]["state"] == "closed" for s in data["breakers"].values())


def test_no_request_is_lost_from_the_counts(drill: dict) -> None:
    """Attempts the client recorded, attempts its user-visible requests used, and requests the mocks served agree,
    except for requests in flight when the run stopped (at most one per user: killed before their record)."""
    s = drill["summary"]
    attempts = s["total"]["count"]
    users = s["failover"]["user_requests"]
    assert 0 <= attempts - users["attempts"] <= USERS
    assert users["attempt_records"] == attempts
    assert 0 <= drill["served"] - attempts <= USERS
    assert users["errors"] <= 0.05 * users["requests"]


def test_influxdb_has_the_drill_and_every_dashboard_query_returns_data(drill: dict) -> None:
    influx, s = drill["influx"], drill["summary"]
    run_id = s["meta"]["run_id"]
    kinds = tag_values(influx, "llm_event", "kind", run_id)
    assert {"drill_start", "drill_stop", "circuit_open", "circuit_closed", "failover", "failback"} <= kinds
    assert influx.count(DB, "llm_request", "request_id", f"\"run_id\" = '{run_id}'") == s["total"]["count"]
    user_points = influx.count(DB, "llm_user_request", "attempts", f"\"run_id\" = '{run_id}'")
    assert user_points == s["failover"]["user_requests"]["requests"]
    assert influx.count(DB, "llm_breaker", "state", f'"run_id" = \'{run_id}\' AND "state" = 2') > 0
    assert influx.count(DB, "llm_drill", "user_requests", f"\"run_id\" = '{run_id}'") == 1
    selection = {"run_id": re.escape(run_id), "scenario": ".*", "endpoint": ".*", "model": ".*"}
    no_user_errors = s["failover"]["user_requests"]["errors"] == 0  # the retries hid every failed attempt
    for title, (query, series) in run_dashboard_queries(influx, selection, DB).items():
        if title == USER_ERRORS_PANEL and no_user_errors:
            assert not series, "user-visible errors in InfluxDB that the summary does not count"
            continue
        if title in (*COMPLIANCE_QUERIES, *CAPACITY_QUERIES, *SERVER_QUERIES):
            continue  # ran without error (checked in run_dashboard_queries); no pairs, capacity search nor scrapes
        assert series and all(x["values"] for x in series), f"{title}: no data after a real drill\n{query}"
