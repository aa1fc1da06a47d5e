"""The mock LLM server as a real subprocess over loopback: exact wire behaviour of every fault, keep-alive,
admin endpoints, CLI behaviour and ground truth against the plan."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from loadlib.mock import MockConfig, MockProcess, MockStartError, expected_text, start_in_thread, start_subprocess
from loadlib.records.tokens import count_chat, count_text

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"}]


@pytest.fixture(scope="module")
def mock() -> Iterator[MockProcess]:
    with start_subprocess(MockConfig(ttft_ms=5, itl_ms=1, output_tokens=8), seed=7) as proc:
        yield proc


@dataclass
class Wire:
    status: int
    headers: dict[str, str]
    body: bytes  # de-chunked
    chunked: bool
    terminated: bool  # zero-length chunk seen (chunked) or Content-Length bytes read
    eof: bool  # the server closed the connection
    head_s: float  # seconds from sending to the response head
    event_s: list[float] = field(default_factory=list)  # seconds from sending to the end of each SSE event

    def events(self) -> list[tuple[str | None, str]]:
        out = []
        for block in self.body.decode().split("\n\n"):
            if block:
                name = next((ln[7:] for ln in block.split("\n") if ln.startswith("event: ")), None)
                data = next((ln[6:] for ln in block.split("\n") if ln.startswith("data: ")), "")
                out.append((name, data))
        return out

    def json(self) -> Any:
        return json.loads(self.body)


def request_bytes(path: str, payload: Any, headers: dict[str, str] | None = None, method: str = "POST") -> bytes:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode() if payload is not None else b""
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def read_response(sock: socket.socket, t0: float, timeout: float = 10.0) -> Wire:
    """Read one response; chunked bodies are decoded incrementally, stamping each completed SSE event."""
    sock.settimeout(timeout)
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError(f"closed before the response head: {buf!r}")
        buf += data
    head_s = time.perf_counter() - t0
    head, buf = buf.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    wire = Wire(status, headers, b"", "content-length" not in headers, False, False, head_s)
    deadline = time.monotonic() + timeout
    while not wire.terminated and time.monotonic() < deadline:
        if wire.chunked:
            while not wire.terminated:
                size_end = buf.find(b"\r\n")
                if size_end < 0:
                    break
                size = int(buf[:size_end], 16)
                if len(buf) < size_end + 2 + size + 2:
                    break
                piece = buf[size_end + 2 : size_end + 2 + size]
                assert buf[size_end + 2 + size : size_end + 4 + size] == b"\r\n"
                buf = buf[size_end + 4 + size :]
                if size == 0:
                    wire.terminated = True
                    break
                before = wire.body.count(b"\n\n")
                wire.body += piece
                now = time.perf_counter() - t0
                wire.event_s += [now] * (wire.body.count(b"\n\n") - before)
        elif len(buf) >= int(headers["content-length"]):
            wire.body, wire.terminated = buf[: int(headers["content-length"])], True
        if wire.terminated:
            break
        data = sock.recv(65536)
        if not data:
            wire.eof = True
            if not wire.chunked:
                wire.body = buf
            break
        buf += data
    return wire


def call(
    mock: MockProcess,
    path: str,
    payload: Any = None,
    headers: dict[str, str] | None = None,
    method: str = "POST",
    sock: socket.socket | None = None,
    check_eof: bool = False,
) -> Wire:
    """One request on a new connection (or `sock`); `check_eof` waits 50 ms to see whether the server closes."""
    own = sock is None
    s = sock or socket.create_connection(("127.0.0.1", mock.port), timeout=10)
    try:
        t0 = time.perf_counter()
        s.sendall(request_bytes(path, payload, headers, method))
        wire = read_response(s, t0)
        if check_eof and not wire.eof:
            s.settimeout(0.05)
            with contextlib.suppress(TimeoutError):
                wire.eof = s.recv(1) == b""
        return wire
    finally:
        if own:
            s.close()


def openai(mock: MockProcess, x_mock: str = "", stream: bool = True, check_eof: bool = False, **extra: Any) -> Wire:
    payload = {"model": "gpt-4o", "messages": MESSAGES, "stream": stream, **extra}
    if stream:
        payload.setdefault("stream_options", {"include_usage": True})
    return call(mock, "/v1/chat/completions", payload, {"x-mock": x_mock} if x_mock else None, check_eof=check_eof)


def anthropic(mock: MockProcess, x_mock: str = "", stream: bool = True, **extra: Any) -> Wire:
    payload = {
        "model": "claude-x",
        "max_tokens": 100,
        "messages": MESSAGES[1:],
        "system": "Be brief.",
        "stream": stream,
    }
    return call(mock, "/v1/messages", {**payload, **extra}, {"x-mock": x_mock} if x_mock else None)


def get_json(mock: MockProcess, path: str, method: str = "GET") -> Any:
    wire = call(mock, path, None, method=method)
    assert wire.status == 200, wire.body
    return wire.json()


def truth(mock: MockProcess, wire: Wire) -> dict[str, Any]:
    return get_json(mock, "/mock/truth?request_id=" + wire.headers["x-mock-request-id"])


def openai_chunks(wire: Wire) -> list[dict[str, Any]]:
    return [json.loads(d) for _, d in wire.events() if d != "[DONE]"]


def contents(wire: Wire) -> list[str]:
    return [c["choices"][0]["delta"].get("content") or "" for c in openai_chunks(wire) if c.get("choices")]


# happy paths


def test_health_and_models(mock: MockProcess) -> None:
    wire = call(mock, "/health", method="GET")
    assert (wire.status, wire.body) == (200, b"ok")
    assert get_json(mock, "/v1/models")["object"] == "list"
    assert call(mock, "/nope", method="GET").status == 404
    assert call(mock, "/v1/chat/completions", method="GET").status == 405


def test_openai_stream_wire(mock: MockProcess) -> None:
    wire = openai(mock, check_eof=True)
    assert wire.status == 200 and wire.chunked and wire.terminated and not wire.eof
    assert wire.headers["content-type"].startswith("text/event-stream")
    rid = wire.headers["x-mock-request-id"]
    assert wire.headers["x-request-id"] == "req_" + rid
    assert float(wire.headers["x-mock-planned-ttft-ms"]) == 5.0
    assert float(wire.headers["x-mock-planned-itl-ms"]) == 1.0
    events = wire.events()
    assert events[-1] == (None, "[DONE]")
    chunks = openai_chunks(wire)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(c["id"] == "chatcmpl-" + rid for c in chunks)
    text = "".join(contents(wire))
    rec = truth(mock, wire)
    assert text == expected_text(rec["text_offset"], 8)
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    usage = chunks[-1]["usage"]
    assert chunks[-1]["choices"] == []
    assert usage["prompt_tokens"] == count_chat(MESSAGES) == rec["prompt_tokens"]
    assert usage["completion_tokens"] == 8 == rec["output_tokens_sent"]
    assert (rec["status"], rec["outcome"], rec["output_events_sent"]) == (200, "complete", 8)


def test_same_prompt_same_text_and_usage_placement(mock: MockProcess) -> None:
    a, b = openai(mock), openai(mock, "usage=finish")
    assert contents(a) == contents(b)
    finish = openai_chunks(b)[-1]
    assert finish["choices"][0]["finish_reason"] == "stop" and finish["usage"]["completion_tokens"] == 8
    none = openai_chunks(openai(mock, "usage=none"))
    assert not any("usage" in c for c in none)


def test_anthropic_stream_wire(mock: MockProcess) -> None:
    wire = anthropic(mock)
    assert wire.status == 200 and wire.terminated
    rid = wire.headers["x-mock-request-id"]
    assert wire.headers["request-id"] == "req_" + rid
    names = [n for n, _ in wire.events()]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[3:-3] == ["content_block_delta"] * 8
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    data = [json.loads(d) for _, d in wire.events()]
    assert data[0]["message"]["id"] == "msg_" + rid
    expected_prompt = count_chat([{"role": "system", "content": "Be brief."}, *MESSAGES[1:]])
    assert data[0]["message"]["usage"]["input_tokens"] == expected_prompt
    assert data[-2]["usage"] == {"output_tokens": 8}
    assert "".join(d["delta"]["text"] for d in data[3:-3]) == expected_text(truth(mock, wire)["text_offset"], 8)


def test_non_streaming_bodies(mock: MockProcess) -> None:
    oa = openai(mock, stream=False)
    assert oa.status == 200 and not oa.chunked
    body = oa.json()
    assert body["object"] == "chat.completion" and body["usage"]["completion_tokens"] == 8
    assert body["choices"][0]["message"]["content"] == "".join(contents(openai(mock)))
    an = anthropic(mock, stream=False).json()
    assert an["type"] == "message" and an["usage"]["output_tokens"] == 8 and an["stop_reason"] == "end_turn"


def test_max_tokens_caps_output(mock: MockProcess) -> None:
    wire = openai(mock, max_completion_tokens=3)
    assert len([c for c in contents(wire) if c]) == 3
    assert openai_chunks(wire)[-2]["choices"][0]["finish_reason"] == "length"
    data = [json.loads(d) for _, d in anthropic(mock, max_tokens=2).events()]
    assert data[-2]["delta"]["stop_reason"] == "max_tokens" and data[-2]["usage"]["output_tokens"] == 2


def test_tokens_per_event(mock: MockProcess) -> None:
    wire = openai(mock, "tokens_per_event=3")
    pieces = [c for c in contents(wire) if c]
    assert [count_text(p) for p in pieces] == [3, 3, 2]
    assert "".join(pieces) == "".join(contents(openai(mock)))


def test_anthropic_forced_tool(mock: MockProcess) -> None:
    tools = [{"name": "record", "description": "d", "input_schema": {"type": "object"}}]
    wire = anthropic(mock, tools=tools, tool_choice={"type": "tool", "name": "record"})
    data = [json.loads(d) for _, d in wire.events()]
    assert data[1]["content_block"]["type"] == "tool_use" and data[1]["content_block"]["name"] == "record"
    pieces = [d["delta"]["partial_json"] for d in data if d["type"] == "content_block_delta"]
    assert json.loads("".join(pieces)) == {"text": expected_text(truth(mock, wire)["text_offset"], 8)}
    assert data[-2]["delta"]["stop_reason"] == "tool_use"


# faults


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_rate_limit(mock: MockProcess, api: str) -> None:
    wire = (openai if api == "openai" else anthropic)(mock, "fault=rate_limit,retry_after_s=3", check_eof=True)
    assert wire.status == 429 and wire.terminated and not wire.eof
    h = wire.headers
    assert h["retry-after"] == "3"
    assert h["retry-after-ms"] == "3000"
    for kind in ("requests", "tokens"):
        assert int(h[f"x-ratelimit-limit-{kind}"]) > 0
        assert h[f"x-ratelimit-remaining-{kind}"] == "0"
        assert h[f"x-ratelimit-reset-{kind}"] == "3s"
    body = wire.json()
    if api == "openai":
        assert body["error"]["code"] == "rate_limit_exceeded" and "x-request-id" in h
    else:
        assert body["type"] == "error" and body["error"]["type"] == "rate_limit_error"
        assert h["anthropic-ratelimit-requests-remaining"] == "0"


@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("status", [500, 503])
def test_http_5xx(mock: MockProcess, api: str, status: int) -> None:
    wire = (openai if api == "openai" else anthropic)(mock, f"fault=http_{status}")
    assert wire.status == status
    body = wire.json()
    assert ("error" in body) if api == "openai" else (body["type"] == "error" and body["error"]["type"] == "api_error")
    assert truth(mock, wire)["status"] == status


def test_drop_closes_mid_body_without_terminator(mock: MockProcess) -> None:
    wire = openai(mock, "fault=drop,fault_at=3")
    assert wire.status == 200 and wire.eof and not wire.terminated
    assert len([c for c in contents(wire) if c]) == 3
    assert b"[DONE]" not in wire.body
    rec = truth(mock, wire)
    assert (rec["fault"], rec["outcome"], rec["output_tokens_sent"]) == ("drop", "dropped", 3)
    an = anthropic(mock, "fault=drop,fault_at=2")
    assert an.eof and not an.terminated
    assert [n for n, _ in an.events()].count("content_block_delta") == 2


def test_stall_pauses_after_fault_at(mock: MockProcess) -> None:
    wire = openai(mock, "fault=stall,fault_at=2,stall_ms=300")
    assert wire.terminated and len([c for c in contents(wire) if c]) == 8
    # events: role, t1, t2, (stall) t3 ...
    gap = wire.event_s[3] - wire.event_s[2]
    assert gap >= 0.2, wire.event_s
    rec = truth(mock, wire)
    times = rec["event_times_ms"]
    assert times[2] - times[1] >= 300
    assert rec["planned_itl_ms"][1] == pytest.approx(301.0)


def test_malformed_event_then_normal(mock: MockProcess) -> None:
    wire = openai(mock, "fault=malformed,fault_at=2")
    bad = []
    for _, data in wire.events():
        try:
            json.loads(data) if data != "[DONE]" else None
        except json.JSONDecodeError:
            bad.append(data)
    assert len(bad) == 1
    assert wire.terminated and wire.events()[-1] == (None, "[DONE]")
    good = [json.loads(d) for _, d in wire.events() if d not in bad and d != "[DONE]"]
    assert len([c for c in good if c.get("choices") and c["choices"][0]["delta"].get("content")]) == 8
    an = anthropic(mock, "fault=malformed,fault_at=1")
    assert an.events()[-1][0] == "message_stop"


def test_error_event_ends_stream_without_terminal(mock: MockProcess) -> None:
    wire = openai(mock, "fault=error_event,fault_at=2", check_eof=True)
    assert wire.terminated and not wire.eof
    last = json.loads(wire.events()[-1][1])
    assert last == {
        "error": {
            "message": "The server is overloaded, please try again later.",
            "type": "server_error",
            "code": "overloaded",
        }
    }
    assert b"[DONE]" not in wire.body and len([c for c in contents(wire) if c]) == 2
    an = anthropic(mock, "fault=error_event,fault_at=2")
    name, data = an.events()[-1]
    assert name == "error"
    assert json.loads(data) == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert b"message_stop" not in an.body


def test_no_terminal_ends_cleanly(mock: MockProcess) -> None:
    wire = openai(mock, "fault=no_terminal")
    assert wire.terminated and b"[DONE]" not in wire.body
    assert openai_chunks(wire)[-1]["usage"]["completion_tokens"] == 8
    an = anthropic(mock, "fault=no_terminal")
    assert an.terminated and [n for n, _ in an.events()][-1] == "message_delta"


def test_empty_stream(mock: MockProcess) -> None:
    wire = openai(mock, "fault=empty")
    assert wire.terminated and wire.events()[-1] == (None, "[DONE]")
    assert not any(contents(wire))
    assert openai_chunks(wire)[-1]["usage"]["completion_tokens"] == 0
    an = anthropic(mock, "fault=empty")
    assert "content_block_delta" not in [n for n, _ in an.events()]
    assert json.loads(an.events()[-2][1])["usage"]["output_tokens"] == 0


def test_hang_headers(mock: MockProcess) -> None:
    wire = openai(mock, "fault=hang_headers,stall_ms=300")
    assert wire.head_s >= 0.299
    assert wire.terminated and len([c for c in contents(wire) if c]) == 8
    assert truth(mock, wire)["headers_sent_ms"] >= 300


def test_faults_without_streaming(mock: MockProcess) -> None:
    dropped = openai(mock, "fault=drop", stream=False)
    assert dropped.status == 200 and dropped.eof and not dropped.terminated
    assert 0 < len(dropped.body) < int(dropped.headers["content-length"])
    cut = openai(mock, "fault=malformed", stream=False)
    assert cut.status == 200 and cut.terminated
    with pytest.raises(json.JSONDecodeError):
        cut.json()
    assert openai(mock, "fault=error_event", stream=False).status == 503
    overloaded = anthropic(mock, "fault=error_event", stream=False)
    assert overloaded.status == 529 and overloaded.json()["error"]["type"] == "overloaded_error"
    assert truth(mock, overloaded)["status"] == 529
    slow = anthropic(mock, "fault=stall,stall_ms=200", stream=False)
    assert slow.status == 200 and slow.head_s >= 0.2


def test_fault_rate_is_a_share(mock: MockProcess) -> None:
    statuses = [openai(mock, "fault=http_500,fault_rate=0.5", stream=False).status for _ in range(40)]
    assert 5 <= statuses.count(500) <= 35
    assert statuses.count(500) + statuses.count(200) == 40


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_context_limit(mock: MockProcess, api: str) -> None:
    wire = (openai if api == "openai" else anthropic)(mock, "context_limit=10")
    assert wire.status == 400
    prompt = truth(mock, wire)["prompt_tokens"]
    if api == "openai":
        assert prompt == count_chat(MESSAGES)
        assert wire.json() == {
            "error": {
                "message": f"This model's maximum context length is 10 tokens. However, your messages resulted in "
                f"{prompt} tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
    else:
        assert wire.json() == {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": f"prompt is too long: {prompt} tokens > 10 maximum"},
        }


def test_bad_settings_are_400_with_a_clear_message(mock: MockProcess) -> None:
    wire = openai(mock, "warp=9")
    assert wire.status == 400
    assert "x-mock: unknown key 'warp'" in wire.json()["error"]["message"]
    wire = call(mock, "/v1/messages", {"model": "c::ttft_ms=soon", "max_tokens": 5, "messages": MESSAGES[1:]})
    assert wire.status == 400
    assert "model suffix: ttft_ms must be a number" in wire.json()["error"]["message"]
    assert call(mock, "/v1/chat/completions", b"{not json").status == 400
    assert call(mock, "/v1/chat/completions", {"model": "m", "messages": ["hi"]}).status == 400
    assert call(mock, "/v1/chat/completions", {"model": "m", "messages": [], "max_tokens": "9"}).status == 400


def test_model_suffix_configures_and_is_stripped(mock: MockProcess) -> None:
    payload = {"model": "gpt-4o::output_tokens=2,ttft_ms=1", "messages": MESSAGES, "stream": True}
    wire = call(mock, "/v1/chat/completions", payload)
    assert len([c for c in contents(wire) if c]) == 2
    assert all(c["model"] == "gpt-4o" for c in openai_chunks(wire))


# connections, admin, ground truth


def test_keep_alive_reuses_one_connection(mock: MockProcess) -> None:
    get_json(mock, "/mock/reset", method="POST")
    with socket.create_connection(("127.0.0.1", mock.port), timeout=10) as sock:
        for i in range(4):
            api_path = "/v1/chat/completions" if i % 2 == 0 else "/v1/messages"
            payload = {"model": "m", "max_tokens": 5, "messages": MESSAGES[1:], "stream": i < 2}
            wire = call(mock, api_path, payload, sock=sock)
            assert wire.status == 200 and wire.terminated and not wire.eof
        # two requests pipelined in one write come back in order
        one = request_bytes("/v1/chat/completions", {"model": "m::output_tokens=1", "messages": MESSAGES})
        t0 = time.perf_counter()
        sock.sendall(one + one)
        first, second = read_response(sock, t0), read_response(sock, t0)
        assert first.status == second.status == 200
        assert first.headers["x-mock-request-id"] < second.headers["x-mock-request-id"]
    stats = get_json(mock, "/mock/stats")
    assert stats["requests"] == 6
    assert stats["connections_accepted"] == 1 + 1  # the reused socket, then this stats call


def test_client_disconnect_mid_stream(mock: MockProcess) -> None:
    with socket.create_connection(("127.0.0.1", mock.port), timeout=10) as sock:
        sock.sendall(
            request_bytes(
                "/v1/chat/completions", {"model": "m", "messages": MESSAGES, "stream": True}, {"x-mock": "itl_ms=50"}
            )
        )
        sock.recv(4096)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        rec = get_json(mock, "/mock/truth?limit=1")["records"][-1]
        if rec["outcome"] != "pending":
            break
        time.sleep(0.02)
    assert rec["outcome"] == "client_closed"
    assert openai(mock).status == 200


def test_truth_lookup_reset_and_limits(mock: MockProcess) -> None:
    wire = anthropic(mock, stream=False)
    rid = wire.headers["x-mock-request-id"]
    body_id = wire.json()["id"]
    assert get_json(mock, "/mock/truth?request_id=" + body_id)["request_id"] == rid
    assert get_json(mock, "/mock/truth?request_id=" + wire.headers["request-id"])["request_id"] == rid
    assert get_json(mock, "/mock/truth?limit=1")["records"][0]["request_id"] == rid
    assert call(mock, "/mock/truth?request_id=nope", method="GET").status == 404
    assert get_json(mock, "/mock/reset", method="POST") == {"reset": True}
    assert get_json(mock, "/mock/truth")["count"] == 0
    assert get_json(mock, "/mock/stats")["requests"] == 0


def test_truth_first_token_matches_plan(mock: MockProcess) -> None:
    errors, client_ttft = [], []
    for _ in range(50):
        wire = openai(mock, "ttft_ms=20,itl_ms=2,output_tokens=3")
        rec = truth(mock, wire)
        assert rec["planned_ttft_ms"] == 20.0
        errors.append(abs(rec["first_token_sent_ms"] - rec["planned_ttft_ms"]))
        client_ttft.append(wire.event_s[1] * 1000)
    assert statistics.median(errors) < 2.0
    assert statistics.median(client_ttft) >= 20.0


def test_runtime_config_endpoint(mock: MockProcess) -> None:
    original = get_json(mock, "/mock/config")
    try:
        wire = call(mock, "/mock/config", b"output_tokens=2")
        assert wire.json()["output_tokens"] == 2
        assert len([c for c in contents(openai(mock)) if c]) == 2
        assert call(mock, "/mock/config", b"bogus=1").status == 400
    finally:
        call(mock, "/mock/config", json.dumps({"output_tokens": original["output_tokens"]}).encode())
    assert get_json(mock, "/mock/config")["output_tokens"] == 8


# process control


def test_start_in_thread() -> None:
    with start_in_thread(MockConfig(ttft_ms=1, itl_ms=0, output_tokens=3)) as handle:
        with socket.create_connection(("127.0.0.1", handle.port), timeout=5) as sock:
            t0 = time.perf_counter()
            sock.sendall(request_bytes("/v1/chat/completions", {"model": "m", "messages": MESSAGES, "stream": True}))
            wire = read_response(sock, t0)
        assert wire.status == 200 and wire.terminated


def test_start_subprocess_reports_bad_flags() -> None:
    with pytest.raises(MockStartError, match="fault must be one of"):
        start_subprocess(extra_args=["--fault", "explode"], timeout=20)


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "loadlib.mock", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def test_cli_bad_flag_is_one_line_and_nonzero() -> None:
    proc = _spawn("--ttft-ms", "soon")
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert err.strip().count("\n") == 0 and "ttft_ms must be a number" in err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_cli_prints_port_and_exits_zero_on_signal(sig: signal.Signals) -> None:
    proc = _spawn("--port", "0")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("mock LLM listening on http://127.0.0.1:")
        assert "(OpenAI: /v1/chat/completions, Anthropic: /v1/messages)" in line
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    assert proc.returncode == 0
    assert "Traceback" not in err


def test_cli_help() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "loadlib.mock", "--help"], capture_output=True, text=True, cwd=ROOT, timeout=30
    )
    assert out.returncode == 0
    for flag in ("--ttft-ms", "--itl-ms", "--fault", "--fault-rate", "--cpu", "--seed", "x-mock"):
        assert flag in out.stdout


GEVENT_SCRIPT = """
from gevent import monkey
monkey.patch_all()
import urllib.request
from loadlib.mock import MockStartError, start_in_thread, start_subprocess
with start_subprocess(extra_args=["--ttft-ms", "1"], timeout=30) as mock:
    print(urllib.request.urlopen(mock.url + "/health", timeout=10).read().decode())
