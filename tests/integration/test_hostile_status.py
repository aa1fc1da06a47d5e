"""What a status line and a body claim, against the hostile server (loadlib.mock.hostile_status) through real
processes over loopback: a 301 to https, a 307 to itself, status 999, a gzip body the request did not accept and a
delta that is not UTF-8. Each has its own class and the one-line message of docs/metrics.md, "Error classes"; a
redirect stops a run early, naming where it points; a run of all five ends on time, in bounded memory, with every
attempt counted alike by Locust, the summary and the records. Numbers are printed (run with -s to see them)."""

from __future__ import annotations

import gevent

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from loadlib.config import Timeouts, make_endpoint
from loadlib.errors import ErrorClass
from loadlib.mock.hostile_status import utf8_broken_event
from loadlib.providers.base import ChatRequest
from loadlib.providers.registry import get_adapter
from loadlib.transport.connection import Connection
from loadlib.transport.stream import StreamOutcome, stream_call
from tests.integration.hostile_runs import Hostile, LiveRun, records
from tests.integration.locust_runs import completed, headless

pytestmark = pytest.mark.integration

FAST = Timeouts(connect=2.0, ttft=5.0, idle=5.0, total=10.0)
RSS_BOUND_MIB = 400  # peak RSS of a 3-user Locust process whose answers are all small (measured 137 MiB)
END_MARGIN_S = 1.0  # a run ends within this of its -t
STOP_WINDOW_S = 2  # --llm-stop-on-fatal-s of the redirect run
FATAL_STOP_S = 8.0  # the 2 s window, the backoff of the try that decides (0.5 s doubling), the stop itself
FIX = "redirects are not followed; point --host at the final URL"
INVALID = "is not a status code (HTTP defines 100-599): the server or a proxy before it is broken"
UNASKED = "Content-Encoding gzip, which the request did not accept"
BEHAVIOURS = ["redirect-301", "redirect-loop-307", "status-999", "status-042", "gzip-unasked", "invalid-utf8-delta"]


def utf8_message(n: int) -> str:
    """The documented message for request `n` of invalid-utf8-delta: where its broken event's bad byte is."""
    data = utf8_broken_event(n).removeprefix(b"data: ").rstrip(b"\n")
    try:
        data.decode()
    except UnicodeDecodeError as exc:
        return f"chat completion event is not JSON: invalid UTF-8 at byte {exc.start} of {len(data)}"
    raise AssertionError("the broken event decodes")


def documented(behaviour: str, url: str, n: int = 0) -> tuple[ErrorClass, str]:
    """Class and message docs/metrics.md promises for a behaviour's answer to request `n` on the server at `url`."""
    completions = url.removeprefix("http://") + "/v1/chat/completions"
    return {
        "redirect-301": (ErrorClass.HTTP_REDIRECT, f"HTTP 301 to https://{completions}: {FIX}"),
        "redirect-loop-307": (
            ErrorClass.HTTP_REDIRECT,
            f"HTTP 307 to the URL requested, http://{completions}: a redirect loop (redirects are not followed)",
        ),
        "status-999": (ErrorClass.HTTP_INVALID_STATUS, f"HTTP 999 {INVALID}"),
        "status-042": (ErrorClass.HTTP_INVALID_STATUS, f"HTTP 42 {INVALID}"),
        "gzip-unasked": (ErrorClass.MALFORMED_EVENT, UNASKED),
        "invalid-utf8-delta": (ErrorClass.MALFORMED_EVENT, utf8_message(n)),
    }[behaviour]


def call(server: Hostile, conn: Connection | None = None) -> tuple[StreamOutcome, Connection]:
    """One request of the real stream path in this process, bounded by a gevent Timeout."""
    ep = make_endpoint(server.url + "/v1", provider="openai", model="hostile", api_key_env="none")
    adapter = get_adapter("openai")
    req = ChatRequest(messages=[{"role": "user", "content": "hello"}], max_tokens=32)
    conn = conn or Connection(ep, FAST)
    with gevent.Timeout(FAST.total + 5):
        return stream_call(conn, adapter, adapter.build(ep.base_path, ep.model, None, req)), conn


