"""Drives an InfluxSink inside a gevent-monkey-patched process, as Locust runs it, so the pytest process itself is
never patched. Commands arrive as JSON lines on stdin, one JSON reply per command on stdout:

    {"op": "start", "url": ..., "db": ..., "run_id": ..., "worker": ..., "base_ns": t, "buffer": N, "batch": N}
    {"op": "records", "first": i, "n": n, "pause_every": k, "pause_s": s}   submit records i..i+n-1
    {"op": "health", "users": u, "cpu_percent": c, "loop_lag_ms": l}
    {"op": "event", "kind": k, "endpoint": e, "message": m}
    {"op": "wait", "until": "drained" | "errors", "n": k, "timeout_s": t}    wait for buffered == 0 / write_errors >= n
    {"op": "stats"}
    {"op": "close", "timeout_s": t}                                         reply carries the elapsed seconds
    {"op": "exit"}
"""

if __name__ == "__main__":  # patch first, as Locust does; importing this module (for make_record) patches nothing
    from gevent import monkey

    monkey.patch_all()

import gevent
from gevent.fileobject import FileObject

import json
import sys
import time
from typing import Any

from loadlib.errors import ErrorClass
from loadlib.records.record import RequestRecord
from loadlib.sinks.influx import InfluxSink
from loadlib.sinks.transports import InfluxV1Transport

SCENARIOS = ("chat", "summarise", "compliance")
ENDPOINTS = ("primary", "backup")


def make_record(i: int, run_id: str, worker: str, base_ns: int) -> RequestRecord:
    """Deterministic, varied records; point i has the unique timestamp base_ns + i µs (no two points collide)."""
    status = ErrorClass.OK if i % 10 else (ErrorClass.RATE_LIMITED if i % 20 else ErrorClass.TIMEOUT_TTFT)
    ok = status is ErrorClass.OK
    return RequestRecord(
        run_id=run_id,
        scenario=SCENARIOS[i % 3],
        endpoint=ENDPOINTS[i % 2],
        provider="openai",
        model="mock-llm",
        worker_id=worker,
        request_id=f"req-{i}",
        server_request_id=f"srv-{i}" if ok else None,
        attempt=1 + (i % 2),
        turn=i % 4 if i % 3 == 0 else None,
        start_unix_ns=base_ns + i * 1000,
        ttfb_ms=10.0 + i % 7,
        first_event_ms=11.0 + i % 7 if ok else None,
        ttft_ms=20.0 + i % 50 if ok else None,
        ttfo_ms=20.0 + i % 50 if ok else None,
        e2e_ms=500.0 + i % 300 if ok else 30.0,
        itl_ms=(5.0, 6.0, 7.0 + i % 5) if ok else (),
        tpot_ms=6.5 if ok else None,
        stream_tpot_ms=6.0 if ok else None,
        stream_tail_ms=0.5 + i % 3 if ok else None,
        output_events=40 if ok else 0,
        prompt_tokens=100 + i % 13 if ok else None,
        completion_tokens=40 if ok else None,
        prompt_tokens_est=99 + i % 13,
        completion_tokens_est=39 if ok else None,
        cost_usd=0.0001 * (1 + i % 3) if ok else None,
        status=status,
        http_status=200 if ok else (429 if status is ErrorClass.RATE_LIMITED else 200),
        finish_reason="stop" if ok else None,
        usage_source="stream" if ok else None,
        error_message=None if ok else "redacted",
    )


class Driver:
    def __init__(self) -> None:
        self.sink: InfluxSink | None = None
        self.run_id = ""
        self.worker = ""
        self.base_ns = 0

    def handle(self, cmd: dict[str, Any]) -> dict[str, Any]:
        op = cmd["op"]
        if op == "start":
            self.run_id, self.worker, self.base_ns = cmd["run_id"], cmd.get("worker", "w1"), cmd["base_ns"]
            transport = InfluxV1Transport(cmd["url"], cmd["db"], timeout_s=cmd.get("http_timeout_s", 5.0))
            self.sink = InfluxSink(
                transport,
                run_id=self.run_id,
                worker=self.worker,
                max_points=cmd.get("buffer", 100_000),
                batch_size=cmd.get("batch", 500),
                flush_interval_s=cmd.get("flush_s", 0.1),
                backoff_base_s=0.05,
                backoff_max_s=0.5,
            ).start()
            return {"ok": True}
        sink = self.sink
        assert sink is not None
        if op == "records":
            pause_every, pause_s = cmd.get("pause_every", 0), cmd.get("pause_s", 0.0)
            for k in range(cmd["n"]):
                sink.submit_record(make_record(cmd["first"] + k, self.run_id, self.worker, self.base_ns))
                if pause_every and (k + 1) % pause_every == 0:
                    gevent.sleep(pause_s)
        elif op == "health":
            sink.submit_worker_health(cmd["users"], cmd["cpu_percent"], cmd["loop_lag_ms"])
        elif op == "event":
            sink.submit_event(cmd["kind"], cmd.get("endpoint", ""), cmd.get("message", ""))
        elif op == "wait":
            deadline = time.monotonic() + cmd.get("timeout_s", 30.0)
            while time.monotonic() < deadline:
                stats = sink.stats()
                if cmd["until"] == "drained" and stats.buffered == 0:
                    break
                if cmd["until"] == "errors" and stats.write_errors >= cmd.get("n", 1):
                    break
                gevent.sleep(0.02)
        elif op == "close":
            start = time.monotonic()
            stats = sink.close(cmd["timeout_s"])
            return {"stats": stats.as_dict(), "elapsed_s": time.monotonic() - start}
        return {"stats": sink.stats().as_dict()}


def main() -> None:
    stdin = FileObject(sys.stdin.fileno(), "rb", close=False)  # cooperative: the sink keeps flushing while we wait
    driver = Driver()
    while True:
        line = stdin.readline()
        if not line:
            return
        cmd = json.loads(line)
        if cmd["op"] == "exit":
            return
        reply = driver.handle(cmd)
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
