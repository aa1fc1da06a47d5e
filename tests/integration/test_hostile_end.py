"""Attempts still running when the run ends (loadlib.mock.hostile_end's `never-finishes`), through a real Locust
process: the run ends on time, every attempt is counted as `cut_off` with what arrived, Locust's table, its CSV, the
summary and the records agree, and a run in which nothing completed does not pass. Numbers are printed (-s)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.hostile_runs import Hostile, LiveRun, records
from tests.integration.locust_runs import headless, locust_cmd

pytestmark = pytest.mark.integration

END_MARGIN_S = 1.0  # a run ends within this of its -t
RSS_BOUND_MIB = 600  # as in test_hostile.py
USERS, SECONDS = 3, 3


@pytest.fixture
def server() -> Iterator[Hostile]:
    hostile = Hostile("never-finishes")
    yield hostile
    hostile.stop()


def aggregated_count(stats_csv: Path) -> int:
    with stats_csv.open(newline="") as f:
        return next(int(r["Request Count"]) for r in csv.DictReader(f) if r["Name"] == "Aggregated")


def test_streams_that_never_finish_are_cut_off_counted_everywhere_and_the_run_does_not_pass(server, tmp_path):
    path, summary_path, prefix = tmp_path / "records.jsonl", tmp_path / "summary.json", tmp_path / "locust"
    outputs = ("--llm-records", str(path), "--llm-summary", str(summary_path), "--csv", str(prefix))
    target = ("--host", server.url + "/v1", "--llm-api-key-env", "none")
    run = LiveRun(locust_cmd(*target, *headless(USERS, SECONDS), *outputs, "--json-file", str(prefix)))
    try:
        ramp = run.line_at("Ramping to", 60)
        rc = run.wait(60)
    finally:
        run.close()
    took = (run.ended_at or 0.0) - ramp
    recs = records(path)
    summary = json.loads(summary_path.read_text())
    table = json.loads(Path(f"{prefix}.json").read_text())
    locust_count = sum(e["num_requests"] for e in table)
    csv_count = aggregated_count(Path(f"{prefix}_stats.csv"))
    print(
        f"\nnever-finishes -t {SECONDS}s -u {USERS}: ended {took:.2f} s after 'Ramping to', rc {rc}, peak RSS "
        f"{run.peak_rss / 2**20:.0f} MiB; Locust {locust_count} (CSV {csv_count}), summary "
        f"{summary['total']['count']}, records {len(recs)}; {recs[0]['error_message'] if recs else ''}"
    )
    assert took <= SECONDS + END_MARGIN_S
    assert run.peak_rss < RSS_BOUND_MIB << 20
    assert len(recs) == USERS and {r["status"] for r in recs} == {"cut_off"}
    assert locust_count == csv_count == summary["total"]["count"] == len(recs)
    assert {e["name"] for e in table} == {"chat (cut off)"} and sum(e["num_failures"] for e in table) == 0
    assert (
        summary["total"]["cut_off"] == USERS
        and summary["total"]["errors"] == {}
        and summary["total"]["errors_total"] == 0
    )
    for r in recs:
        assert r["error_message"].startswith("cut off by the end of the run")
        assert r["e2e_ms"] >= (SECONDS - 1) * 1000 and (r["completion_tokens"] or r["completion_tokens_est"]) > 0
    assert summary["verdict"]["status"] == "invalid" and rc == 3, run.stdout[-2000:]
    assert "Verdict: INVALID (exit code 3): no attempt completed" in run.stdout
    assert "Traceback" not in run.stderr
