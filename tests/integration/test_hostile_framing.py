"""HTTP framing a server gets wrong (loadlib.mock.hostile_framing), through real Locust processes over loopback: a head
that never ends, bytes after a complete JSON answer, and an HTTP/1.0 stream without length that claims keep-alive.
Each run ends on time, in bounded memory, with every attempt counted alike by Locust's table, the summary and the
records, and with the class and message docs/metrics.md documents. Numbers are printed (run with -s to see them)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from loadlib.transport.connection import NO_LENGTH_NOTE, STRAY_NOTE
from tests.integration.hostile_runs import Hostile, LiveRun, records
from tests.integration.locust_runs import completed, headless, locust_cmd
from tests.integration.test_hostile import END_MARGIN_S, aggregated_count, finished, target

pytestmark = pytest.mark.integration

RUN_S = 2
USERS = 2
RSS_BOUND_MIB = 250  # peak RSS of the Locust process: a head is capped at 64 KiB, whatever the server sends
HEAD_CAPPED = "the response head crossed its size cap of 64 KiB (--llm-max-head-kb)"
STRAY_LOG = "was followed by bytes it did not declare"
NO_LENGTH_LOG = "has no Content-Length and is not chunked"
# behaviour: (the one status of every record, its message, a stderr line that must say what happened, fewest records,
# the note every record carries)
EXPECTED = {
    "header-flood": ("oversized", HEAD_CAPPED, None, 10, None),
    "stray-bytes-after-json": ("ok", None, STRAY_LOG, 10, STRAY_NOTE),
    "junk-head-after-json": ("ok", None, STRAY_LOG, 10, STRAY_NOTE),  # it used to wait 30 s per request
    "http10-keepalive-no-length": ("ok", None, NO_LENGTH_LOG, 10, NO_LENGTH_NOTE),  # it used to drain 5 s per request
}


def run_counts(run: LiveRun, tmp_path: Path) -> tuple[int, int, int, list[dict]]:
    """(Locust's final table, its CSV snapshot, the summary) counts of attempts, and the records."""
    prefix = tmp_path / "locust"
    locust = sum(entry["num_requests"] for entry in json.loads(Path(f"{prefix}.json").read_text()))
    summary = json.loads((tmp_path / "summary.json").read_text())["total"]["count"]
    return locust, aggregated_count(Path(f"{prefix}_stats.csv")), summary, records(tmp_path / "records.jsonl")


@pytest.mark.parametrize("behaviour", sorted(EXPECTED))
def test_framing_faults_end_on_time_counted_and_explained(behaviour: str, tmp_path: Path) -> None:
    status, message, log_line, fewest, note = EXPECTED[behaviour]
    server = Hostile(behaviour)
    prefix = tmp_path / "locust"
    outputs = ("--llm-records", str(tmp_path / "records.jsonl"), "--llm-summary", str(tmp_path / "summary.json"))
    run = LiveRun(
        locust_cmd(*target(server), *headless(USERS, RUN_S), *outputs, "--csv", str(prefix), "--json-file", str(prefix))
    )
    try:
        rc, took = finished(run, 30)
        locust, csv_count, summary, recs = run_counts(run, tmp_path)
    finally:
        run.close()
        server.stop()
    ended = completed(recs)  # an attempt in flight at -t is `cut_off`: counted above, judged here by what it is not
    statuses = Counter(r["status"] for r in ended)
    e2e = max((r["e2e_ms"] for r in ended), default=0.0)
    print(
        f"\n{behaviour}: ended {took:.2f} s after 'Ramping to' (-t {RUN_S}s), peak RSS {run.peak_rss / 2**20:.0f} "
        f"MiB; Locust {locust} (CSV {csv_count}), summary {summary}, records {len(recs)}: {dict(statuses)}, "
        f"max E2E {e2e:.1f} ms"
    )
    assert took <= RUN_S + END_MARGIN_S
    assert run.peak_rss < RSS_BOUND_MIB << 20
    assert rc in (0, 1) and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert locust == summary == len(recs) >= fewest
    assert csv_count == locust, "Locust's CSV is written once more at exit (loadlib.locust.csv_final)"
    assert set(statuses) == {status}, {r["error_message"] for r in ended}
    assert {r["error_message"] for r in ended} == {message}
    assert {r["note"] for r in ended} == {note}, "the record says what the framing did (docs/records.md)"
    assert all(r["http_status"] == 200 for r in ended) or status != "ok"
    assert log_line is None or log_line in run.stderr, run.stderr[-3000:]