try:
    start_in_thread()
except MockStartError:
    print("thread refused")
print("exit", mock.proc.returncode)
"""


def test_start_subprocess_from_a_gevent_patched_process() -> None:
    out = subprocess.run([sys.executable, "-c", GEVENT_SCRIPT], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok", "thread", "refused", "exit", "0"]


def test_reset_empties_the_prefix_cache_and_the_response_cache() -> None:
    """After `POST /mock/reset` a request the response cache had seen is a miss again, and a prompt whose system
    prompt the engine had cached is prefilled whole."""
    system = {"role": "system", "content": "You answer questions about the mock. " * 12}

    def ask(handle: Any, question: str) -> tuple[str, int]:
        payload = {"model": "m", "max_tokens": 2, "messages": [system, {"role": "user", "content": question}]}
        wire = call(handle, "/v1/chat/completions", payload)
        assert wire.status == 200, wire.body
        return wire.headers["x-cache"], wire.json()["usage"]["prompt_tokens_details"]["cached_tokens"]

    with start_in_thread(MockConfig(engine="batching", response_cache="messages")) as handle:
        assert ask(handle, "one?") == ("MISS", 0)
        assert ask(handle, "one?")[0] == "HIT"
        assert ask(handle, "two?")[1] > 0  # the system prompt's blocks, cached by the first
        assert get_json(handle, "/mock/reset", method="POST") == {"reset": True}
        assert ask(handle, "two?") == ("MISS", 0)
        assert ask(handle, "one?")[0] == "MISS"


def test_a_response_cache_hit_replays_the_stored_answer() -> None:
    """A gateway returns the response it stored. Here every output is a fresh nondeterministic draw and the cache
    looks at the model only, yet each hit (the same question, another one, another max_tokens, streamed or not) gets
    the miss's text and length, and its truth record says so; with its header off the cache says nothing, and
    still answers."""
    cfg = MockConfig(response_cache="model", nondeterminism_rate=1.0, output_tokens=12, ttft_ms=5, itl_ms=1)

    def ask(handle: Any, question: str, max_tokens: int = 10, stream: bool = True) -> tuple[str, str, dict]:
        payload = {"model": "m", "max_tokens": max_tokens, "stream": stream}
        wire = call(handle, "/v1/chat/completions", dict(payload, messages=[{"role": "user", "content": question}]))
        assert wire.status == 200, wire.body
        said = "".join(contents(wire)) if stream else wire.json()["choices"][0]["message"]["content"]
        return wire.headers.get("x-cache", ""), said, truth(handle, wire)

    with start_in_thread(cfg) as handle:
        cache, first, miss = ask(handle, "one?")
        assert (cache, miss["planned_output_tokens"], miss["finish_reason"]) == ("MISS", 10, "length")
        assert first == expected_text(miss["text_offset"], 10)
        for cache, said, rec in (ask(handle, "one?"), ask(handle, "two?", 5, False), ask(handle, "three?", 64)):
            assert cache == "HIT" and said == first, (said, first)
            assert (rec["text_offset"], rec["planned_output_tokens"], rec["finish_reason"]) == (
                miss["text_offset"],
                10,
                "length",
            )
    with start_in_thread(dataclasses.replace(cfg, response_cache="")) as handle:
        offsets = {ask(handle, "one?")[2]["text_offset"] for _ in range(4)}
    assert len(offsets) > 1, "without the cache each answer is another draw: the replay is what keeps the text"
    with start_in_thread(dataclasses.replace(cfg, response_cache_header="off")) as handle:
        (_, first, miss), (cache, said, hit) = ask(handle, "one?"), ask(handle, "two?")
    assert cache == "" and said == first and (miss["response_cache"], hit["response_cache"]) == ("miss", "hit")
