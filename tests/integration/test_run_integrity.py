"""A worker SIGKILLed mid-run (real master with its web UI + 2 workers, the embedded mock): the summary, its JSON,
the console, the web UI's run notes and InfluxDB record the loss with its time, the share of intended user-seconds
that ran is within 5 % of the truth the test computes from the kill time, and the verdict is `incomplete` (exit 3).
And a worker whose InfluxDB sink is slow to close still gets its final counts to the master; server token counts
that disagree with our tokenizer are said; and a worker that would measure something else is refused at join."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.integration.influx_server import InfluxServer
from tests.integration.locust_runs import ROOT, env, free_port, headless, load, locust_cmd, run, run_distributed

pytestmark = pytest.mark.integration
DB = "integrity"
KILL_AFTER_S = 3.0  # after all users run
RUN_S = 12
WRITE_DELAY_S = 2.0


def workers() -> list[psutil.Process]:
    """This test's live worker processes (a reaped or zombie child of an earlier test is none)."""
    return [p for p in psutil.Process().children() if is_worker(p)]


def is_worker(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE and "--worker" in p.cmdline()
    except psutil.Error:
        return False


def connected(p: psutil.Process) -> bool:
    try:
        return any(c.status == psutil.CONN_ESTABLISHED for c in p.net_connections("tcp"))
    except psutil.Error:
        return False


def web_stats(web: int) -> dict[str, Any]:
    """The web UI's /stats/requests, {} while it does not answer."""
    url = f"http://127.0.0.1:{web}/stats/requests"
    with suppress(OSError, ValueError), urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)
    return {}


def kill_one_worker(killed: dict[str, Any], web: int) -> None:
    """Wait until the web UI shows the 20 users running (a worker killed before it has any would lose nothing: the
    test is about a loss), SIGKILL one worker KILL_AFTER_S later (recording the wall time), then read the web UI's
    run notes until they tell the loss."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and web_stats(web).get("user_count") != 20:
        time.sleep(0.2)
    time.sleep(KILL_AFTER_S)
    victim = workers()[0]
    os.kill(victim.pid, signal.SIGKILL)
    killed["at"] = time.time()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not killed.get("notes"):
        time.sleep(0.5)
        tabs = {t["key"]: t["data"] for t in web_stats(web).get("extended_stats") or []}
        killed["notes"] = [n["note"] for n in tabs.get("llm_notes") or [] if "lost at" in n["note"]]


def test_a_killed_worker_makes_the_run_incomplete_and_is_recorded_everywhere(
    tmp_path: Path, influx: InfluxServer
) -> None:
    summary_path = tmp_path / "s.json"
    killed: dict[str, Any] = {}
    web = free_port()
    rc, err, _ = run_distributed(
        *("-u", "20", "-r", "20", "-t", f"{RUN_S}s", "--llm-mock", "ttft_ms=20,itl_ms=5,output_tokens=24"),
        *("--llm-summary", str(summary_path), "--run-id", "integrity-run"),
        *("--llm-records", str(tmp_path / "records-{worker}.jsonl")),
        *("--influx-url", influx.url, "--influx-api", "v1", "--influx-db", DB),
        timeout=120,
        during=lambda: kill_one_worker(killed, web),
        mode=("--autostart", "--autoquit", "1", "--web-host", "127.0.0.1", "--web-port", str(web)),
    )
    assert summary_path.exists() and "at" in killed, err[-3000:]
    s = load(summary_path)
    meta, block = s["meta"], s["integrity"]
    kill = killed["at"] - meta["started_at"]
    first, last = run_span(read_records(tmp_path))  # the killed worker's last records died with it
    truth = ((last - first) + (killed["at"] - first)) / (2 * (last - first))  # 10 users each from the first request
    assert abs(block["share"] - truth) <= 0.05 * truth, (block["share"], truth)
    (lost,) = [w for w in block["workers"] if w["lost_s"] is not None]
    assert lost["lost_how"] == "missing heartbeat" and abs(lost["lost_s"] - kill) <= 1.5, (lost, kill)
    assert rc == 3 and s["verdict"]["status"] == "incomplete", (rc, s.get("verdict"))
    assert s["verdict"]["reasons"][0].startswith(f"run incomplete: worker {lost['name']} lost at")
    assert f"worker {lost['name']} lost at" in err, "the master's console says so when it happens"
    assert any(lost["name"] in note for note in killed.get("notes") or []), "the web UI's run notes say so, live"
    events = influx.query('SELECT "message" FROM "llm_event" WHERE "kind" = \'worker_lost\'', DB)
    (series,) = events["results"][0]["series"]
    assert len(series["values"]) == 1 and lost["name"] in series["values"][0][1]


class SlowInflux(BaseHTTPRequestHandler):
    """An InfluxDB v1 stand-in that takes WRITE_DELAY_S to accept each /write and counts the points it got."""

    points = 0
    lock = threading.Lock()

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.startswith("/write"):
            time.sleep(WRITE_DELAY_S)
            with SlowInflux.lock:
                SlowInflux.points += sum(1 for line in body.splitlines() if line.strip())
        self.send_response(204)
        self.end_headers()

    do_GET = do_POST

    def log_message(self, *args: object) -> None:
        pass


def test_a_sink_slow_to_close_still_has_its_final_counts_in_the_masters_totals(tmp_path: Path) -> None:
    """Each worker's last flush takes WRITE_DELAY_S, longer than Locust's 0.5 s wait for final reports: the master
    waits for them, so its totals hold every point the stand-in received and no worker's report is missing."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowInflux)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    summary_path = tmp_path / "s.json"
    try:
        rc, err, _ = run_distributed(
            *("-u", "4", "-r", "4", "-t", "4s", "--llm-mock", "ttft_ms=20,itl_ms=5,output_tokens=24"),
            *("--llm-summary", str(summary_path)),
            *("--influx-url", f"http://127.0.0.1:{server.server_port}", "--influx-api", "v1", "--influx-db", DB),
            timeout=120,
        )
    finally:
        server.shutdown()
    s = load(summary_path)
    sink, block = s["sink"], s["integrity"]
    assert rc in (0, 1) and block["complete"] and block["final_reports_awaited"], (rc, block, err[-2000:])
    assert all(w["final_report"] for w in block["workers"]) and len(block["workers"]) == 2
    assert sink["buffered"] == 0 and sink["dropped"] == 0, sink
    assert sink["written"] == SlowInflux.points > 0, (sink, SlowInflux.points)


