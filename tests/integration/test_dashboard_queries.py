"""Every query of the Grafana dashboard (panels, variables, annotations), with Grafana's macros substituted, run
against a real influxd holding a realistic run: each must succeed and return the series its panel expects.

`render_query` and `run_dashboard_queries` are reusable by tests that first produce the data with a real Locust run.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from influx_server import InfluxServer

from loadlib.errors import ErrorClass
from loadlib.records.record import RequestRecord
from loadlib.sinks.lineproto import event_line, request_line, worker_line

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
                output_events=50 if ok else 0,
                prompt_tokens=200 + i % 50 if ok else None,
                completion_tokens=64 if ok else None,
                prompt_tokens_est=198 + i % 50,
                cost_usd=0.0002 if ok else None,
                status=status,
                http_status={ErrorClass.RATE_LIMITED: 429, ErrorClass.HTTP_5XX: 503}.get(status, 200),
                finish_reason="stop" if ok else None,
            )
        )
    return out


def write_run(influx: InfluxServer, run_id: str, n: int) -> list[RequestRecord]:
    start = time.time_ns() - 11 * 60 * SECOND
    recs = records(run_id, n, start)
    lines = [request_line(r) for r in recs]
    for worker, users in WORKERS.items():
        lines += [
            worker_line(run_id, worker, start + s * SECOND, users, 35.0 + s % 20, 0.5 + s % 4, 0, 0) for s in range(n)
        ]
    end = start + n * SECOND
    lines += [
        event_line(run_id, "test_start", "", f"run {run_id} started", start - SECOND),
        event_line(run_id, "circuit_open", "primary", "5 consecutive failures", start + 300 * SECOND),
        event_line(run_id, "failover", "backup", "primary open, traffic to backup", start + 300 * SECOND + 1),
        event_line(run_id, "failback", "primary", "primary healthy again", start + 420 * SECOND),
        event_line(run_id, "test_stop", "", f"run {run_id} stopped", end),
    ]
    for i in range(0, len(lines), 5000):
        influx.write(DB, lines[i : i + 5000])
    return recs


@pytest.fixture(scope="module")
def loaded(influxd_binary: str, tmp_path_factory: pytest.TempPathFactory) -> Iterable[tuple[InfluxServer, list]]:
    server = InfluxServer(influxd_binary, tmp_path_factory.mktemp("influxd-dash"))
    server.start()
    try:
        server.create_database(DB)
        recs = write_run(server, RUN, N_RECORDS)
        write_run(server, OTHER_RUN, 60)  # a second run that every panel must filter out
        yield server, recs
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
def test_every_panel_returns_the_series_it_expects(loaded: tuple[InfluxServer, list], selection_name: str) -> None:
    influx, all_recs = loaded
    sel = SELECTIONS[selection_name]
    recs = selected(all_recs, sel)
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


def test_stat_panels_match_the_data_exactly(loaded: tuple[InfluxServer, list]) -> None:
    influx, recs = loaded
    results = run_dashboard_queries(influx, SELECTIONS["everything"])
    errors = [r for r in recs if r.status is not ErrorClass.OK]
    assert value_of(results["Requests [A]"][1]) == len(recs)
    assert value_of(results["Errors [A]"][1]) == len(errors)
    assert value_of(results["Cost [A]"][1]) == pytest.approx(sum(r.cost_usd or 0 for r in recs))
    ttfts = sorted(r.ttft_ms for r in recs if r.ttft_ms is not None)
    assert value_of(results["P95 TTFT [A]"][1]) == ttfts[int(0.95 * len(ttfts) + 0.5) - 1]  # nearest rank
    by_status = {s["tags"]["status"]: s["values"][0][1] for s in results["Errors by class (total) [A]"][1]}
    assert by_status == {e.value: sum(1 for r in errors if r.status is e) for e in ERRORS}


def test_worker_panels_cover_every_worker(loaded: tuple[InfluxServer, list]) -> None:
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


def test_variables_and_annotations(loaded: tuple[InfluxServer, list]) -> None:
    influx, _ = loaded
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
        "circuit_open",
        "failover",
        "failback",
    ]
    (table,) = results["Failover and circuit events [A]"][1]
    assert {"kind", "endpoint", "message"} <= set(table["columns"])
