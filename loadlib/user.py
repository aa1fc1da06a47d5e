"""LLMUser: the Locust user class scenarios subclass to stream LLM requests and have them measured.

Each user holds one keep-alive connection per endpoint. A request is timed by `loadlib.stream`, turned into a
RequestRecord, reported to Locust's own table as one request whose response time is the E2E latency, and fired on
`hooks(environment).record` for the LLM statistics and the sinks.
"""

from __future__ import annotations

import gevent
from locust import events as _events  # noqa: F401  (locust first: gevent patches before anything else)
from locust.contrib.fasthttp import FastHttpUser

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from loadlib import tokens
from loadlib.attempt import build_record
from loadlib.connection import Connection
from loadlib.errors import ErrorClass
from loadlib.hooks import hooks
from loadlib.providers.base import ChatRequest, StreamResult
from loadlib.record import RequestRecord
from loadlib.runtime import runtime
from loadlib.stream import stream_call


class LLMRequestError(Exception):
    """The failure Locust shows in its Failures tab: error class and a short message, no ids, no secrets."""


Check = Callable[[StreamResult | None, RequestRecord], tuple[ErrorClass, str] | None]


@dataclasses.dataclass(frozen=True, slots=True)
class Reply:
    """What a scenario gets back: the record (as reported) and the parsed output (for history, schema checks)."""

    record: RequestRecord
    result: StreamResult | None

    @property
    def text(self) -> str:
        return self.result.text if self.result is not None else ""

    @property
    def ok(self) -> bool:
        return self.record.ok


class LLMUser(FastHttpUser):
    """Base class of every scenario user. Subclasses define tasks that call `self.chat(...)`."""

    abstract = True
    scenario = "chat"

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        self._connections: dict[str, Connection] = {}
        self._requests = 0

    def run(self) -> None:
        """Open this user's connection before its first timed request (unless --llm-cold-connect): a burst of users
        starting together would otherwise put their connection set-up, and the server's accept queue, into the first
        requests' TTFT, measuring the load generator's start-up instead of the endpoint."""
        if not runtime(self.environment).cold_connect:
            self.connection().preconnect()
        super().run()

    def on_stop(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    def connection(self) -> Connection:
        rt = runtime(self.environment)
        conn = self._connections.get(rt.endpoint.name)
        if conn is None:
            conn = self._connections[rt.endpoint.name] = Connection(rt.endpoint, rt.timeouts)
        return conn

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int | None = None,
        prompt_tokens_est: int | None = None,
        turn: int | None = None,
        scenario: str | None = None,
        intended_send_ms: float | None = None,
        check: Check | None = None,
        **request_options: Any,
    ) -> Reply:
        """Stream one chat request, report it, and return its Reply. Never raises for a failed request.

        `check(result, record)` runs after the stream and before reporting; returning (error class, message) turns a
        transport success into a scenario failure (schema_invalid, nondeterministic, truncated...)."""
        rt = runtime(self.environment)
        endpoint = rt.endpoint
        req = ChatRequest(messages=messages, max_tokens=max_tokens or rt.max_tokens, **request_options)
        http = rt.adapter.build(endpoint.base_path, endpoint.model, endpoint.api_key(), req)
        conn = self.connection()
        start_ns = time.time_ns()
        outcome = stream_call(conn, rt.adapter, http)
        schedule_lag = None
        if intended_send_ms is not None:
            schedule_lag = outcome.t0 * 1000.0 - intended_send_ms
        self._requests += 1
        completion_est = self._estimate_completion(outcome, rt.estimate_every)
        record = build_record(
            outcome,
            run_id=rt.run_id,
            scenario=scenario or self.scenario,
            endpoint=endpoint.name,
            provider=endpoint.provider,
            model=endpoint.model,
            worker_id=rt.worker_id,
            request_id=rt.next_request_id(),
            start_unix_ns=start_ns,
            prices=rt.prices,
            prompt_tokens_est=prompt_tokens_est,
            completion_tokens_est=completion_est,
            turn=turn,
            intended_send_ms=intended_send_ms,
            schedule_lag_ms=schedule_lag,
        )
        if check is not None and record.ok:
            verdict = check(outcome.result, record)
            if verdict is not None:
                record = dataclasses.replace(record, status=verdict[0], error_message=verdict[1])
        self._report(record)
        return Reply(record, outcome.result)

    def _estimate_completion(self, outcome: Any, every: int) -> int | None:
        """tiktoken count of the output, after the stream ended and in a thread so other streams keep their timing.

        Always when the server sent no usage; for 1 in `every` requests otherwise, to measure the deviation."""
        result = outcome.result
        if result is None:
            return None
        has_usage = result.usage is not None and result.usage.completion_tokens is not None
        if has_usage and (every <= 0 or self._requests % every):
            return None
        text = "".join(result.text_by_choice.values()) + result.reasoning + result.refusal
        text += "".join(tc.arguments for tc in result.tool_calls)
        if not text:
            return 0
        return gevent.get_hub().threadpool.apply(tokens.count_text, (text,))

    def _report(self, record: RequestRecord) -> None:
        env = self.environment
        exc = None
        if record.status is not ErrorClass.OK:
            exc = LLMRequestError(f"{record.status.value}: {record.error_message or ''}".rstrip(": "))
        env.events.request.fire(
            request_type=record.endpoint,
            name=record.scenario,
            response_time=record.e2e_ms or 0.0,
            response_length=record.response_bytes,
            response=None,
            context={},
            exception=exc,
            start_time=record.start_unix_ns / 1e9,
            url=None,
        )
        hooks(env).record.fire(record=record)


def _install() -> None:
    from locust import events

    from loadlib.plugin import install

    install(events)


_install()
