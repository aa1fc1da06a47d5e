"""A whole answer whose chunked body never ends after `[DONE]` (loadlib.mock.hostile_framing's `done-then-silence`
and `done-then-pings`), against the same stream that ends (`slow-ok`), through real processes over loopback: the
attempt ends at its terminal event, the connection is closed instead of waited on, the record says so, one line on
stderr says why, and a run sends at least half the requests of a run against the clean server. Before: every request
held its user 5 s (silence) or until the total limit (pings), `note: null`, nothing on stderr: 2 attempts in 4 s
against 22. Numbers are printed (-s)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from loadlib.errors import ErrorClass
from loadlib.transport.connection import LATE_END_NOTE
from tests.integration.hostile_runs import Hostile, LiveRun, records
from tests.integration.locust_runs import completed, headless, locust_cmd
from tests.integration.test_hostile import END_MARGIN_S, finished, target
from tests.integration.test_hostile_status import call

pytestmark = pytest.mark.integration

RUN_S, USERS = 4, 2
NEVER_ENDS = ["done-then-silence", "done-then-pings"]
LOG_LINE = "did not end its body with its terminal event"
GRACE_MARGIN_S = 0.35  # the 0.25 s grace, the watchdog's 10 ms tick, a busy 2-core box


def run_against(behaviour: str, tmp_path: Path) -> tuple[list[dict], LiveRun, float]:
    """A headless run of RUN_S seconds with USERS users against the behaviour: (records, the run, its duration)."""
    server = Hostile(behaviour)
    path = tmp_path / f"{behaviour}.jsonl"
    run = LiveRun(locust_cmd(*target(server), *headless(USERS, RUN_S), "--llm-records", str(path)))
    try:
        _, took = finished(run, 60)
    finally:
        run.close()
        server.stop()
    return records(path), run, took


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> int:
    """How many attempts ended by themselves in a run against the stream that ends."""
    recs, _, _ = run_against("slow-ok", tmp_path_factory.mktemp("clean"))
    return len(completed(recs))


@pytest.mark.parametrize("behaviour", NEVER_ENDS)
def test_each_attempt_ends_at_done_and_only_the_first_waits_a_grace(hostile, behaviour):
    server = hostile(behaviour)
    waited = []  # seconds each call took past its E2E
    conn = None
    for _ in range(3):
        started = time.monotonic()
        out, conn = call(server, conn)
        waited.append(time.monotonic() - started - out.e2e_ms / 1000)
        assert (out.status, out.note, out.result.text.count(" ")) == (ErrorClass.OK, LATE_END_NOTE, 20), out.message
    print(f"\n{behaviour}: waited past E2E {[round(w, 3) for w in waited]} s, connections {conn.connects}")
    assert waited[0] < GRACE_MARGIN_S and max(waited[1:]) < 0.1, waited
    assert conn.connects == 3, "each body that did not end closed its connection"


@pytest.mark.parametrize("behaviour", NEVER_ENDS)
def test_a_run_sends_at_least_half_the_requests_of_a_clean_one_each_noted(behaviour, clean, tmp_path):
    recs, run, took = run_against(behaviour, tmp_path)
    ended = completed(recs)
    statuses = Counter(r["status"] for r in ended)
    notes = Counter(r["note"] for r in ended)
    print(
        f"\n{behaviour} -t {RUN_S}s -u {USERS}: {len(ended)} attempts ended ({len(recs) - len(ended)} cut off) against "
        f"{clean} against slow-ok; ended {took:.2f} s after 'Ramping to'; {dict(statuses)}; notes {dict(notes)}; "
        f"log lines {run.stderr.count(LOG_LINE)}"
    )
    assert took <= RUN_S + END_MARGIN_S
    assert len(ended) >= clean / 2, (len(ended), clean)
    assert set(statuses) == {"ok"} and set(notes) == {LATE_END_NOTE}
    assert max(r["e2e_ms"] for r in ended) < 1000, "E2E ends at [DONE], never at the grace's end"
    assert 1 <= run.stderr.count(LOG_LINE) <= USERS, "one line per user and endpoint per 30 s"
    for r in recs:
        if r["status"] == "cut_off" and "before it was sent" not in r["error_message"]:  # its age: start to stop
            assert float(r["error_message"].split(" s after")[0].rsplit(" ", 1)[1]) >= r["e2e_ms"] / 1000 - 0.05
    assert "Traceback" not in run.stderr
