"""The sink against a real influxd 1.x (v1 /write): points come back through InfluxQL with the right tags, fields
and types; an outage that fits the buffer loses nothing; a small buffer drops exactly what it counts; close() is
bounded while InfluxDB is down or hanging. The sink runs in a gevent-patched subprocess (sink_driver.py), as in
Locust; the pytest process is never patched."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from influx_server import InfluxServer
from sink_driver import make_record

from loadlib.sinks import lineproto

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DRIVER = Path(__file__).with_name("sink_driver.py")
DB = "locust"
INFLUX_TYPES = {"float": "float", "int": "integer", "str": "string"}


class Driver:
    """The sink_driver subprocess; every call waits for its one-line reply, bounded in time."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        # stderr to a file, not a pipe, so the driver's logs can never fill it up and block it; closed in stop()
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, str(DRIVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            cwd=REPO,
            env=env,
        )

    def call(self, reply_timeout_s: float = 90.0, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write((json.dumps(cmd) + "\n").encode())
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], reply_timeout_s)
        if not ready:
            raise AssertionError(f"sink driver gave no reply to {cmd['op']} within {reply_timeout_s}s")
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait(timeout=10)
            self.stderr.seek(0)
            raise AssertionError(f"sink driver died: {self.stderr.read().decode(errors='replace')[-3000:]}")
        return json.loads(line)

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b'{"op": "exit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.stderr.close()


@pytest.fixture
def driver() -> Iterator[Driver]:
    d = Driver()
    try:
        yield d
    finally:
        d.stop()


def start(driver: Driver, url: str, run_id: str, **kw: Any) -> int:
    base_ns = time.time_ns() - 5 * 60 * 1_000_000_000
    driver.call(op="start", url=url, db=DB, run_id=run_id, worker="w1", base_ns=base_ns, **kw)
    return base_ns


def rows(influx: InfluxServer, q: str) -> list[dict[str, Any]]:
    result = influx.query(q, DB)["results"][0]
    assert "error" not in result, result
    out = []
    for series in result.get("series") or []:
        for values in series["values"]:
            out.append(dict(zip(series["columns"], values, strict=True)))
    return out


def field_types(influx: InfluxServer, measurement: str) -> dict[str, str]:
    return {r["fieldKey"]: r["fieldType"] for r in rows(influx, f'SHOW FIELD KEYS FROM "{measurement}"')}


def tag_keys(influx: InfluxServer, measurement: str) -> set[str]:
    return {r["tagKey"] for r in rows(influx, f'SHOW TAG KEYS FROM "{measurement}"')}


def test_points_round_trip_with_tags_fields_and_types(influx: InfluxServer, driver: Driver) -> None:
    run_id = "rt-1"
    base_ns = start(driver, influx.url, run_id)  # the database does not exist yet: the transport creates it
    driver.call(op="records", first=0, n=60)
    driver.call(op="health", users=7, cpu_percent=42.5, loop_lag_ms=1.75)
    driver.call(op="event", kind="failover", endpoint="backup", message='primary "open", switching')
    driver.call(op="wait", until="drained", timeout_s=30)
    stats = driver.call(op="close", timeout_s=5)["stats"]
    assert stats["written"] == 62 and stats["dropped"] == 0 and stats["submitted"] == 62

    assert influx.count(DB, "llm_request", "attempt", f"\"run_id\" = '{run_id}'") == 60
    for name, field_type in field_types(influx, "llm_request").items():
        assert INFLUX_TYPES[lineproto.REQUEST_FIELDS[name]] == field_type, name
    assert tag_keys(influx, "llm_request") == set(lineproto.REQUEST_TAGS)
    assert field_types(influx, "llm_worker") == {k: INFLUX_TYPES[v] for k, v in lineproto.WORKER_FIELDS.items()}
    assert tag_keys(influx, "llm_worker") == set(lineproto.WORKER_TAGS)
    assert field_types(influx, "llm_event") == {"message": "string"}
    assert tag_keys(influx, "llm_event") == {"endpoint", "kind", "run_id"}

    for i in (3, 10, 20):  # an ok point, a rate-limited one, a TTFT timeout
        rec = make_record(i, run_id, "w1", base_ns)
        (row,) = rows(influx, f'SELECT * FROM "llm_request" WHERE "request_id" = \'req-{i}\'')
        assert row["time"] == rec.start_unix_ns
        assert (row["run_id"], row["worker"], row["scenario"], row["endpoint"]) == (
            run_id,
            "w1",
            rec.scenario,
            rec.endpoint,
        )
        assert (row["status"], row["provider"], row["model"]) == (rec.status.value, "openai", "mock-llm")
        assert row["e2e_ms"] == pytest.approx(rec.e2e_ms)
        assert row["ttft_ms"] == (None if rec.ttft_ms is None else pytest.approx(rec.ttft_ms))
        assert row["prompt_tokens"] == rec.prompt_tokens
        assert row["prompt_tokens_est"] == rec.prompt_tokens_est
        assert row["output_tokens"] == rec.output_tokens
        assert row["cost_usd"] == (None if rec.cost_usd is None else pytest.approx(rec.cost_usd))
        assert row["finish_reason"] == rec.finish_reason
        assert row["server_request_id"] == rec.server_request_id
        assert row["attempt"] == rec.attempt and row["turn"] == rec.turn and row["http_status"] == rec.http_status
        if rec.itl_ms:
            assert row["itl_max_ms"] == pytest.approx(max(rec.itl_ms))

    (health,) = rows(influx, f'SELECT * FROM "llm_worker" WHERE "run_id" = \'{run_id}\'')
    assert (health["worker"], health["users"], health["cpu_percent"], health["loop_lag_ms"]) == ("w1", 7, 42.5, 1.75)
    assert isinstance(health["sink_buffered"], int) and health["sink_dropped"] == 0
    (event,) = rows(influx, f'SELECT * FROM "llm_event" WHERE "run_id" = \'{run_id}\'')
    assert (event["kind"], event["endpoint"], event["message"]) == ("failover", "backup", 'primary "open", switching')