def finished(run: LiveRun, timeout: float) -> tuple[int, float]:
    """(exit code, seconds from Locust's "Ramping to" line to the exit) of a run that must end by itself."""
    ramp = run.line_at("Ramping to", 60)
    rc = run.wait(timeout)
    assert run.ended_at is not None
    return rc, run.ended_at - ramp


def aggregated_count(stats_csv: Path) -> int:
    with stats_csv.open(newline="") as f:
        rows = [row for row in csv.DictReader(f) if row["Name"] == "Aggregated"]
    assert len(rows) == 1, rows
    return int(rows[0]["Request Count"])


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_each_answer_has_its_class_and_documented_message_and_keeps_the_connection(hostile, behaviour):
    server = hostile(behaviour)
    out, conn = call(server)
    again, _ = call(server, conn)
    print(f"\n{behaviour}: {out.status} HTTP {out.http_status}: {out.message} (connects {conn.connects})")
    assert (out.status, out.message) == documented(behaviour, server.url)
    assert (again.status, again.message) == documented(behaviour, server.url, 1)
    assert out.fatal == (out.message if out.status is ErrorClass.HTTP_REDIRECT else None)
    assert conn.connects == 1, "every answer had a length: the connection was reused"


def test_a_redirect_stops_the_run_with_one_line_saying_where(hostile, live, tmp_path):
    server = hostile("redirect-301")
    path = tmp_path / "records.jsonl"
    stop = ("--llm-stop-on-fatal-s", str(STOP_WINDOW_S), "--llm-records", str(path))
    run = live("--host", server.url + "/v1", "--llm-api-key-env", "none", *headless(2, 30), *stop)
    rc, took = finished(run, 60)
    recs = records(path)
    errors = [line.strip() for _, line in run.err if line.startswith("error:")]
    print(f"\nredirect-301: rc {rc} after {took:.2f} s, {len(recs)} requests; {errors}")
    assert rc == 2 and took <= FATAL_STOP_S, run.stderr[-3000:]
    assert len(errors) == 1 and documented("redirect-301", server.url)[1] in errors[0]
    assert recs and {(r["status"], r["http_status"]) for r in completed(recs)} == {("http_redirect", 301)}


def test_a_run_of_all_five_ends_on_time_in_bounded_memory_and_counts_alike(hostile, live, tmp_path):
    """Locust's final table (--json-file), its CSV (written once more at exit, loadlib.locust.csv_final), the summary
    and the records count the same attempts."""
    server = hostile("status-mix")
    path, summary, prefix = tmp_path / "records.jsonl", tmp_path / "summary.json", tmp_path / "locust"
    outputs = ("--llm-records", str(path), "--llm-summary", str(summary), "--csv", str(prefix))
    target = ("--host", server.url + "/v1", "--llm-api-key-env", "none")
    run = live(*target, *headless(3, 4), *outputs, "--json-file", str(prefix))
    rc, took = finished(run, 60)
    recs = records(path)
    csv_count = aggregated_count(Path(f"{prefix}_stats.csv"))
    locust_count = sum(entry["num_requests"] for entry in json.loads(Path(f"{prefix}.json").read_text()))
    total = json.loads(summary.read_text())["total"]["count"]
    statuses = Counter(r["status"] for r in recs)
    print(
        f"\nstatus-mix -t 4s -u 3: ended {took:.2f} s after 'Ramping to', peak RSS {run.peak_rss / 2**20:.0f} MiB; "
        f"Locust {locust_count} (its CSV {csv_count}), summary {total}, records {len(recs)}: {dict(statuses)}"
    )
    assert took <= 4 + END_MARGIN_S and run.peak_rss < RSS_BOUND_MIB << 20
    assert locust_count == csv_count == total == len(recs) > 0
    assert set(statuses) - {"cut_off"} == {"http_redirect", "http_invalid_status", "malformed_event"}, statuses
    assert rc in (0, 1) and "Traceback" not in run.stderr
    allowed = {documented(b, server.url)[1] for b in BEHAVIOURS if b != "invalid-utf8-delta"}
    for r in completed(recs):
        utf8 = r["server_request_id"] and utf8_message(int(r["server_request_id"].split("-")[1]))
        assert r["error_message"] in allowed or r["error_message"] == utf8, r
