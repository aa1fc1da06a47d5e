"""Every query of the Grafana dashboard (panels, variables, annotations), with Grafana's macros substituted, run
against a real influxd holding a realistic run: each must succeed and return the series its panel expects.

`render_query` and `run_dashboard_queries` are reusable by tests that first produce the data with a real Locust run;
`FAILOVER_QUERIES` names the queries that only have data when the run used failover (breakers, drills).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from influx_server import InfluxServer

from loadlib.errors import ErrorClass
from loadlib.records.record import RequestRecord
from loadlib.records.user_request import UserRequest
from loadlib.sinks.lineproto import (
    amplification_line,
    breaker_line,
    capacity_step_line,
    drill_line,
    event_line,
    incident_line,
    request_line,
    server_line,
    user_request_line,
    worker_line,
)

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "grafana" / "dashboards" / "llm-overview.json"
DB = "locust"
RUN = "20261129-110501-ab12"
OTHER_RUN = "20261128-090000-ffff"
SCENARIOS = ("chat", "summarise", "compliance")
ENDPOINTS = {"primary": "mock-llm", "backup": "mock-llm-large"}  # endpoint -> model
WORKERS = {"host-a_1": 5, "host-b_2": 7}  # worker -> users
ERRORS = (ErrorClass.RATE_LIMITED, ErrorClass.HTTP_5XX, ErrorClass.TIMEOUT_TTFT)
N_RECORDS = 600
SECOND = 1_000_000_000
# The synthetic failover story (seconds from the run's start): each worker's breaker for primary opens at OPEN_S
# (+ its index), is half-open from HALF_OPEN_S and closed again at CLOSE_S; user requests preferring primary fail over
# to backup meanwhile. Drill 0 breaks primary around it; drill 1 breaks backup later, and fails.
OPEN_S, HALF_OPEN_S, CLOSE_S = 300, 410, 420


@dataclass(frozen=True)
class Drill:
    endpoint: str
    fault: str
    start_s: int
    stop_s: int
    figures: dict[str, Any]  # as the sink's submit_drill takes them


DRILLS = (
    Drill(
        "primary",
        "http_503",
        298,
        405,
        {
            "detect_s": {"p50": 2.5, "max": 3.0},
            "failover_s": {"p50": 2.75, "max": 3.5},
            "failback_s": {"p50": 14.0, "max": 16.0},
            "user_requests": 107,
            "user_errors": 2,
            "user_error_rate": 2 / 107,
            "passed": True,
        },
    ),
    Drill(
        "backup",
        "timeout",
        480,
        500,
        {
            "detect_s": {"p50": 4.0, "max": 5.0},
            "failover_s": {"p50": 4.5, "max": 6.0},
            "failback_s": None,
            "user_requests": 20,
            "user_errors": 9,
            "user_error_rate": 0.45,
            "passed": False,
        },
    ),
)
# Titles of the dashboard queries that only return data when the run used failover (a pool, breakers, drills), for
# tests that run them after a real run without one.
FAILOVER_QUERIES = (
    "Failover events",
    "Drills",
    "Failover and circuit events [A]",
    "Circuit breaker state by endpoint and worker [A]",
    "Attempt errors vs user-visible errors [B]",
    "Attempt errors vs user-visible errors [C]",
    "Failover drills [A]",
    "Failover incidents [A]",
)
# Titles of the queries that only return data when the run had the compliance scenario's amplification pairs.
COMPLIANCE_QUERIES = ("Structured-output amplification [A]",)
# ... only when the run was a capacity search, and only when it scraped the server (--llm-server-metrics).
CAPACITY_QUERIES = (
    "Capacity search steps [A]",
    "Capacity steps: TTFT p95 and requests/s [A]",
    "Capacity steps: TTFT p95 and requests/s [B]",
    "Capacity steps",
)
SERVER_QUERIES = (
    "Server: queue depth and running requests [A]",
    "Server: KV-cache use [A]",
    "TTFT: the server's own and the client's [A]",
)
# The synthetic capacity search: (users, TTFT p95 ms, requests/s, passed) of each step, decided STEP_S apart.
CAPACITY_STEPS = ((4, 120.0, 30.0, True), (8, 180.0, 55.0, True), (16, 900.0, 60.0, False), (12, 420.0, 58.0, True))
STEP_S = 20


def render_query(query: str, selection: dict[str, str], interval_s: int = 10) -> str:
    """Substitute Grafana's InfluxQL macros and template variables (as the regex a multi-value variable becomes)."""
    q = query.replace("$timeFilter", "time >= now() - 1h")
    q = q.replace("$__interval_ms", str(interval_s * 1000)).replace("$__interval", f"{interval_s}s")
    for name, regex in selection.items():
        q = q.replace(f"${name}", regex)
    leftover = set(re.findall(r"\$(\w+)", q)) - {"col"}
    assert not {m for m in leftover if not m.startswith("tag_")}, f"unsubstituted macro in {q}"
    return q


