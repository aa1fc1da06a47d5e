"""LLMUser: the Locust user class scenarios subclass to stream LLM requests and have them measured.

Each user holds one keep-alive connection per endpoint. A request is timed by `loadlib.transport.stream`, turned into
a RequestRecord, reported to Locust's own table as one request whose response time is the E2E latency, and handed to
the run context (LLM statistics, records, sinks, scenario results, loadlib's `record` event). In an open-loop run
(--arrival-rate) every request first waits for the node's next arrival slot and think time is skipped.
"""

from __future__ import annotations

import gevent
from locust import events
from locust.contrib.fasthttp import FastHttpUser

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

from loadlib.errors import ErrorClass
from loadlib.locust.context import RunContext, context
from loadlib.locust.fatal import backoff_s
from loadlib.locust.install import install, stop_run
from loadlib.logs import RateLimitedLog
from loadlib.metrics import scenarios as found
from loadlib.pacing import wait_for_slot
from loadlib.providers.base import ChatRequest, StreamResult
from loadlib.providers.errors_body import short
from loadlib.records import tokens
from loadlib.records.build import build_record
from loadlib.records.record import RequestRecord
from loadlib.transport.connection import Connection
from loadlib.transport.stream import stream_call

install(events)  # a user class needs loadlib's wiring on Locust's events; installing it again is a no-op
_UNFORESEEN = RateLimitedLog(logging.getLogger("loadlib.locust.user"), interval_s=30.0)


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
        self.context: RunContext = context(environment)
        self._connections: dict[str, Connection] = {}
        self._requests = 0
        self._fatal_streak = 0
        if self.context.arrivals is not None:  # users are made after test start, when the schedule is known
            self.wait_time = self.open_loop_wait_time

    @property
    def settings(self) -> Any:
        """The node's settings for this run (resolved at test start)."""
        settings = self.context.settings
        if settings is None:  # a user run outside a normal Locust start (tests, tools)
            self.context.start()
            settings = self.context.settings
        return settings

    def open_loop_wait_time(self) -> float:
        """In an open-loop run the arrival schedule decides when the next request goes: no think time."""
        return 0.0

    def run(self) -> None:
        """Open this user's connection before its first timed request (unless --llm-cold-connect): a burst of users
        starting together would otherwise put their connection set-up, and the server's accept queue, into the first
        requests' TTFT, measuring the load generator's start-up instead of the endpoint."""
        if not self.settings.cold_connect:
            self.connection().preconnect()
        super().run()

    def on_stop(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    def connection(self) -> Connection:
        rt = self.settings
        conn = self._connections.get(rt.endpoint.name)
        if conn is None:
            conn = self._connections[rt.endpoint.name] = Connection(rt.endpoint, rt.timeouts, rt.limits)
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
        rt = self.settings
        endpoint = rt.endpoint
        if intended_send_ms is None and self.context.arrivals is not None:
            intended_send_ms = wait_for_slot(self.context.arrivals, gevent.sleep)
            found.open_loop_sent(self.context.scenarios.results)
        req = ChatRequest(messages=messages, max_tokens=max_tokens or rt.max_tokens, **request_options)
        http = rt.adapter.build(endpoint.base_path, endpoint.model, endpoint.api_key(), req)
        start_ns = time.time_ns()
        outcome = stream_call(self.connection(), rt.adapter, http)
        self._requests += 1
        facts = {"scenario": scenario or self.scenario, "turn": turn, "start_unix_ns": start_ns}
        facts.update(prompt_tokens_est=prompt_tokens_est, intended_send_ms=intended_send_ms)
        try:
            record = self._record(rt, outcome, facts, check)
        except Exception as exc:  # a bug of ours (or of a scenario check): still one counted attempt
            record = self._internal_error_record(rt, outcome, facts, exc)
        self._report(record)
        self._after_attempt(outcome.fatal)
        return Reply(record, outcome.result)

    def _record(self, rt: Any, outcome: Any, facts: dict[str, Any], check: Check | None) -> RequestRecord:
        endpoint = rt.endpoint
        intended = facts["intended_send_ms"]
        record = build_record(
            outcome,
            run_id=rt.run_id,
            endpoint=endpoint.name,
            provider=endpoint.provider,
            model=endpoint.model,
            worker_id=rt.worker_id,
            request_id=rt.next_request_id(),
            prices=rt.prices,
            completion_tokens_est=self._estimate_completion(outcome, rt.estimate_every),
            schedule_lag_ms=outcome.t0 * 1000.0 - intended if intended is not None else None,
            redact=rt.redact,
            **facts,
        )
        if check is not None and record.ok:
            verdict = check(outcome.result, record)
            if verdict is not None:
                record = dataclasses.replace(record, status=verdict[0], error_message=rt.redact(verdict[1]))
        return record

    def _internal_error_record(self, rt: Any, outcome: Any, facts: dict[str, Any], exc: Exception) -> RequestRecord:
        _UNFORESEEN.error("loadlib failed on a finished request (%r); please report it", exc, exc_info=exc)
        endpoint = rt.endpoint
        return RequestRecord(
            run_id=rt.run_id,
            scenario=facts["scenario"],
            endpoint=endpoint.name,
            provider=endpoint.provider,
            model=endpoint.model,
            worker_id=rt.worker_id,
            request_id=rt.next_request_id(),
            turn=facts["turn"],
            start_unix_ns=facts["start_unix_ns"],
            e2e_ms=outcome.e2e_ms,
            status=ErrorClass.INTERNAL_ERROR,
            http_status=outcome.http_status,
            error_message=rt.redact(f"{type(exc).__name__}: {short(str(exc))}"),
            response_bytes=outcome.response_bytes,
        )

    def _after_attempt(self, fatal: str | None) -> None:
        """Tell the run's fatal-stop watch; after a failure that cannot heal, back off instead of spinning."""
        verdict = self.context.fatal.observe(fatal)
        if verdict is not None:
            stop_run(self.context, verdict)
        self._fatal_streak = self._fatal_streak + 1 if fatal else 0
        if self._fatal_streak:
            gevent.sleep(backoff_s(self._fatal_streak))

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
        self.context.record(record)
