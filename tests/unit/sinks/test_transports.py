"""The exact HTTP requests the transports make, and how each response maps to a WriteError, against a tiny local
HTTP server that records requests (no InfluxDB 2.x exists here)."""

from __future__ import annotations

import base64
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from loadlib.sinks.transports import (
    InfluxV1Transport,
    InfluxV2Transport,
    WriteError,
    classify_response,
    parse_retry_after,
    validate_url,
)

BODY = b'llm_request,run_id=r,status=ok e2e_ms=12.500,attempt=1i 1764400000000000000\nllm_event,kind=x message="m" 1'


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes


@dataclass
class RecordingServer:
    url: str
    requests: list[Recorded] = field(default_factory=list)
    responses: deque[tuple[int, dict[str, str], bytes]] = field(default_factory=deque)
    delay_s: float = 0.0


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    state = RecordingServer(url="")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            parts = urlsplit(self.path)
            state.requests.append(
                Recorded(
                    "POST", parts.path, parse_qs(parts.query), {k.lower(): v for k, v in self.headers.items()}, body
                )
            )
            if state.delay_s:
                time.sleep(state.delay_s)
            status, headers, payload = state.responses.popleft() if state.responses else (204, {}, b"")
            try:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (the slow-server tests): exactly what they check

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---- InfluxDB 2.x/3.x through influxdb-client -----------------------------------------------------------------


def test_v2_write_request_is_exactly_what_influxdb_2_expects(server: RecordingServer) -> None:
    t = InfluxV2Transport(server.url, token="tok-123", org="my org", bucket="locust", timeout_s=5)
    try:
        t.write(BODY)
    finally:
        t.close()
    assert len(server.requests) == 1
    req = server.requests[0]
    assert req.method == "POST"
    assert req.path == "/api/v2/write"
    assert req.query == {"org": ["my org"], "bucket": ["locust"], "precision": ["ns"]}
    assert req.headers["authorization"] == "Token tok-123"
    assert req.headers["content-type"].startswith("text/plain")
    assert "content-encoding" not in req.headers
    assert req.body == BODY


def test_v2_describe_never_shows_the_token(server: RecordingServer) -> None:
    t = InfluxV2Transport(server.url, token="tok-secret", org="o", bucket="b")
    assert "tok-secret" not in t.describe() and "tok-secret" not in repr(t.__dict__.get("url"))
    t.close()


@pytest.mark.parametrize(
    ("status", "headers", "body", "retryable", "retry_after", "rejected"),
    [
        (429, {"Retry-After": "7"}, b'{"code":"too many requests"}', True, 7.0, None),
        (503, {}, b'{"code":"unavailable"}', True, None, None),
        (500, {}, b"{}", True, None, None),
        (401, {}, b'{"code":"unauthorized","message":"unauthorized access"}', False, None, None),
        (404, {}, b'{"code":"not found","message":"bucket \\"locust\\" not found"}', False, None, None),
        (
            422,
            {},
            b'{"code":"unprocessable entity","message":"failure writing points to database: partial write: '
            b'points beyond retention policy dropped=2"}',
            False,
            None,
            2,
        ),
    ],
)
def test_v2_error_statuses_map_to_write_errors(
    server: RecordingServer,
    status: int,
    headers: dict[str, str],
    body: bytes,
    retryable: bool,
    retry_after: float | None,
    rejected: int | None,
) -> None:
    server.responses.append((status, {"Content-Type": "application/json", **headers}, body))
    t = InfluxV2Transport(server.url, token="t", org="o", bucket="locust")
    try:
        with pytest.raises(WriteError) as info:
            t.write(BODY)
    finally:
        t.close()
    err = info.value
    assert err.status == status
    assert err.retryable is retryable
    assert err.retry_after_s == retry_after
    assert err.rejected_points == rejected


def test_v2_connection_refused_is_retryable() -> None:
    t = InfluxV2Transport(f"http://127.0.0.1:{closed_port()}", token="t", org="o", bucket="b", timeout_s=2)
    try:
        with pytest.raises(WriteError) as info:
            t.write(BODY)
    finally:
        t.close()
    assert info.value.retryable and info.value.status is None


