"""What the InfluxDB sink costs a worker: how many points/s one sink greenlet pushes into a real influxd, and how much
event-loop lag it adds while requests are recorded at a steady 500/s.

    python bench/sink_cost.py                      # starts a throw-away influxd 1.x (Debian package influxdb)
    python bench/sink_cost.py --influx-url http://127.0.0.1:8086 --db locust
    python bench/sink_cost.py --seconds 30 --rate 500

Without influxd (and no --influx-url) it writes to a minimal local HTTP server in another process that accepts and
discards /write bodies, which measures our side only. Loop lag is sampled by a timer greenlet that sleeps 5 ms and
records how late it wakes up, exactly as a Locust user's timers would be delayed.
"""

# ruff: noqa: E402  (gevent must patch before anything else is imported, as under Locust)
from gevent import monkey

monkey.patch_all()

import gevent

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from influx_server import InfluxServer, find_influxd, free_port

from loadlib.errors import ErrorClass
from loadlib.records.record import RequestRecord
from loadlib.sinks.influx import InfluxSink
from loadlib.sinks.lineproto import request_line
from loadlib.sinks.transports import InfluxV1Transport

TIMER_S = 0.005
NULL_SERVER = textwrap.dedent(
    """
    import sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(204); self.send_header("Content-Length", "0"); self.end_headers()
        def log_message(self, *a): pass
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
    """
)


def make_record(i: int) -> RequestRecord:
    """A realistic point: every timing and token field set, 64 inter-token gaps."""
    return RequestRecord(
        run_id="bench",
        scenario=("chat", "summarise", "compliance")[i % 3],
        endpoint=("primary", "backup")[i % 2],
        provider="openai",
        model="gpt-4o-mini",
        worker_id="bench-worker",
        request_id=f"req-{i:09d}",
        server_request_id=f"chatcmpl-{i:09d}",
        turn=i % 5,
        start_unix_ns=time.time_ns() + i,
        ttfb_ms=80.0 + i % 17,
        first_event_ms=85.0 + i % 17,
        ttft_ms=120.0 + i % 90,
        ttfo_ms=120.0 + i % 90,
        e2e_ms=1400.0 + i % 700,
        itl_ms=tuple(15.0 + (i + k) % 9 for k in range(64)),
        tpot_ms=19.5,
        output_events=64,
        prompt_tokens=350 + i % 40,
        completion_tokens=64,
        prompt_tokens_est=348 + i % 40,
        completion_tokens_est=64,
        cost_usd=0.00009,
        status=ErrorClass.OK,
        http_status=200,
        finish_reason="stop",
    )


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def lag_stats(samples: list[float]) -> str:
    ms = [s * 1000 for s in samples]
    return (
        f"p50 {percentile(ms, 50):6.2f} ms  p99 {percentile(ms, 99):6.2f} ms  max {max(ms):6.2f} ms  "
        f"mean {statistics.fmean(ms):5.2f} ms  (n={len(ms)})"
    )


def measure_lag(seconds: float, rate: int, sink: InfluxSink | None) -> list[float]:
    """Submit `rate` records/s (in 10 ms steps, on an absolute schedule) while a timer greenlet samples loop lag."""
    lags: list[float] = []
    stop_at = time.perf_counter() + seconds
    records = [make_record(i) for i in range(rate)]

    def timer() -> None:
        while time.perf_counter() < stop_at:
            t = time.perf_counter()
            gevent.sleep(TIMER_S)
            lags.append(max(time.perf_counter() - t - TIMER_S, 0.0))

    def submitter() -> None:
        per_tick = max(rate // 100, 1)
        tick = 0
        start = time.perf_counter()
        while time.perf_counter() < stop_at:
            for k in range(per_tick):
                rec = records[(tick * per_tick + k) % len(records)]
                if sink is not None:
                    sink.submit_record(rec)
            tick += 1
            gevent.sleep(max(start + tick * 0.01 - time.perf_counter(), 0))

    gevent.joinall([gevent.spawn(timer), gevent.spawn(submitter)])
    return lags


def throughput(url: str, db: str, n: int, batch: int) -> tuple[float, float]:
    """(points/s end to end through one sink greenlet, serialisation µs/point)."""
    records = [make_record(i) for i in range(n)]
    t = time.perf_counter()
    for r in records[:20_000]:
        request_line(r)
    encode_us = (time.perf_counter() - t) / min(n, 20_000) * 1e6
    sink = InfluxSink(InfluxV1Transport(url, db), max_points=n + 1, batch_size=batch, flush_interval_s=0.05).start()
    start = time.perf_counter()
    for i, r in enumerate(records):
        sink.submit_record(r)
        if i % 5000 == 4999:
            gevent.sleep(0)
    while sink.stats().buffered and time.perf_counter() - start < 300:
        gevent.sleep(0.01)
    elapsed = time.perf_counter() - start
    stats = sink.close(5.0)
    assert stats.written == n, stats
    return n / elapsed, encode_us


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--influx-url", default="", help="an existing InfluxDB 1.x (default: start one)")
    ap.add_argument("--db", default="bench")
    ap.add_argument("--points", type=int, default=100_000, help="points for the throughput test")
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=15.0, help="duration of each loop-lag phase")
    ap.add_argument("--rate", type=int, default=500, help="submits per second in the loop-lag phases")
    args = ap.parse_args()

    server = proc = None
    url = args.influx_url
    target = url
    if not url:
        binary, why = find_influxd()
        if binary:
            server = InfluxServer(binary, Path(tempfile.mkdtemp(prefix="sink-bench-")))
            server.start()
            url, target = server.url, f"influxd ({why}) at {server.url}"
        else:
            port = free_port()
            proc = subprocess.Popen([sys.executable, "-c", NULL_SERVER, str(port)])
            url, target = f"http://127.0.0.1:{port}", f"a null HTTP server (no influxd: {why})"
            time.sleep(0.5)
    try:
        if server is not None or args.influx_url:
            InfluxV1Transport(url, args.db).create_database()
        print(f"target: {target}")
        pps, encode_us = throughput(url, args.db, args.points, args.batch)
        print(f"serialisation: {encode_us:.1f} µs/point (request_line, 64 ITL gaps)")
        print(f"throughput: {pps:,.0f} points/s through one sink greenlet ({args.points:,} points, batch {args.batch})")

        base = measure_lag(args.seconds, args.rate, None)
        sink = InfluxSink(InfluxV1Transport(url, args.db), batch_size=args.batch).start()
        with_sink = measure_lag(args.seconds, args.rate, sink)
        stats = sink.close(5.0)
        down_sink = InfluxSink(InfluxV1Transport(f"http://127.0.0.1:{free_port()}", args.db)).start()
        with_down = measure_lag(args.seconds, args.rate, down_sink)
        down_stats = down_sink.close(1.0)
        print(f"loop lag at {args.rate} submits/s ({args.seconds:.0f} s each, timer {TIMER_S * 1000:.0f} ms):")
        print(f"  no sink:           {lag_stats(base)}")
        print(f"  sink -> influx:    {lag_stats(with_sink)}   written {stats.written:,}, dropped {stats.dropped}")
        print(
            f"  sink, influx down: {lag_stats(with_down)}   buffered then dropped at close "
            f"{down_stats.dropped_unflushed:,}, write errors {down_stats.write_errors}"
        )
    finally:
        if server is not None:
            server.stop()
            shutil.rmtree(server.root, ignore_errors=True)
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=5)


if __name__ == "__main__":
    main()