def test_outage_that_fits_the_buffer_loses_nothing(influx: InfluxServer, driver: Driver) -> None:
    run_id = "outage-1"
    influx.create_database(DB)
    start(driver, influx.url, run_id, buffer=100_000, batch=200)
    driver.call(op="records", first=0, n=500, pause_every=50, pause_s=0.01)
    driver.call(op="wait", until="drained", timeout_s=30)
    influx.stop()
    driver.call(op="records", first=500, n=1000, pause_every=100, pause_s=0.02)  # keep submitting while it is down
    stats = driver.call(op="wait", until="errors", n=2, timeout_s=30)["stats"]
    assert stats["write_errors"] >= 2 and stats["written"] == 500
    influx.start()  # same port, same data directory
    driver.call(op="records", first=1500, n=500, pause_every=100, pause_s=0.01)
    driver.call(op="wait", until="drained", timeout_s=60)
    stats = driver.call(op="close", timeout_s=5)["stats"]
    assert stats["submitted"] == 2000
    assert stats["written"] == 2000 and stats["dropped"] == 0
    assert influx.count(DB, "llm_request", "attempt", f"\"run_id\" = '{run_id}'") == 2000


def test_small_buffer_drops_the_oldest_and_counts_exactly(influx: InfluxServer, driver: Driver) -> None:
    run_id = "drops-1"
    influx.create_database(DB)
    start(driver, influx.url, run_id, buffer=300, batch=100)
    driver.call(op="records", first=0, n=100)
    driver.call(op="wait", until="drained", timeout_s=30)
    influx.stop()
    driver.call(op="records", first=100, n=1000, pause_every=100, pause_s=0.01)
    driver.call(op="wait", until="errors", n=1, timeout_s=30)
    influx.start()
    driver.call(op="wait", until="drained", timeout_s=60)
    stats = driver.call(op="close", timeout_s=5)["stats"]
    assert stats["submitted"] == 1100
    assert stats["written"] + stats["dropped"] == 1100
    assert stats["dropped"] == stats["dropped_overflow"] >= 700
    stored = influx.count(DB, "llm_request", "attempt", f"\"run_id\" = '{run_id}'")
    assert stored == stats["written"]
    newest = rows(influx, f'SELECT last("attempt"), "request_id" FROM "llm_request" WHERE "run_id" = \'{run_id}\'')
    assert newest[0]["request_id"] == "req-1099"  # the newest points survived


def test_close_while_influx_is_down_is_bounded(influx: InfluxServer, driver: Driver) -> None:
    influx.create_database(DB)
    start(driver, influx.url, "down-1")
    driver.call(op="records", first=0, n=100)
    driver.call(op="wait", until="drained", timeout_s=30)
    influx.stop()
    driver.call(op="records", first=100, n=500)
    driver.call(op="wait", until="errors", n=1, timeout_s=30)
    reply = driver.call(op="close", timeout_s=1.5)
    assert reply["elapsed_s"] < 1.5 + 2.0
    stats = reply["stats"]
    assert stats["written"] == 100 and stats["dropped_unflushed"] == 500 and stats["buffered"] == 0


def test_close_while_influx_hangs_is_bounded(driver: Driver) -> None:
    """A server that accepts the connection and never answers: the in-flight write is abandoned at the deadline."""
    with socket.socket() as black_hole:
        black_hole.bind(("127.0.0.1", 0))
        black_hole.listen(16)
        port = black_hole.getsockname()[1]
        start(driver, f"http://127.0.0.1:{port}", "hang-1", http_timeout_s=30.0)
        driver.call(op="records", first=0, n=50)
        time.sleep(0.3)  # the flush greenlet is now stuck waiting for a response
        reply = driver.call(op="close", timeout_s=1.0)
    assert reply["elapsed_s"] < 1.0 + 2.0
    assert reply["stats"]["written"] == 0 and reply["stats"]["dropped_unflushed"] == 50