@pytest.mark.parametrize(("scale", "warned"), [(1.5, True), (1.0, False)], ids=["over-reports", "faithful"])
def test_usage_that_disagrees_with_the_tokenizer_is_warned_about(scale: float, warned: bool) -> None:
    """The mock reports 1.5 x the completion tokens it sent (ground truth: 42 sent): the console says so with the
    share and the ratio; a faithful mock gets no warning."""
    mock = f"ttft_ms=20,itl_ms=5,output_tokens=42,usage_completion_scale={scale}"
    p = run(locust_cmd(*headless(8, 4), "--llm-mock", mock, "--llm-estimate-every", "1"), timeout=90)
    assert p.returncode == 0, p.stderr[-2000:]
    lines = [line for line in p.stdout.splitlines() if line.startswith("usage warning")]
    if not warned:
        assert lines == []
        return
    (line,) = lines
    assert "completion token counts differ" in line and "median server/estimate 1.50" in line and "(100 %" in line


def test_a_worker_that_would_measure_something_else_is_refused_and_the_run_waits(tmp_path: Path) -> None:
    """A worker started with another model, and one with an edited copy of the locustfile, are refused with one line
    each (exit 2); the master waits for a worker that matches, then runs with that one only."""
    port = free_port()
    summary = tmp_path / "s.json"
    master = subprocess.Popen(
        locust_cmd(
            *headless(2, 3),
            *("--master", "--expect-workers", "1", "--expect-workers-max-wait", "90"),
            *("--master-bind-host", "127.0.0.1", "--master-bind-port", str(port), "--llm-summary", str(summary)),
        ),
        cwd=ROOT,
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    edited = tmp_path / "chat.py"
    edited.write_text((ROOT / "locustfiles" / "chat.py").read_text() + "\n# edited\n")
    try:
        for extra, locustfile, words in (
            (("--llm-model", "gpt-4o"), "locustfiles/chat.py", "--llm-model 'gpt-4o', the master with 'mock-llm'"),
            ((), str(edited), "its locustfile differs from the master's"),
        ):
            refused = run(locust_cmd(*worker_args(port), *extra, locustfile=locustfile), timeout=60)
            errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
            assert refused.returncode == 2 and len(errors) == 1 and words in errors[0], refused.stderr[-2000:]
        assert master.poll() is None, "the master still waits for a matching worker"
        good = run(locust_cmd(*worker_args(port)), timeout=90)
        _, err = master.communicate(timeout=60)
    finally:
        master.kill()
        master.wait()
    assert master.returncode == 0 and good.returncode == 0, err[-3000:]
    assert [w["reports"] > 0 for w in load(summary)["integrity"]["workers"]] == [True]


def worker_args(port: int) -> tuple[str, ...]:
    return ("--worker", "--master-host", "127.0.0.1", "--master-port", str(port))


LATE_JOIN_S = 8.0  # the mismatched worker is started then (it joins a second or two later)
STALL_FROM_S, STALL_TO_S = 15.0, 25.0
STALL_RUN_S = 30


def late_worker_and_stall(port: int, edited: Path, seen: dict[str, Any]) -> None:
    """While the test runs (its start: both workers connected): start a worker with another locustfile at
    LATE_JOIN_S, SIGSTOP one of the two good workers at STALL_FROM_S and SIGCONT it at STALL_TO_S (wall times kept)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and sum(map(connected, workers())) < 2:
        time.sleep(0.1)
    t0 = time.monotonic()
    victim = workers()[0]
    seen["victim_pid"] = victim.pid
    time.sleep(max(t0 + LATE_JOIN_S - time.monotonic(), 0))
    late = spawn(locust_cmd(*worker_args(port), locustfile=str(edited)), stderr=subprocess.PIPE, text=True)
    time.sleep(max(t0 + STALL_FROM_S - time.monotonic(), 0))
    victim.send_signal(signal.SIGSTOP)
    seen["stop_at"] = time.time()
    time.sleep(max(t0 + STALL_TO_S - time.monotonic(), 0))
    victim.send_signal(signal.SIGCONT)
    seen["cont_at"] = time.time()
    try:
        seen["late"] = (late.wait(timeout=30), late.communicate()[1])
    finally:
        late.kill()


def spawn(cmd: list[str], **kw: Any) -> subprocess.Popen:
    return subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.PIPE, **kw)


def read_records(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """Each worker's --llm-records (records-{worker}.jsonl), by file name."""
    return {f.name: [json.loads(line) for line in f.read_text().splitlines()] for f in folder.glob("records-*")}


def idle_s(records: list[dict[str, Any]], gap_s: float = 1.0) -> list[tuple[float, float]]:
    """The spans over gap_s in which none of a worker's users started a request (they start one every ~0.3 s)."""
    starts = sorted(r["start_unix_ns"] / 1e9 for r in records)
    return [(a, b) for a, b in pairwise(starts) if b - a > gap_s]


def users_busy(records: list[dict[str, Any]], t0: float, t1: float) -> float:
    """Little's law on a worker's own records: its users' request time plus their think time (0.125 s on average)
    over the span: how many users it ran then."""
    cycles = [min((r["e2e_ms"] or 0) / 1000, 1.0) + 0.125 for r in records if t0 <= r["start_unix_ns"] / 1e9 < t1]
    return sum(cycles) / (t1 - t0)


def run_span(records: dict[str, list[dict[str, Any]]]) -> tuple[float, float]:
    """The run's first request's start and its last request's end (the test's stop, within a request)."""
    starts = [(r["start_unix_ns"] / 1e9, (r["e2e_ms"] or 0) / 1e3) for recs in records.values() for r in recs]
    return min(t for t, _ in starts), max(t + e2e for t, e2e in starts)


def truth(records: dict[str, list[dict[str, Any]]], users: int) -> tuple[float, float]:
    """(ran, intended) user-seconds from the workers' own records: each one's users ran from the run's first request
    to its last one's end, less the spans in which none of them started a request."""
    first, last = run_span(records)
    ran = sum(users * (last - first - sum(b - a for a, b in idle_s(recs))) for recs in records.values())
    return ran, users * len(records) * (last - first)


def test_a_late_mismatched_worker_takes_no_users_and_a_stalled_worker_recovers(tmp_path: Path) -> None:
    """One run of 2 x 7 users: a worker started with an edited locustfile joins ~LATE_JOIN_S into the test and is
    refused before it takes users (it writes no record; the others keep their 7); a worker stopped for 10 s
    (SIGSTOP, SIGCONT) is found missing, then recovers: not lost, its stall in the summary and on the console, and
    the share of user-seconds that ran within 5 % of the truth from the workers' own records. The stall costs a
    third of one worker's run: incomplete."""
    port, summary = free_port(), tmp_path / "s.json"
    edited = tmp_path / "chat.py"
    edited.write_text((ROOT / "locustfiles" / "chat.py").read_text() + "\n# edited\n")
    seen: dict[str, Any] = {}
    args = (*headless(14, STALL_RUN_S), "--llm-mock", "ttft_ms=20,itl_ms=5,output_tokens=24")
    args += ("--llm-summary", str(summary), "--llm-records", str(tmp_path / "records-{worker}.jsonl"))
    out, err = run_master_with_workers(port, args, during=lambda: late_worker_and_stall(port, edited, seen))
    assert summary.exists() and "late" in seen, err[-3000:]
    s = load(summary)
    block, started = s["integrity"], s["meta"]["started_at"]
    late_rc, late_err = seen["late"]
    assert late_rc == 2 and "error: refused worker" in late_err, late_err[-2000:]  # its locustfile (or loadlib) differs
    (refusal,) = block["refused"]
    assert not refusal["had_users"] and refusal["name"] not in {w["name"] for w in block["workers"]}
    records = read_records(tmp_path)
    assert len(records) == 2, "the refused worker wrote no record: it had no users"
    assert started + refusal["at_s"] < seen["stop_at"] - 1, ("the late worker joined after the stall", refusal)
    busy = [users_busy(recs, started + refusal["at_s"], seen["stop_at"]) for recs in records.values()]
    assert min(busy) > 6, f"each worker kept its 7 users after the refusal (4 + 5 when it took some): {busy}"
    (stall,) = [span for recs in records.values() for span in idle_s(recs)]
    assert abs(stall[0] - seen["stop_at"]) < 1 and abs(stall[1] - seen["cont_at"]) < 1, (stall, seen)
    ran, intended = truth(records, 7)
    assert abs(block["share"] - ran / intended) <= 0.05 * ran / intended, (block, ran / intended, err[-3000:])
    assert abs(block["intended_user_s"] - intended) <= 0.05 * intended, (block, intended)
    assert_stall_said(block, out, err, started, seen)


def assert_stall_said(block: dict[str, Any], out: str, err: str, started: float, seen: dict[str, Any]) -> None:
    """The stalled worker is not lost; its stall (SIGSTOP to SIGCONT, within a heartbeat) is in the summary, on the
    master's log when it recovers and in the summary's lines; the run is incomplete by its share alone."""
    (stalled,) = [w for w in block["workers"] if w["stalls"]]
    assert all(w["lost_s"] is None for w in block["workers"]) and block["rebalanced"] is False
    ((frm, to),) = [(x["from_s"], x["to_s"]) for x in stalled["stalls"]]
    assert abs(frm - (seen["stop_at"] - started)) <= 1.0 and abs(to - (seen["cont_at"] - started)) <= 1.0
    line = f"worker {stalled['name']} stalled {to - frm:.1f} s (no heartbeat) and recovered at {to:.1f} s"
    assert line in out and f"loadlib: worker {stalled['name']} stalled" in err
    (reason,) = block["reasons"]
    assert not block["complete"] and reason.endswith("of the intended user-seconds ran (under 95 %)")
    assert f"worker {block['refused'][0]['name']} refused at" in out and "before it took any users" in out


def run_master_with_workers(port: int, args: tuple[str, ...], during: Callable[[], None]) -> tuple[str, str]:
    """A headless master and two matching workers on loopback, `during()` in a thread: the master's (stdout, stderr);
    every process reaped (a stopped one continued first)."""
    bind = ("--master-bind-host", "127.0.0.1", "--master-bind-port", str(port))
    master = spawn(locust_cmd(*args, "--master", "--expect-workers", "2", *bind), stderr=subprocess.PIPE, text=True)
    procs = [spawn(locust_cmd(*worker_args(port)), stderr=subprocess.DEVNULL) for _ in range(2)]
    thread = threading.Thread(target=during, daemon=True)
    thread.start()
    try:
        out, err = master.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        master.kill()
        out, err = master.communicate()
        pytest.fail(f"the master did not end within 90 s: {err[-3000:]}")
    finally:
        thread.join(timeout=60)
        for p in [*procs, master]:
            with suppress(OSError):
                os.kill(p.pid, signal.SIGCONT)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
    return out, err