def test_v2_timeout_is_retryable(server: RecordingServer) -> None:
    server.delay_s = 2.0
    t = InfluxV2Transport(server.url, token="t", org="o", bucket="b", timeout_s=0.3)
    try:
        with pytest.raises(WriteError) as info:
            t.write(BODY)
    finally:
        t.close()
    assert info.value.retryable


# ---- InfluxDB 1.x /write --------------------------------------------------------------------------------------


def test_v1_write_request_with_basic_auth_and_retention_policy(server: RecordingServer) -> None:
    t = InfluxV1Transport(server.url + "/", "locust", rp="autogen", username="u", password="p w")
    try:
        t.write(BODY)
    finally:
        t.close()
    req = server.requests[0]
    assert req.path == "/write"
    assert req.query == {"db": ["locust"], "rp": ["autogen"], "precision": ["ns"]}
    assert req.headers["authorization"] == "Basic " + base64.b64encode(b"u:p w").decode()
    assert req.headers["content-type"] == "text/plain; charset=utf-8"
    assert req.body == BODY
    assert "p w" not in t.describe()


def test_v1_without_credentials_sends_no_auth(server: RecordingServer) -> None:
    t = InfluxV1Transport(server.url, "db1")
    t.write(BODY)
    t.close()
    req = server.requests[0]
    assert "authorization" not in req.headers
    assert req.query == {"db": ["db1"], "precision": ["ns"]}


def test_v1_creates_a_missing_database_then_writes(server: RecordingServer) -> None:
    server.responses.extend(
        [
            (404, {"Content-Type": "application/json"}, b'{"error":"database not found: \\"locust\\""}'),
            (200, {"Content-Type": "application/json"}, b'{"results":[{"statement_id":0}]}'),
            (204, {}, b""),
        ]
    )
    t = InfluxV1Transport(server.url, "locust")
    t.write(BODY)
    t.close()
    assert [r.path for r in server.requests] == ["/write", "/query", "/write"]
    assert parse_qs(server.requests[1].body.decode()) == {"q": ['CREATE DATABASE "locust"']}
    assert server.requests[2].body == BODY


def test_v1_partial_write_reports_the_rejected_count(server: RecordingServer) -> None:
    body = b'{"error":"partial write: field type conflict: input field \\"x\\" is type string dropped=3"}'
    server.responses.append((400, {"Content-Type": "application/json"}, body))
    t = InfluxV1Transport(server.url, "locust")
    with pytest.raises(WriteError) as info:
        t.write(BODY)
    t.close()
    assert not info.value.retryable and info.value.rejected_points == 3


def test_v1_connection_refused_is_retryable() -> None:
    t = InfluxV1Transport(f"http://127.0.0.1:{closed_port()}", "locust", timeout_s=2)
    with pytest.raises(WriteError) as info:
        t.write(BODY)
    t.close()
    assert info.value.retryable


# ---- pure helpers ---------------------------------------------------------------------------------------------


def test_classify_response() -> None:
    assert classify_response(204, {}, "") is None
    assert classify_response(200, None, "") is None
    err = classify_response(503, {"retry-after": "2.5"}, "busy")
    assert err is not None and err.retryable and err.retry_after_s == 2.5
    err = classify_response(400, {}, '{"error":"unable to parse \'x\': invalid field format"}')
    assert err is not None and not err.retryable and err.rejected_points is None
    err = classify_response(408, {}, "")
    assert err is not None and err.retryable


@pytest.mark.parametrize(("status", "unknown"), [(500, True), (503, True), (408, True), (429, False), (400, False)])
def test_an_error_status_that_may_follow_a_stored_write_is_an_unknown_outcome(status: int, unknown: bool) -> None:
    """InfluxDB answers a write that timed out inside it with 500 and may store it anyway; one stopping may answer
    writes it took with errors: such points count as `resent` (the database may hold them), not as never sent."""
    err = classify_response(status, {}, '{"error":"timeout"}')
    assert err is not None and err.unknown_outcome is unknown


def test_parse_retry_after() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") is None
    assert parse_retry_after("-1") is None
    assert parse_retry_after(None) is None


def test_validate_url() -> None:
    assert validate_url("http://influxdb:8086/") == "http://influxdb:8086"
    assert validate_url("https://example.com/influx") == "https://example.com/influx"
    for bad in ("influxdb:8086", "ftp://x", "http://", "http://user:pw@host:8086"):
        with pytest.raises(ValueError):
            validate_url(bad)
