"""Checks of what a real capacity run shows beside its answer: the server's queue as scraped by --llm-server-metrics
against the mock's ground truth of queueing, and the dashboard's capacity and server panels against the summary,
queried from a real InfluxDB (docs/capacity.md). Used by test_capacity_run.py, whose run they share."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from influx_server import InfluxServer
from test_dashboard_queries import CAPACITY_QUERIES, SERVER_QUERIES, run_dashboard_queries

from loadlib.mock.truth import bare_id


def truth_queue(mock_url: str) -> dict[str, float]:
    """The mock's ground truth: how long each request waited in the engine's queue (ms), by its bare id."""
    with urllib.request.urlopen(f"{mock_url}/mock/truth?limit=100000", timeout=60) as r:
        records = json.loads(r.read())
    records = records.get("records", records) if isinstance(records, dict) else records
    return {bare_id(t["request_id"]): t["engine"]["queue_ms"] for t in records if t.get("engine")}


def read_records(paths: Iterable[Path]) -> list[dict[str, Any]]:
    return [json.loads(line) for path in paths for line in path.read_text().splitlines() if line.strip()]


def step_truth(steps: Sequence[dict[str, Any]], records: Sequence[dict[str, Any]], queue: dict[str, float]) -> list:
    """Each step's mean truth queue time (ms) over the requests that started inside its measuring window."""
    out = []
    for step in steps:
        span = step["server"]
        inside = [
            queue[bare_id(r["server_request_id"])]
            for r in records
            if r.get("server_request_id")
            and bare_id(r["server_request_id"]) in queue
            and span["from_unix"] <= r["start_unix_ns"] / 1e9 < span["to_unix"]
        ]
        out.append(sum(inside) / len(inside) if inside else None)
    return out


def check_server_queue_against_truth(
    steps: Sequence[dict[str, Any]], records: Sequence[dict[str, Any]], queue: dict[str, float]
) -> list[tuple[int, float, float, float]]:
    """The scraped num_requests_waiting rises where the truth queues: of two steps whose requests' mean truth queue
    times differ by half or more, the one that queued longer has the longer scraped queue (a step's window
    has some 15 scrapes, 0.2 s apart, of a queue that moves, so close steps are not ordered); and each step's
    scraped queue is the length Little's law makes of the truth (the step's requests/s × its mean queue time), within
    half of it or 1.5 requests. Returns (users, truth queue ms, Little's length, scraped waiting) per step."""
    truth = step_truth(steps, records, queue)
    assert all(t is not None for t in truth), truth
    table = [
        (s["users"], float(t or 0.0), s["requests_per_s"] * (t or 0.0) / 1000, s["server"]["waiting"]["mean"])
        for s, t in zip(steps, truth, strict=True)
    ]
    for a in table:
        for b in table:
            if a[1] >= 1.5 * b[1]:
                assert a[3] > b[3], f"{a[0]} users queued longer than {b[0]} by the truth, not by the scrape: {table}"
        assert abs(a[3] - a[2]) <= max(1.5, 0.5 * a[2]), f"{a[0]} users: scraped queue against Little's law: {table}"
    return table


def check_panels_after_the_run(influx: InfluxServer, summary: dict[str, Any]) -> None:
    """The dashboard's capacity panels return the run's steps, its server panels the run's scrapes."""
    run_id = summary["meta"]["run_id"]
    selection = {"run_id": run_id, "scenario": ".*", "endpoint": ".*", "model": ".*"}
    results = run_dashboard_queries(influx, selection)
    for title in (*CAPACITY_QUERIES, *SERVER_QUERIES):
        query, series = results[title]
        assert series and all(s["values"] for s in series), f"{title}: no data after a real run\n{query}"
    (table,) = results["Capacity search steps [A]"][1]
    rows = [dict(zip(table["columns"], row, strict=True)) for row in table["values"]]
    steps = summary["capacity"]["steps"]
    assert [(r["step"], r["users"], r["passed"]) for r in rows] == [
        (s["step"], s["users"], int(s["passed"])) for s in steps
    ]
    for row, step in zip(rows, steps, strict=True):
        assert row["TTFT p95"] == pytest.approx(step["ttft_ms"]["p95"])
        assert row["requests/s"] == pytest.approx(step["requests_per_s"])
    (queue,) = results["Server: queue depth and running requests [A]"][1]
    scraped = [v[1] for v in queue["values"] if v[1] is not None]
    assert max(scraped) > 0, "the server queued at some step"
