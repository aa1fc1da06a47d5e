"""InfluxSink against a fake transport, on gevent without monkey-patching (the fake only sleeps cooperatively):
batching, retries, exact accounting, bounded close."""

from __future__ import annotations

import gevent

import time

import pytest

from loadlib.errors import ErrorClass
from loadlib.records.record import RequestRecord
from loadlib.sinks.influx import InfluxSink, backoff_delay
from loadlib.sinks.transports import WriteError, _sent
from tests.support.records import make_record, make_user_request


class FakeTransport:
    """Records delivered lines; `fail` decides, per call, whether (and how) a write fails."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.calls = 0
        self.fail_next: list[WriteError] = []
        self.down = False
        self.hang_s = 0.0
        self.closed = False

    def write(self, body: bytes) -> None:
        self.calls += 1
        if self.hang_s:
            gevent.sleep(self.hang_s)
        if self.down:
            raise WriteError("connection refused", retryable=True)
        if self.fail_next:
            raise self.fail_next.pop(0)
        self.lines.extend(body.decode().split("\n"))

    def close(self) -> None:
        self.closed = True

    def describe(self) -> str:
        return "fake"


def record(i: int) -> RequestRecord:
    return make_record(request_id=f"id-{i}", start_unix_ns=1_000_000_000 + i, e2e_ms=float(i))


def wait_for(cond, timeout_s: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "condition not met in time"
        gevent.sleep(0.01)


def make_sink(transport: FakeTransport, **kw: object) -> InfluxSink:
    opts: dict[str, object] = {"flush_interval_s": 0.05, "backoff_base_s": 0.01, "backoff_max_s": 0.05}
    opts.update(kw)
    return InfluxSink(transport, run_id="r", worker="w", **opts).start()  # type: ignore[arg-type]


def assert_conserved(sink: InfluxSink) -> None:
    s = sink.stats()
    assert s.submitted == s.written + s.dropped + s.buffered
    assert s.dropped == s.dropped_overflow + s.dropped_rejected + s.dropped_unflushed


def test_points_are_written_in_batches_off_the_submit_path() -> None:
    t = FakeTransport()
    sink = make_sink(t, batch_size=10)
    for i in range(25):
        sink.submit_record(record(i))
    assert t.calls == 0  # submit only appends
    wait_for(lambda: sink.stats().written == 25)
    assert t.calls == 3
    assert [line.split("request_id=")[1].split(",")[0] for line in t.lines] == [f'"id-{i}"' for i in range(25)]
    stats = sink.close(1.0)
    assert stats.dropped == 0 and stats.batches == 3 and t.closed


def test_a_full_batch_is_flushed_without_waiting_for_the_interval() -> None:
    t = FakeTransport()
    sink = make_sink(t, batch_size=5, flush_interval_s=30.0)
    for i in range(5):
        sink.submit_record(record(i))
    wait_for(lambda: sink.stats().written == 5, timeout_s=5)
    sink.close(1.0)


def test_outage_within_the_buffer_loses_nothing() -> None:
    t = FakeTransport()
    sink = make_sink(t, batch_size=7, max_points=1000)
    t.down = True
    for i in range(300):
        sink.submit_record(record(i))
        if i % 50 == 0:
            gevent.sleep(0)  # the writer runs (and fails) between submissions
    wait_for(lambda: sink.stats().write_errors >= 3)
    assert sink.stats().written == 0
    assert_conserved(sink)
    t.down = False
    wait_for(lambda: sink.stats().written == 300)
    stats = sink.close(1.0)
    assert stats.dropped == 0
    assert sorted(int(x.split("e2e_ms=")[1].split(".")[0]) for x in t.lines) == list(range(300))


def test_overflow_during_an_outage_drops_the_oldest_and_counts_exactly() -> None:
    t = FakeTransport()
    sink = make_sink(t, batch_size=10, max_points=50)
    t.down = True
    for i in range(500):
        sink.submit_record(record(i))
    wait_for(lambda: sink.stats().write_errors >= 1)
    assert_conserved(sink)
    t.down = False
    wait_for(lambda: sink.stats().buffered == 0)
    stats = sink.close(1.0)
    assert stats.submitted == 500
    assert stats.written + stats.dropped == 500
    assert stats.written == len(t.lines) and stats.dropped == stats.dropped_overflow
    written_ids = sorted(int(x.split("e2e_ms=")[1].split(".")[0]) for x in t.lines)
    assert written_ids == list(range(500 - stats.written, 500))  # the newest survived


def test_permanent_rejections_are_counted_not_retried() -> None:
    t = FakeTransport()
    t.fail_next = [
        WriteError("HTTP 400: bad", retryable=False, status=400),
        WriteError("HTTP 400: partial write dropped=2", retryable=False, status=400, rejected_points=2),
    ]
    sink = make_sink(t, batch_size=5, flush_interval_s=0.05)
    for i in range(15):
        sink.submit_record(record(i))
    wait_for(lambda: sink.stats().buffered == 0 and t.calls >= 3)
    stats = sink.close(1.0)
    assert stats.dropped_rejected == 5 + 2
    assert stats.written == 15 - 7
    assert stats.submitted == stats.written + stats.dropped


def test_retry_after_is_honoured() -> None:
    t = FakeTransport()
    t.fail_next = [WriteError("HTTP 429", retryable=True, status=429, retry_after_s=0.5)]
    waits: list[float] = []
    sink = make_sink(t, batch_size=1, backoff_wait=waits.append)
    sink.submit_record(record(1))
    wait_for(lambda: sink.stats().written == 1)
    assert waits == [0.5], "Retry-After outlasts the backoff (at most backoff_max_s, 0.05 s)"
    sink.close(1.0)


def test_a_write_with_an_unknown_outcome_counts_its_points_as_resent() -> None:
    """The database may hold them already (InfluxDB stopped mid-request): `resent` bounds what it may hold beyond
    `written`; a refused connection or an HTTP answer is no such case."""
    t = FakeTransport()
    t.fail_next = [
        WriteError("ReadTimeout", retryable=True, unknown_outcome=True),
        WriteError("HTTP 503", retryable=True, status=503),
    ]
    sink = make_sink(t, batch_size=3, backoff_wait=lambda _s: None)
    for i in range(3):
        sink.submit_record(record(i))
    wait_for(lambda: sink.stats().written == 3)
    stats = sink.close(1.0)
    assert (stats.resent, stats.write_errors, stats.dropped) == (3, 2, 0)


@pytest.mark.parametrize(
    ("error", "sent"),
    [
        ("ConnectionError: HTTPConnectionPool: Max retries exceeded (Caused by NewConnectionError(...))", False),
        ("ConnectTimeout: HTTPConnectionPool(host='x', port=8086)", False),
        ("ConnectionError: ('Connection aborted.', RemoteDisconnected('Remote end closed connection'))", True),
        ("ReadTimeout: HTTPConnectionPool(host='x', port=8086): Read timed out.", True),
    ],
)
def test_only_a_request_that_went_out_may_have_been_written(error: str, sent: bool) -> None:
    name, _, text = error.partition(": ")
    assert _sent(type(name, (Exception,), {})(text)) is sent


def test_close_while_influx_is_down_returns_within_the_timeout() -> None:
    t = FakeTransport()
    sink = make_sink(t)
    t.down = True
    for i in range(100):
        sink.submit_record(record(i))
    wait_for(lambda: sink.stats().write_errors >= 1)
    start = time.monotonic()
    stats = sink.close(0.5)
    assert time.monotonic() - start < 1.5
    assert stats.written == 0 and stats.dropped_unflushed == 100 and stats.buffered == 0
    assert stats.closed and t.closed


def test_close_while_a_write_hangs_returns_within_the_timeout() -> None:
    t = FakeTransport()
    t.hang_s = 60.0
    sink = make_sink(t, batch_size=10)
    for i in range(25):
        sink.submit_record(record(i))
    wait_for(lambda: t.calls >= 1)
    start = time.monotonic()
    stats = sink.close(0.4)
    assert time.monotonic() - start < 1.5
    assert stats.written == 0 and stats.dropped_unflushed == 25


def test_close_flushes_what_is_buffered() -> None:
    t = FakeTransport()
    sink = make_sink(t, flush_interval_s=30.0)
    for i in range(42):
        sink.submit_record(record(i))
    stats = sink.close(2.0)
    assert stats.written == 42 and stats.dropped == 0


def test_close_is_idempotent_and_late_submits_are_counted() -> None:
    t = FakeTransport()
    sink = make_sink(t)
    sink.submit_event("test_start", "", "go")
    first = sink.close(1.0)
    sink.submit_record(record(1))
    second = sink.close(1.0)
    assert first.written == 1
    assert second.submitted == 2 and second.dropped_unflushed == 1 and second.written == 1


def test_close_without_start_still_flushes() -> None:
    t = FakeTransport()
    sink = InfluxSink(t, run_id="r", worker="w", flush_interval_s=0.05)  # type: ignore[arg-type]
    sink.submit_record(record(1))
    assert sink.close(1.0).written == 1


def test_health_points_carry_the_sinks_own_counts() -> None:
    t = FakeTransport()
    sink = make_sink(t, max_points=3, flush_interval_s=30.0)
    for i in range(5):
        sink.submit_record(record(i))
    sink.submit_worker_health(4, 12.5, 1.25, ts_ns=99)
    sink.close(1.0)
    health = [line for line in t.lines if line.startswith("llm_worker")]
    assert health == [
        "llm_worker,run_id=r,worker=w users=4i,cpu_percent=12.5,loop_lag_ms=1.25,sink_buffered=3i,sink_dropped=2i 99"
    ]


def test_events_use_the_sinks_run_id() -> None:
    t = FakeTransport()
    sink = make_sink(t)
    sink.submit_event("failover", "backup", "primary open", ts_ns=5)
    sink.close(1.0)
    assert t.lines == ['llm_event,endpoint=backup,kind=failover,run_id=r message="primary open" 5']


def test_events_carry_the_worker_only_when_given() -> None:
    t = FakeTransport()
    sink = make_sink(t)
    sink.submit_event("circuit_open", "primary", "5 failures", 6, "host_1")
    sink.submit_event("drill_start", "primary", "drill 0", ts_ns=7, worker="master")
    sink.submit_event("test_stop")  # an old caller
    sink.close(1.0)
    assert t.lines[:2] == [
        'llm_event,endpoint=primary,kind=circuit_open,run_id=r,worker=host_1 message="5 failures" 6',
        'llm_event,endpoint=primary,kind=drill_start,run_id=r,worker=master message="drill 0" 7',
    ]
    assert t.lines[2].startswith('llm_event,kind=test_stop,run_id=r message="test_stop" ')


def test_breaker_points_use_the_sinks_run_id_and_worker() -> None:
    t = FakeTransport()
    sink = make_sink(t)
    sink.submit_breaker("primary", 2, ts_ns=8)
    sink.submit_breaker("backup", 0)
    sink.close(1.0)
    assert t.lines[0] == "llm_breaker,endpoint=primary,run_id=r,worker=w state=2i 8"
    head, _, ts = t.lines[1].rpartition(" ")
    assert head == "llm_breaker,endpoint=backup,run_id=r,worker=w state=0i" and int(ts) > 1_700_000_000 * 10**9


def test_user_request_points() -> None:
    t = FakeTransport()
    sink = make_sink(t)
    sink.submit_user_request(
        make_user_request(endpoint="backup", e2e_ms=900.5, ttft_ms=41.25, attempts=2, start_unix_ns=9)
    )
    timed_out = {"status": ErrorClass.TIMEOUT_TTFT, "e2e_ms": 30_000.0, "ttft_ms": None, "attempts": 3}
    sink.submit_user_request(make_user_request(endpoint=None, start_unix_ns=10, **timed_out))
    sink.close(1.0)
    assert t.lines == [
        "llm_user_request,endpoint=backup,preferred=primary,run_id=r,scenario=chat,status=ok,worker=w "
        "e2e_ms=900.500,ttft_ms=41.250,attempts=2i,failed_over=1i 9",
        "llm_user_request,endpoint=none,preferred=primary,run_id=r,scenario=chat,status=timeout_ttft,worker=w "
        "e2e_ms=30000.000,attempts=3i,failed_over=0i 10",
    ]


def test_drill_points_snapshot_their_figures() -> None:
    t = FakeTransport()
    sink = make_sink(t, flush_interval_s=30.0)
    figures = {
        "detect_s": {"p50": 1.5, "max": 2.0},
        "failover_s": {"p50": 1.75, "max": 2.5},
        "failback_s": {"p50": 3.0, "max": 4.0},
        "user_requests": 100,
        "user_errors": 2,
        "user_error_rate": 0.02,
        "passed": True,
    }
    sink.submit_drill(0, "primary", "http_503", figures, ts_ns=11)
    figures["detect_s"]["max"] = 99.0  # changed after submit: the point keeps the figures it was given
    figures["passed"] = False
    stats = sink.close(1.0)
    assert stats.written == 1 and stats.dropped == 0
    assert t.lines == [
        "llm_drill,drill=0,endpoint=primary,fault=http_503,run_id=r detect_p50_s=1.5,detect_max_s=2.0,"
        "failover_p50_s=1.75,failover_max_s=2.5,failback_max_s=4.0,user_requests=100i,user_errors=2i,"
        "user_error_rate=0.02,passed=1i 11"
    ]


def test_every_point_kind_counts_in_the_accounting() -> None:
    t = FakeTransport()
    sink = make_sink(t)
    sink.submit_record(record(1))
    sink.submit_worker_health(1, 1.0, 1.0)
    sink.submit_event("failover", "backup", worker="w")
    sink.submit_breaker("primary", 1)
    sink.submit_user_request(make_user_request())
    sink.submit_drill(0, "e", "f", {"user_requests": 1, "passed": 1})
    sink.submit_record((99, "unknown"))  # type: ignore[arg-type]  # an unknown kind is rejected and counted
    stats = sink.close(1.0)
    assert stats.submitted == 7 and stats.written == 6 and stats.dropped_rejected == 1
    assert sorted(line.split(",")[0] for line in t.lines) == sorted(
        ["llm_request", "llm_worker", "llm_event", "llm_breaker", "llm_user_request", "llm_drill"]
    )


def test_an_unencodable_point_is_counted_and_the_rest_written() -> None:
    t = FakeTransport()
    sink = make_sink(t)
    sink.submit_record(record(1))
    sink.submit_record(object())  # type: ignore[arg-type]
    sink.submit_record(record(2))
    stats = sink.close(1.0)
    assert stats.written == 2 and stats.dropped_rejected == 1 and stats.submitted == 3


def test_submit_is_cheap() -> None:
    sink = InfluxSink(FakeTransport(), max_points=10_000)  # type: ignore[arg-type]
    rec = record(1)
    n = 20_000
    start = time.perf_counter()
    for _ in range(n):
        sink.submit_record(rec)
    per_call_us = (time.perf_counter() - start) / n * 1e6
    assert per_call_us < 50  # generous for a noisy 2-core box; typically ~1 µs
    assert sink.stats().dropped_overflow == n - 10_000


@pytest.mark.parametrize("failures", [1, 2, 5, 20])
def test_backoff_grows_exponentially_with_jitter_and_a_cap(failures: int) -> None:
    lo = backoff_delay(failures, 0.5, 10.0, rand=lambda: 0.0)
    hi = backoff_delay(failures, 0.5, 10.0, rand=lambda: 1.0)
    ceiling = min(10.0, 0.5 * 2 ** (failures - 1))
    assert lo == pytest.approx(ceiling / 2) and hi == pytest.approx(ceiling)
