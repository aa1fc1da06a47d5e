"""The mock as if behind an LLM gateway, over real HTTP to a real mock process: a held stream end measured on raw
bytes against the ground truth, and a long-document canary quoted only when truncation kept it, while the usage
reports the prompt as sent. Timing is asserted as loose bounds."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from loadlib.data import canary
from loadlib.mock import MockConfig, MockProcess, start_subprocess
from loadlib.records.tokens import count_chat
from tests.support.http_bytes import response_complete

pytestmark = pytest.mark.integration

CONFIG = MockConfig(ttft_ms=20, itl_ms=5, output_tokens=10, usage_prompt="sent")
CODE = canary.code_for("gateway-doc")
DOC = " ".join(["The supplier shall deliver the goods within thirty days of the order."] * 500)
LONG = [
    {"role": "system", "content": "Summarise the document. " + canary.INSTRUCTION},
    {"role": "user", "content": canary.with_canary(DOC, CODE)},
]


@pytest.fixture(scope="module")
def mock() -> Iterator[MockProcess]:
    with start_subprocess(CONFIG, seed=5) as proc:
        yield proc


@dataclass
class Raw:
    headers: dict[str, str]
    body: bytes  # de-chunked
    raw: bytes  # as received, chunk framing kept
    stamps: list[tuple[float, int]]  # (perf_counter seconds, bytes received so far) after each recv

    def arrival(self, marker: bytes, nth: int = 1) -> float:
        """When the end of the nth occurrence of `marker` had arrived."""
        at = -1
        for _ in range(nth):
            at = self.raw.index(marker, at + 1)
        end = at + len(marker)
        return next(t for t, size in self.stamps if size >= end)

    def datas(self) -> list[Any]:
        blocks = self.body.decode().split("\n\n")
        return [json.loads(d) for b in blocks if (d := b.partition("data: ")[2]) and d != "[DONE]"]


def post(port: int, path: str, payload: Any, x_mock: str = "") -> Raw:
    """One request on a new connection, stamping every recv until the last chunk (or Content-Length) arrives."""
    body = json.dumps(payload).encode()
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
    head += f"x-mock: {x_mock}\r\n\r\n" if x_mock else "\r\n"
    buf, stamps = b"", []
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(head.encode() + body)
        while not response_complete(buf):
            data = sock.recv(65536)
            assert data, f"closed early: {buf[-200:]!r}"
            buf += data
            stamps.append((time.perf_counter(), len(buf)))
    raw_head, _, rest = buf.partition(b"\r\n\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in raw_head.decode().split("\r\n")[1:])}
    offset = len(raw_head) + 4
    stamps = [(t, n - offset) for t, n in stamps]
    chunked = "content-length" not in headers
    return Raw(headers, _dechunk(rest) if chunked else rest, rest, stamps)


def _dechunk(raw: bytes) -> bytes:
    out, i = b"", 0
    while True:
        end = raw.index(b"\r\n", i)
        size = int(raw[i:end], 16)
        if size == 0:
            return out
        out += raw[end + 2 : end + 2 + size]
        i = end + 4 + size


def truth(port: int, reply: Raw) -> dict[str, Any]:
    rid = reply.headers["x-mock-request-id"]
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(f"GET /mock/truth?request_id={rid} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        buf = b""
        while data := sock.recv(65536):
            buf += data
    return json.loads(buf.partition(b"\r\n\r\n")[2])


def chat(port: int, messages: list[dict[str, Any]], x_mock: str = "", stream: bool = True) -> Raw:
    payload = {"model": "gpt-4o", "messages": messages, "stream": stream}
    if stream:
        payload["stream_options"] = {"include_usage": True}
    return post(port, "/v1/chat/completions", payload, x_mock)


def streamed_text(reply: Raw) -> str:
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in reply.datas() if c["choices"])


def usage(reply: Raw) -> dict[str, Any]:
    return next(c["usage"] for c in reply.datas() if c.get("usage"))


def test_terminal_events_arrive_after_the_delay(mock: MockProcess) -> None:
    reply = chat(mock.port, [{"role": "user", "content": "hello"}], "terminal_delay_ms=100")
    last_token = reply.arrival(b'"content":"', nth=1 + 10)  # the role chunk, then ten output events
    gap_ms = (reply.arrival(b"data: [DONE]") - last_token) * 1000
    finish_ms = (reply.arrival(b'"finish_reason":"stop"') - last_token) * 1000
    assert 90 <= gap_ms <= 160, gap_ms
    assert 90 <= finish_ms <= gap_ms, "the finish chunk is held with [DONE]"
    rec = truth(mock.port, reply)
    assert rec["outcome"] == "complete" and rec["output_events_sent"] == 10
    assert rec["planned_end_ms"] == pytest.approx(20 + 9 * 5 + 100)
    assert 95 <= rec["end_ms"] - rec["event_times_ms"][-1] <= 150
    assert rec["event_times_ms"][-1] < 20 + 9 * 5 + 30, "output events keep their times"


def test_truncation_before_the_canary_cuts_it_and_usage_reports_the_sent_count(mock: MockProcess) -> None:
    sent = count_chat(LONG)
    assert sent > 6000
    reply = chat(mock.port, LONG, "truncate_to=4000")
    assert CODE not in streamed_text(reply)
    assert usage(reply)["prompt_tokens"] == sent
    assert reply.headers["x-mock-billed-prompt-tokens"] == "4000"
    rec = truth(mock.port, reply)
    assert (rec["prompt_tokens"], rec["billed_prompt_tokens"], rec["reported_prompt_tokens"]) == (sent, 4000, sent)
    assert rec["canary"] == "cut"


@pytest.mark.parametrize("stream", [True, False])
def test_without_truncation_the_answer_begins_with_the_code(mock: MockProcess, stream: bool) -> None:
    reply = chat(mock.port, LONG, stream=stream)
    answer = streamed_text(reply) if stream else json.loads(reply.body)["choices"][0]["message"]["content"]
    assert answer.startswith(CODE + "\n") and canary.quoted(answer, CODE)
    assert (usage(reply) if stream else json.loads(reply.body)["usage"])["completion_tokens"] == 10
    rec = truth(mock.port, reply)
    assert rec["canary"] == "quoted" and rec["billed_prompt_tokens"] == rec["reported_prompt_tokens"]


def test_anthropic_quotes_the_code_a_kept_prompt_holds(mock: MockProcess) -> None:
    payload = {"model": "claude-x", "max_tokens": 50, "system": LONG[0]["content"], "messages": LONG[1:]}
    reply = post(mock.port, "/v1/messages", {**payload, "stream": True}, "truncate_to=100000")
    deltas = [e["delta"]["text"] for e in reply.datas() if e["type"] == "content_block_delta"]
    assert "".join(deltas).startswith(CODE + "\n")
    assert truth(mock.port, reply)["canary"] == "quoted"