def dashboard_queries(dashboard: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(kind, title, query) of every panel target, variable and annotation."""
    out: list[tuple[str, str, str]] = []
    for panel in dashboard["panels"]:
        for t in panel.get("targets", []):
            out.append(("panel", f"{panel['title']} [{t['refId']}]", t["query"]))
    for v in dashboard["templating"]["list"]:
        q = v["query"]
        out.append(("variable", v["name"], q["query"] if isinstance(q, dict) else q))
    for a in dashboard["annotations"]["list"]:
        if not a.get("builtIn"):
            out.append(("annotation", a["name"], a["target"]["query"]))
    return out


def run_dashboard_queries(
    influx: InfluxServer, selection: dict[str, str], db: str = DB
) -> dict[str, tuple[str, list[dict[str, Any]]]]:
    """title -> (rendered query, series) for every dashboard query; fails on any InfluxQL error."""
    dashboard = json.loads(DASHBOARD.read_text())
    results = {}
    for _, title, query in dashboard_queries(dashboard):
        rendered = render_query(query, selection)
        result = influx.query(rendered, db)["results"][0]
        assert "error" not in result, f"{title}: {result['error']}\n{rendered}"
        results[title] = (rendered, result.get("series") or [])
    return results


def group_by_tags(query: str) -> list[str]:
    """Tag keys of the outermost GROUP BY (time(...) excluded)."""
    clauses = re.findall(r"GROUP BY ([^()]*(?:\([^)]*\))?[^()]*?)(?: fill\(|\)|$)", query)
    if not clauses:
        return []
    return re.findall(r'"(\w+)"', clauses[-1])


# ---- the data set -----------------------------------------------------------------------------------------------


def records(run_id: str, n: int, start_ns: int) -> list[RequestRecord]:
    out = []
    for i in range(n):
        endpoint = "primary" if i % 2 == 0 else "backup"
        status = ERRORS[(i // 10) % len(ERRORS)] if i % 10 in (4, 9) else ErrorClass.OK  # on both endpoints
        ok = status is ErrorClass.OK
        out.append(
            RequestRecord(
                run_id=run_id,
                scenario=SCENARIOS[i % 3],
                endpoint=endpoint,
                provider="openai",
                model=ENDPOINTS[endpoint],
                worker_id=list(WORKERS)[i % 2],
                request_id=f"{run_id}-{i}",
                start_unix_ns=start_ns + i * SECOND + i,
                ttfb_ms=15.0 + i % 5,
                first_event_ms=16.0 + i % 5 if ok else None,
                ttft_ms=40.0 + i % 80 if ok else None,
                ttfo_ms=40.0 + i % 80 if ok else None,
                e2e_ms=900.0 + i % 400 if ok else 120.0,
                itl_ms=(8.0, 9.0, 10.0 + i % 3) if ok else (),
                tpot_ms=9.0 + (i % 7) / 10 if ok else None,
                stream_tpot_ms=8.5 + (i % 5) / 10 if ok else None,
                stream_tail_ms=0.2 + i % 3 if ok else None,
                output_events=50 if ok else 0,
                prompt_tokens=200 + i % 50 if ok else None,
                cached_prompt_tokens=(128 if i % 4 else 0) if ok else None,
                completion_tokens=64 if ok else None,
                prompt_tokens_est=198 + i % 50,
                cost_usd=0.0002 if ok else None,
                status=status,
                http_status={ErrorClass.RATE_LIMITED: 429, ErrorClass.HTTP_5XX: 503}.get(status, 200),
                finish_reason="stop" if ok else None,
            )
        )
    return out


@dataclass
class Event:
    kind: str
    endpoint: str
    message: str
    ts_ns: int
    worker: str


@dataclass
class SyntheticRun:
    records: list[RequestRecord]
    user_requests: list[UserRequest] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def breaker_state(endpoint: str, second: int, worker_index: int) -> int:
    """0 closed, 1 half open, 2 open; each worker's breaker lags the previous one's by a second."""
    s = second - worker_index
    if endpoint != "primary" or s < OPEN_S or s >= CLOSE_S:
        return 0
    return 1 if s >= HALF_OPEN_S else 2


def user_requests(n: int, start_ns: int) -> list[UserRequest]:
    """One a second; those preferring primary while its breakers are open fail over to backup; those with
    i % 20 in (5, 12) fail, answered by no endpoint (on every scenario and preferred endpoint, so every selection has
    some)."""
    out = []
    for i in range(n):
        preferred = "primary" if i % 2 == 0 else "backup"
        failed = i % 20 == 12 or i % 20 == 5
        status = ERRORS[(i // 20) % len(ERRORS)] if failed else ErrorClass.OK
        moved = preferred == "primary" and OPEN_S <= i < CLOSE_S and not failed
        endpoint = None if failed else "backup" if moved else preferred
        attempts = 3 if failed else 2 if moved else 1
        ts = start_ns + i * SECOND + SECOND // 2
        e2e, ttft = (30_000.0, None) if failed else (900.0 + i % 400, 40.0 + i % 80)
        worker = list(WORKERS)[i % 2]
        scenario = SCENARIOS[i % 3]
        out.append(UserRequest("", scenario, worker, f"u{i}", ts, preferred, endpoint, status, attempts, e2e, ttft))
    return out


def failover_events(start_ns: int) -> list[Event]:
    out = []
    for w, worker in enumerate(WORKERS):
        at = start_ns + w * SECOND
        out += [
            Event("circuit_open", "primary", "5 consecutive failures", at + OPEN_S * SECOND, worker),
            Event("failover", "backup", "primary open, traffic to backup", at + OPEN_S * SECOND + 1, worker),
            Event("hedge", "backup", "primary slow, hedged to backup", at + (OPEN_S - 5) * SECOND, worker),
            Event("circuit_half_open", "primary", "probing", at + HALF_OPEN_S * SECOND, worker),
            Event("circuit_closed", "primary", "probe succeeded", at + CLOSE_S * SECOND, worker),
            Event("failback", "primary", "primary healthy again", at + CLOSE_S * SECOND + 1, worker),
        ]
    for index, d in enumerate(DRILLS):
        out += [
            Event("drill_start", d.endpoint, f"drill {index}: {d.fault}", start_ns + d.start_s * SECOND, "master"),
            Event("drill_stop", d.endpoint, f"drill {index} over", start_ns + d.stop_s * SECOND, "master"),
        ]
    return sorted(out, key=lambda e: e.ts_ns)


def write_run(influx: InfluxServer, run_id: str, n: int) -> SyntheticRun:
    start = time.time_ns() - 11 * 60 * SECOND
    recs = records(run_id, n, start)
    lines = [request_line(r) for r in recs]
    for w, (worker, users) in enumerate(WORKERS.items()):
        lines += [
            worker_line(run_id, worker, start + s * SECOND, users, 35.0 + s % 20, 0.5 + s % 4, 0, 0) for s in range(n)
        ]
        lines += [
            breaker_line(run_id, worker, endpoint, breaker_state(endpoint, s, w), start + s * SECOND + w)
            for s in range(n)
            for endpoint in ENDPOINTS
        ]
    users = user_requests(n, start)
    lines += [user_request_line(u, run_id, u.worker_id) for u in users]
    end = start + n * SECOND
    events = [
        Event("test_start", "", f"run {run_id} started", start - SECOND, "master"),
        *failover_events(start),
        Event("test_stop", "", f"run {run_id} stopped", end, "master"),
    ]
    lines += [event_line(run_id, e.kind, e.endpoint, e.message, e.ts_ns, e.worker) for e in events]
    lines += [
        drill_line(run_id, index, d.endpoint, d.fault, d.figures, start + (d.stop_s + 20) * SECOND)  # once final
        for index, d in enumerate(DRILLS)
    ]
    lines += [  # each drill's outage as the breakers saw it: an incident, written at test stop
        incident_line(run_id, {**d.figures, "endpoint": d.endpoint, "index": index, "duration_s": d.stop_s}, end)
        for index, d in enumerate(DRILLS)
    ]
    lines += [amplification_line(run_id, r.worker_id, 3, r, recs[i + 1]) for i, r in enumerate(recs[:-1]) if i % 5 == 0]
    lines += capacity_lines(run_id, start)
    lines += [server_scrape(run_id, s, start + s * SECOND) for s in range(n)]
    for i in range(0, len(lines), 5000):
        influx.write(DB, lines[i : i + 5000])
    return SyntheticRun(recs, users, events)


def capacity_row(index: int, users: int, ttft_p95: float, rps: float, passed: bool) -> dict[str, Any]:
    """A step of the summary's `capacity.steps`, as the search decides it."""
    return {
        "step": index,
        "users": users,
        "window_s": 5.0,
        "requests": int(rps * 5),
        "requests_per_s": rps,
        "output_tokens_per_s": rps * 4,
        "ttft_ms": {"p50": ttft_p95 / 2, "p95": ttft_p95},
        "tpot_ms": {"p50": 10.0, "p95": 12.0},
        "e2e_ms": {"p50": ttft_p95, "p95": ttft_p95 * 2},
        "errors": 0 if passed else 3,
        "error_rate": 0.0 if passed else 3 / (rps * 5),
        "goodput": None,
        "client_saturated": False,
        "passed": passed,
    }


def capacity_lines(run_id: str, start: int) -> list[str]:
    """Each step as the master writes it: an `llm_capacity_step` point and a `capacity_step` annotation."""
    out = []
    for index, (users, ttft, rps, passed) in enumerate(CAPACITY_STEPS, 1):
        at = start + index * STEP_S * SECOND
        out.append(capacity_step_line(run_id, capacity_row(index, users, ttft, rps, passed), at))
        out.append(event_line(run_id, "capacity_step", "", f"step {index} {users} users", at, "master"))
    return out


def server_scrape(run_id: str, second: int, at: int) -> str:
    """A scrape a second: the queue grows with the step's load (the step of second s is s // STEP_S)."""
    users = CAPACITY_STEPS[min(len(CAPACITY_STEPS) - 1, second // STEP_S)][0]
    waiting = max(0, users - 10)
    ttft = {"count": users, "mean_ms": 50.0 + 20 * waiting, "p95_ms": 80.0 + 30 * waiting}
    return server_line(
        run_id, "vllm", {"waiting": waiting, "running": min(users, 10), "kv_cache": users / 20}, ttft, at
    )


@pytest.fixture(scope="module")
def loaded(
    influxd_binary: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterable[tuple[InfluxServer, SyntheticRun]]:
    server = InfluxServer(influxd_binary, tmp_path_factory.mktemp("influxd-dash"))
    server.start()
    try:
        server.create_database(DB)
        run = write_run(server, RUN, N_RECORDS)
        write_run(server, OTHER_RUN, 60)  # a second run that every panel must filter out
        yield server, run
    finally:
        server.stop()


def expected_combos(recs: list[RequestRecord], tags: list[str], errors_only: bool) -> set[tuple[str, ...]]:
    attr = {"scenario": "scenario", "endpoint": "endpoint", "model": "model", "status": "status", "worker": "worker_id"}
    return {
        tuple(str(getattr(r, attr[t])) for t in tags) for r in recs if not errors_only or r.status is not ErrorClass.OK
    }


SELECTIONS = {
    "everything": {"run_id": re.escape(RUN), "scenario": ".*", "endpoint": ".*", "model": ".*"},
    "chat on primary": {"run_id": re.escape(RUN), "scenario": "chat", "endpoint": "(primary)", "model": ".*"},
    "two scenarios": {"run_id": re.escape(RUN), "scenario": "(chat|compliance)", "endpoint": ".*", "model": ".*"},
}


def selected(recs: list[RequestRecord], sel: dict[str, str]) -> list[RequestRecord]:
    def match(value: str, regex: str) -> bool:
        return re.fullmatch(regex, value) is not None

    return [
        r
        for r in recs
        if match(r.scenario, sel["scenario"]) and match(r.endpoint, sel["endpoint"]) and match(r.model, sel["model"])
    ]


@pytest.mark.parametrize("selection_name", list(SELECTIONS))
def test_every_panel_returns_the_series_it_expects(
    loaded: tuple[InfluxServer, SyntheticRun], selection_name: str
) -> None:
    influx, run = loaded
    sel = SELECTIONS[selection_name]
    recs = selected(run.records, sel)
    results = run_dashboard_queries(influx, sel)
    for title, (query, series) in results.items():
        assert series, f"{title}: no data\n{query}"
        assert all(s["values"] for s in series), f"{title}: an empty series"
        if 'FROM "llm_request"' not in query or "SHOW TAG VALUES" in query:
            continue
        tags = group_by_tags(query)
        got = {tuple((s.get("tags") or {}).get(t, "") for t in tags) for s in series}
        want = expected_combos(recs, tags, errors_only="\"status\" != 'ok'" in query)
        assert got == want, f"{title}: series {sorted(got)} != expected {sorted(want)}\n{query}"


def value_of(series: list[dict[str, Any]], column: int = 1) -> Any:
    assert len(series) == 1 and len(series[0]["values"]) == 1, series
    return series[0]["values"][0][column]


def test_stat_panels_match_the_data_exactly(loaded: tuple[InfluxServer, SyntheticRun]) -> None:
    influx, run = loaded
    recs = run.records
    results = run_dashboard_queries(influx, SELECTIONS["everything"])
    errors = [r for r in recs if r.status is not ErrorClass.OK]
    assert value_of(results["Requests [A]"][1]) == len(recs)
    assert value_of(results["Errors [A]"][1]) == len(errors)
    assert value_of(results["Cost [A]"][1]) == pytest.approx(sum(r.cost_usd or 0 for r in recs))
    ttfts = sorted(r.ttft_ms for r in recs if r.ttft_ms is not None)
    assert value_of(results["P95 TTFT [A]"][1]) == ttfts[int(0.95 * len(ttfts) + 0.5) - 1]  # nearest rank
    by_status = {s["tags"]["status"]: s["values"][0][1] for s in results["Errors by class (total) [A]"][1]}
    assert by_status == {e.value: sum(1 for r in errors if r.status is e) for e in ERRORS}


def test_worker_panels_cover_every_worker(loaded: tuple[InfluxServer, SyntheticRun]) -> None:
    influx, _ = loaded
    results = run_dashboard_queries(influx, SELECTIONS["everything"])
    for title in (
        "Event-loop lag by worker [A]",
        "CPU by worker [A]",
        "InfluxDB sink: buffered and dropped points by worker [A]",
    ):
        assert {s["tags"]["worker"] for s in results[title][1]} == set(WORKERS), title
    users = [v[1] for v in results["Users [A]"][1][0]["values"] if v[1] is not None]
    assert max(users) == sum(WORKERS.values())


def test_variables_and_annotations(loaded: tuple[InfluxServer, SyntheticRun]) -> None:
    influx, run = loaded
    results = run_dashboard_queries(influx, SELECTIONS["everything"])

    def values(title: str) -> set[str]:
        return {v[1] for s in results[title][1] for v in s["values"]}

    assert values("run_id") == {RUN, OTHER_RUN}
    assert values("scenario") == set(SCENARIOS)
    assert values("endpoint") == set(ENDPOINTS)
    assert values("model") == set(ENDPOINTS.values())
    (start_stop,) = results["Test start / stop"][1]
    assert [row[start_stop["columns"].index("kind")] for row in start_stop["values"]] == ["test_start", "test_stop"]
    (failover,) = results["Failover events"][1]
    assert [row[failover["columns"].index("kind")] for row in failover["values"]] == [
        e.kind for e in run.events if re.match(r"circuit_|fail", e.kind)
    ]
    (drills,) = results["Drills"][1]
    assert [row[drills["columns"].index("kind")] for row in drills["values"]] == ["drill_start", "drill_stop"] * 2
    (table,) = results["Failover and circuit events [A]"][1]
    assert {"kind", "endpoint", "worker", "message"} <= set(table["columns"])
    rows = [dict(zip(table["columns"], row, strict=True)) for row in table["values"]]
    want = [e for e in run.events if not e.kind.startswith("test_") and e.kind != "hedge"]
    assert [(r["kind"], r["endpoint"], r["worker"]) for r in rows] == [(e.kind, e.endpoint, e.worker) for e in want]
    assert {r["worker"] for r in rows} == {*WORKERS, "master"}


def column_sum(series: list[dict[str, Any]], column: int = 1) -> float:
    return sum(v[column] or 0 for s in series for v in s["values"])


@pytest.mark.parametrize("selection_name", list(SELECTIONS))
def test_attempt_errors_vs_user_visible_errors(loaded: tuple[InfluxServer, SyntheticRun], selection_name: str) -> None:
    influx, run = loaded
    sel = SELECTIONS[selection_name]
    results = run_dashboard_queries(influx, sel)
    attempts = [r for r in selected(run.records, sel) if r.status is not ErrorClass.OK]
    users = [
        u
        for u in run.user_requests
        if re.fullmatch(sel["scenario"], u.scenario) and re.fullmatch(sel["endpoint"], u.preferred)
    ]
    assert column_sum(results["Attempt errors vs user-visible errors [A]"][1]) == len(attempts)
    user_errors = [u for u in users if u.status is not ErrorClass.OK]
    assert 0 < column_sum(results["Attempt errors vs user-visible errors [B]"][1]) == len(user_errors)
    failed_over = [u for u in users if u.failed_over]
    assert 0 < column_sum(results["Attempt errors vs user-visible errors [C]"][1]) == len(failed_over)


def test_breaker_panel_is_a_step_line_per_endpoint_and_worker(loaded: tuple[InfluxServer, SyntheticRun]) -> None:
    influx, _ = loaded
    results = run_dashboard_queries(influx, SELECTIONS["everything"])
    series = results["Circuit breaker state by endpoint and worker [A]"][1]
    by_key = {(s["tags"]["endpoint"], s["tags"]["worker"]): [v[1] for v in s["values"]] for s in series}
    assert set(by_key) == {(e, w) for e in ENDPOINTS for w in WORKERS}
    for (endpoint, _), states in by_key.items():
        assert set(states) <= {0, 1, 2}
        assert set(states) == ({0, 1, 2} if endpoint == "primary" else {0}), endpoint
    primary_only = run_dashboard_queries(influx, SELECTIONS["chat on primary"])
    tags = [s["tags"] for s in primary_only["Circuit breaker state by endpoint and worker [A]"][1]]
    assert {t["endpoint"] for t in tags} == {"primary"}


def test_drill_table_has_the_final_figures_of_each_drill(loaded: tuple[InfluxServer, SyntheticRun]) -> None:
    influx, _ = loaded
    results = run_dashboard_queries(influx, SELECTIONS["everything"])
    series = results["Failover drills [A]"][1]
    rows = {s["tags"]["drill"]: (s["tags"], dict(zip(s["columns"], s["values"][0], strict=True))) for s in series}
    assert set(rows) == {"0", "1"}
    for index, drill in enumerate(DRILLS):
        tags, row = rows[str(index)]
        figures = drill.figures
        assert (tags["endpoint"], tags["fault"]) == (drill.endpoint, drill.fault)
        for column, key, stat in (
            ("detect p50", "detect_s", "p50"),
            ("detect max", "detect_s", "max"),
            ("failover p50", "failover_s", "p50"),
            ("failover max", "failover_s", "max"),
            ("failback max", "failback_s", "max"),
        ):
            want = (figures[key] or {}).get(stat)
            assert row[column] == (None if want is None else pytest.approx(want)), (index, column)
        assert (row["user requests"], row["user errors"]) == (figures["user_requests"], figures["user_errors"])
        assert row["user error rate"] == pytest.approx(figures["user_error_rate"])
        assert row["passed"] == (1 if figures["passed"] else 0)
    primary_only = run_dashboard_queries(influx, SELECTIONS["chat on primary"])
    assert [s["tags"]["drill"] for s in primary_only["Failover drills [A]"][1]] == ["0"]


def test_capacity_steps_and_server_panels_return_what_was_written(loaded: tuple[InfluxServer, SyntheticRun]) -> None:
    """The step table has one row per step with its figures; the server panels read the scrapes."""
    influx, _ = loaded
    results = run_dashboard_queries(influx, SELECTIONS["everything"])
    (table,) = results["Capacity search steps [A]"][1]
    rows = [dict(zip(table["columns"], row, strict=True)) for row in table["values"]]
    got = [(r["users"], r["TTFT p95"], r["requests/s"], r["passed"]) for r in rows]
    assert got == [(u, ttft, rps, int(ok)) for u, ttft, rps, ok in CAPACITY_STEPS]
    assert [r["step"] for r in rows] == [1, 2, 3, 4] and rows[2]["errors"] == 3
    (curve,) = results["Capacity steps: TTFT p95 and requests/s [A]"][1]
    assert [v[1] for v in curve["values"]] == [ttft for _, ttft, _, _ in CAPACITY_STEPS]
    (annotations,) = results["Capacity steps"][1]
    assert len(annotations["values"]) == len(CAPACITY_STEPS)
    (queue,) = results["Server: queue depth and running requests [A]"][1]
    waiting = [v[1] for v in queue["values"] if v[1] is not None]
    assert max(waiting) == 6 and min(waiting) == 0, "the queue of the 16-user step, none at 4 and 8 users"
    server, client = (results[f"TTFT: the server's own and the client's [{ref}]"][1] for ref in "AB")
    assert server and client and server[0]["columns"][1] == "server TTFT p95"
