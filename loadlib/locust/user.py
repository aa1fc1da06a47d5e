"""LLMUser: the Locust user class scenarios subclass to stream LLM requests and have them measured.

Each user holds one keep-alive connection per endpoint. A user-visible request goes through the node's dispatcher
(`loadlib.failover.dispatch`: which endpoint, retries, hedges, breakers); each attempt is timed by
`loadlib.transport.stream`, turned into a RequestRecord, reported to Locust's own table as one request whose response
time is its E2E latency (a hedge's cancelled loser excepted: see `_report`), and handed to the run context (LLM
statistics, records, sinks, scenario results, loadlib's `record` event); the user-visible request then goes to the
run context too. In an open-loop run (--arrival-rate)
every request first waits for the node's next arrival slot and think time is skipped; in a closed-loop run each user
sends its first request at a phase of its own (--llm-user-phase) and, with --llm-think-time, thinks as told.
"""

from __future__ import annotations

import gevent
from gevent import GreenletExit
from locust import events
from locust.contrib.fasthttp import FastHttpUser

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

from loadlib.errors import ErrorClass
from loadlib.failover.client_faults import delayed, made_outcome
from loadlib.failover.dispatch import UNJUDGED, Attempt, Delivery, Handle
from loadlib.locust.closed_loop import UserPacing
from loadlib.locust.context import RunContext, context
from loadlib.locust.fatal import backoff_s
from loadlib.locust.install import install, stop_run
from loadlib.locust.scenario_part import ScenarioSpec
from loadlib.logs import RateLimitedLog
from loadlib.metrics import scenarios as found
from loadlib.pacing import wait_for_slot
from loadlib.providers.base import ChatRequest, StreamResult
from loadlib.providers.errors_body import short
from loadlib.records import tokens
from loadlib.records.build import build_record
from loadlib.records.record import RequestRecord
from loadlib.records.user_request import UserRequest
from loadlib.settings import RunSettings, Target
from loadlib.transport.connection import Connection
from loadlib.transport.outcome import StreamOutcome
from loadlib.transport.stream import stream_call

install(events)  # a user class needs loadlib's wiring on Locust's events; installing it again is a no-op
_UNFORESEEN = RateLimitedLog(logging.getLogger("loadlib.locust.user"), interval_s=30.0)
CIRCUIT_OPEN_PAUSE_S = 0.05
NOT_SENT = "cancelled before it was sent"
CUT_OFF_ROW = " (cut off)"  # suffix of the scenario's name in Locust's table for attempts cut off by the run's end


class LLMRequestError(Exception):
    """The failure Locust shows in its Failures tab: error class and a short message, no ids, no secrets."""


Check = Callable[[StreamResult | None, RequestRecord], tuple[ErrorClass, str] | None]
"""`chat(check=...)`: `check(result, record)` on a successful attempt; `(ErrorClass, message)` makes it a failure of
that class, None keeps it a success."""
OnRecord = Callable[[RequestRecord, StreamResult | None], None]
"""`chat(on_record=...)`: `on_record(record, result)` with every attempt's final record, inside the attempt."""


@dataclasses.dataclass(frozen=True, slots=True)
class Reply:
    """What a scenario gets back: the record of the attempt whose answer the user got (as reported), its parsed
    output (for history, schema checks) and the user-visible request."""

    record: RequestRecord
    result: StreamResult | None
    user: UserRequest | None = None

    @property
    def text(self) -> str:
        """The answer's text (choice 0); empty when the request failed before any output."""
        return self.result.text if self.result is not None else ""

    @property
    def ok(self) -> bool:
        """Whether the attempt succeeded (its record's status is `ok`, after your check)."""
        return self.record.ok


class LLMUser(FastHttpUser):
    """Base class of every LLM load-test user: subclass it, write Locust `@task` methods that call `self.chat(...)`.

    Class attributes: `scenario` names the summary rows and Locust's table rows of its requests; `spec` (a
    `ScenarioSpec`) declares the scenario's data, prepared once before any request is timed and read with
    `self.data()`, and its default SLOs; `wait_time` is Locust's think time. `self.settings` holds the run's
    resolved settings and `self.run_context` loadlib's state of the run (its events: `self.run_context.events`)."""

    abstract = True
    scenario = "chat"
    spec: ScenarioSpec | None = None
    pool: dict[str, Any] | None = None  # a default endpoint pool (as in a --llm-pool file) when none is given

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        self.run_context: RunContext = context(environment)
        self._connections: dict[str, Connection] = {}
        self._requests = 0
        self._prompt_count: tuple[ChatRequest, int] | None = None  # the last request whose prompt we counted
        self._fatal_streak = 0
        self._pacing: UserPacing | None = None  # a closed loop's phase (loadlib.locust.closed_loop)
        if self.run_context.arrivals is not None:  # users are made after test start, when the schedule is known
            self.wait_time = self.open_loop_wait_time  # type: ignore[method-assign]  # Locust reads it per user
        elif self.run_context.closed_loop is not None:
            self._pacing = self.run_context.closed_loop.attach(self)

    @property
    def settings(self) -> Any:
        """The node's settings for this run (resolved at test start)."""
        settings = self.run_context.settings
        if settings is None:  # a user run outside a normal Locust start (tests, tools)
            self.run_context.start()
            settings = self.run_context.settings
        return settings

    def data(self) -> Any:
        """What this scenario's `spec.prepare(options)` built for the run's current options (built once, before the
        first request; again only when the spec's `signature(options)` changes)."""
        if self.spec is None:
            raise TypeError(f"{type(self).__name__} has no spec: set `spec = ScenarioSpec(...)` to have data")
        return self.run_context.scenarios.data(self.spec, self.run_context.options)

    def open_loop_wait_time(self) -> float:
        """In an open-loop run the arrival schedule decides when the next request goes: no think time."""
        return 0.0

    def run(self) -> None:  # type: ignore[misc]  # Locust's final run(), extended: it still runs, after the connects
        """Open this user's connection to each endpoint of the pool before its first timed request (unless
        --llm-cold-connect; one that cannot connect now is tried again by its first request): a burst of users
        starting together would otherwise put their connection set-up, and the server's accept queue, into the first
        requests' TTFT, measuring the load generator's start-up instead of the endpoint. Then, in a closed-loop run,
        it waits for its phase: users spawned together would otherwise move in lockstep (docs/metrics.md)."""
        if not self.settings.cold_connect:
            for name in self.settings.targets:
                self.connection(name).preconnect()
        if self._pacing is not None:
            self._wait_phase(self._pacing)
        super().run()

    def _wait_phase(self, pacing: UserPacing) -> None:
        """Sleep through the phase. A user stopped meanwhile (Locust kills at once a user that has not begun its
        tasks) closes its connections: neither on_stop nor the on_start it never began runs."""
        try:
            if pacing.phase_s > 0:
                gevent.sleep(pacing.phase_s)
        except GreenletExit:
            self._close_connections()
            raise
        pacing.begin()

    def on_stop(self) -> None:
        self._close_connections()

    def _close_connections(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    def connection(self, endpoint: str | None = None) -> Connection:
        """This user's connection to `endpoint` (default: the pool's first)."""
        rt = self.settings
        target = rt.targets[endpoint] if endpoint else next(iter(rt.targets.values()))
        conn = self._connections.get(target.name)
        if conn is None:
            conn = Connection(target.endpoint, target.timeouts, rt.limits, rt.keepalive_idle_s)
            self._connections[target.name] = conn
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
        on_record: OnRecord | None = None,
        **request_options: Any,
    ) -> Reply:
        """Stream one chat request, report it, and return its Reply. Never raises for a failed request.

        - `messages`: OpenAI-style messages (`{"role": "system"|"user"|"assistant"|"tool", "content": ...}`); the
          Anthropic adapter lifts system messages into its `system` field.
        - `max_tokens`: the output cap (default: --llm-max-tokens). `prompt_tokens_est`: your count of the prompt
          (`count_chat(messages)`, counted once beforehand), kept on the record, which falls back on it for
          tokens and cost when the server sends no usage.
        - `turn`: the turn number of a multi-turn conversation, kept on the record. `scenario`: the row name for this
          request (default: the class's `scenario`). `intended_send_ms`: for your own pacing (normally unset).
        - `check(result, record)` runs after the stream and before reporting, on successes only; returning
          `(ErrorClass, message)` turns the success into a failure of that class (schema_invalid, truncated,
          empty_response...), counted in the summary's error rows, Locust's failures and thresholds
          (`error_rate{class=truncated} < 1%`); returning None keeps it a success.
        - `on_record(record, result)` then sees every attempt's final record inside the attempt: counts kept there
          agree with the records even when the run's end stops the user as the answer arrives (after chat()
          returns, they would be lost).
        - `**request_options`: any other `ChatRequest` field: `temperature`, `json_schema`, `extra_body` (merged
          last into the JSON body: `tools`, `tool_choice`, ...), `extra_headers`, `stream`."""
        rt = self.settings
        if intended_send_ms is None and self.run_context.arrivals is not None:
            intended_send_ms = wait_for_slot(self.run_context.arrivals, self.run_context.sleep_until_slot)
            found.open_loop_sent(self.run_context.scenarios.results)
        req = ChatRequest(messages=messages, max_tokens=max_tokens or rt.max_tokens, **request_options)
        facts = {"scenario": scenario or self.scenario, "turn": turn, "user_request_id": rt.next_request_id()}
        facts.update(prompt_tokens_est=prompt_tokens_est, intended_send_ms=intended_send_ms)

        def attempt(name: str, number: int, hedge: bool, handle: Handle | None) -> Attempt:
            attempt_facts = dict(facts, attempt=number, hedge=hedge)
            return self._attempt(rt, rt.targets[name], req, attempt_facts, (check, on_record), handle)

        start_ns = time.time_ns()
        self.run_context.in_flight += 1
        try:
            delivery = self.run_context.dispatcher.send(attempt)
        finally:
            self.run_context.in_flight -= 1
        user = self._user_request(rt, delivery, facts, start_ns)
        self.run_context.user_request(user, delivery)
        answered = delivery.answered
        if answered is None:
            return Reply(self._circuit_open_record(rt, user), None, user)
        record, result = answered.value
        return Reply(record, result, user)

    def _attempt(
        self,
        rt: RunSettings,
        target: Target,
        req: ChatRequest,
        facts: dict[str, Any],
        hooks: tuple[Check | None, OnRecord | None],
        handle: Handle | None,
    ) -> Attempt:
        """One attempt to one endpoint: sent (or answered by a client-side drill fault), recorded, reported."""
        endpoint = target.endpoint
        http = target.adapter.build(endpoint.base_path, endpoint.model, endpoint.api_key(), req)
        conn = self.connection(target.name)
        facts["start_unix_ns"] = time.time_ns()
        if self.run_context.arrivals is None:  # a closed loop's starts, for the lockstep check
            self.run_context.lockstep.started(facts["start_unix_ns"])
        if facts["attempt"] > 1 or facts["hedge"]:
            facts["request_id"] = rt.next_request_id()
        outcome = self._send(target, conn, http, handle)
        if handle is not None and handle.cut and outcome.status is ErrorClass.CANCELLED:
            cut_off(outcome)
        self._requests += 1
        if facts.get("prompt_tokens_est") is None and _prompt_unreported(outcome):
            facts["prompt_tokens_est"] = self._count_prompt(req)
        try:
            record = self._record(rt, target, outcome, facts, hooks)
        except Exception as exc:  # a bug of ours (or of a scenario check): still one counted attempt
            record = self._internal_error_record(rt, target, outcome, facts, exc)
        self._report(record)
        self._after_attempt(outcome, handle.cancelled.wait if handle else gevent.sleep)
        done = Attempt(target.name, facts["attempt"], record.status, outcome.t0, record.ttft_ms, record.e2e_ms)
        done.headers, done.hedge, done.value = outcome.headers, facts["hedge"], (record, outcome.result)
        return done

    def _send(self, target: Target, conn: Connection, http: Any, handle: Handle | None) -> StreamOutcome:
        """The attempt on the wire, unless a client-side drill fault answers it (or delays it) first."""
        fault = self.run_context.dispatcher.fault(target.name)
        wait = handle.cancelled.wait if handle is not None else gevent.sleep
        delay = 0.0
        if fault is not None:
            made = made_outcome(fault, target.timeouts, wait)
            if made is not None:
                return made
            delay = float(fault.params.get("delay_ms", 1000.0)) / 1000.0
        if handle is not None:
            if handle.cancelled.is_set():  # cut off (its user stopped) before it went out: it never goes
                return not_sent()
            handle.conn = conn
        try:
            outcome = stream_call(conn, target.adapter, http, handle.first_output if handle is not None else None)
        finally:
            if handle is not None:
                handle.conn = None
        return delayed(outcome, delay) if delay else outcome

    def _record(
        self,
        rt: RunSettings,
        target: Target,
        outcome: Any,
        facts: dict[str, Any],
        hooks: tuple[Check | None, OnRecord | None],
    ) -> RequestRecord:
        endpoint = target.endpoint
        facts = dict(facts)
        intended = facts.pop("intended_send_ms")
        request_id = facts.pop("request_id", None) or facts["user_request_id"]
        record = build_record(
            outcome,
            run_id=rt.run_id,
            endpoint=endpoint.name,
            provider=endpoint.provider,
            model=endpoint.model,
            worker_id=rt.worker_id,
            request_id=request_id,
            prices=target.prices,
            completion_tokens_est=self._estimate_completion(outcome, rt.estimate_every),
            schedule_lag_ms=outcome.t0 * 1000.0 - intended if intended is not None else None,
            intended_send_ms=intended,
            redact=rt.redact,
            **facts,
        )
        check, on_record = hooks
        if check is not None and record.ok:
            verdict = check(outcome.result, record)
            if verdict is not None:
                record = dataclasses.replace(record, status=verdict[0], error_message=rt.redact(verdict[1]))
        if on_record is not None:  # in the attempt, not after chat() returns: the run's end may stop the user between
            on_record(record, outcome.result)
        return record

    def _internal_error_record(
        self, rt: RunSettings, target: Target, outcome: Any, facts: dict[str, Any], exc: Exception
    ) -> RequestRecord:
        _UNFORESEEN.error("loadlib failed on a finished request (%r); please report it", exc, exc_info=exc)
        endpoint = target.endpoint
        return RequestRecord(
            run_id=rt.run_id,
            scenario=facts["scenario"],
            endpoint=endpoint.name,
            provider=endpoint.provider,
            model=endpoint.model,
            worker_id=rt.worker_id,
            request_id=rt.next_request_id(),
            attempt=facts["attempt"],
            user_request_id=facts["user_request_id"],
            hedge=facts["hedge"],
            turn=facts["turn"],
            start_unix_ns=facts["start_unix_ns"],
            e2e_ms=outcome.e2e_ms,
            status=ErrorClass.INTERNAL_ERROR,
            http_status=outcome.http_status,
            error_message=rt.redact(f"{type(exc).__name__}: {short(str(exc))}"),
            response_bytes=outcome.response_bytes,
        )

    def _user_request(self, rt: RunSettings, delivery: Delivery, facts: dict[str, Any], start_ns: int) -> UserRequest:
        answered = delivery.answered
        message = answered.value[0].error_message if answered is not None and answered.value else None
        if answered is None:
            message = "every endpoint's circuit breaker is open: the request was not sent"
        return UserRequest(
            run_id=rt.run_id,
            scenario=facts["scenario"],
            worker_id=rt.worker_id,
            request_id=facts["user_request_id"],
            start_unix_ns=start_ns,
            preferred=delivery.preferred,
            endpoint=delivery.endpoint,
            status=delivery.status,
            attempts=len(delivery.attempts),
            e2e_ms=delivery.e2e_ms,
            ttft_ms=delivery.ttft_ms,
            hedged=delivery.hedged,
            hedged_won=delivery.hedged_won,
            error_message=None if delivery.ok else message,
        )

    def _circuit_open_record(self, rt: RunSettings, user: UserRequest) -> RequestRecord:
        """What a scenario gets when nothing was sent: a record of the refusal, not an attempt (never reported as
        one). The user pauses briefly, so a closed-loop user without think time does not spin on open breakers."""
        gevent.sleep(CIRCUIT_OPEN_PAUSE_S)
        target = rt.targets[user.preferred]
        return RequestRecord(
            run_id=rt.run_id,
            scenario=user.scenario,
            endpoint=target.name,
            provider=target.endpoint.provider,
            model=target.endpoint.model,
            worker_id=rt.worker_id,
            request_id=user.request_id,
            attempt=0,
            user_request_id=user.request_id,
            start_unix_ns=user.start_unix_ns,
            status=ErrorClass.CIRCUIT_OPEN,
            error_message=user.error_message,
        )

    def _after_attempt(self, outcome: StreamOutcome, wait: Callable[[float], Any] = gevent.sleep) -> None:
        """Tell the run's fatal-stop watch (a failure of the load generator itself stops the run at once); after a
        failure that cannot heal, back off instead of spinning (`wait`: the attempt's cancel event, so a user stopped
        meanwhile does not hold up the end of the run)."""
        watch = self.run_context.fatal
        fatal = outcome.fatal
        verdict = watch.client_fault(outcome.client_fault) or watch.observe(fatal or outcome.unreachable)
        if verdict is not None:
            stop_run(self.run_context, verdict)
        self._fatal_streak = self._fatal_streak + 1 if fatal or outcome.client_fault else 0
        if self._fatal_streak:
            wait(backoff_s(self._fatal_streak, watch.due_in()))

    def _count_prompt(self, req: ChatRequest) -> int:
        """tiktoken count of the request's prompt, in a thread (as `_estimate_completion`), once per request: its
        retries and hedges share it."""
        counted = self._prompt_count
        if counted is None or counted[0] is not req:
            counted = self._prompt_count = (req, gevent.get_hub().threadpool.apply(tokens.count_chat, (req.messages,)))
        return counted[1]

    def _estimate_completion(self, outcome: Any, every: int) -> int | None:
        """tiktoken count of the output, after the stream ended and in a thread so other streams keep their timing.

        Always when the server sent no usage; for 1 in `every` requests otherwise, to measure the deviation."""
        result = outcome.result
        if result is None:
            return 0 if outcome.status in UNJUDGED else None  # cancelled or cut off before any output
        has_usage = result.usage is not None and result.usage.completion_tokens is not None
        if has_usage and (every <= 0 or self._requests % every):
            return None
        text = "".join(result.text_by_choice.values()) + result.reasoning + result.refusal
        text += "".join(tc.arguments for tc in result.tool_calls)
        if not text:
            return 0
        counted = gevent.get_hub().threadpool.apply(tokens.count_text, (text,))
        return tokens.scaled(counted, len(text), result.text_dropped)

    def _report(self, record: RequestRecord) -> None:
        """Every attempt to the run context (records, LLM statistics, sinks); to Locust's table every attempt but a
        hedge's cancelled loser: Locust knows only successes and failures, and the loser is neither (its user got an
        answer), so its failure would fail the run and its success would count a response no user got
        (docs/failover.md, "Hedging"). An attempt cut off by the end of the run is neither either, but Locust's table
        counts it, so that its count agrees with the summary and the records: as a success (the end of a run fails
        nothing) in a row of its own, `SCENARIO (cut off)`, whose time is how long it ran (docs/metrics.md)."""
        if record.status is not ErrorClass.CANCELLED:
            self._fire_locust_request(record)
        self.run_context.record(record)

    def _fire_locust_request(self, record: RequestRecord) -> None:
        exc = None
        if record.status not in (ErrorClass.OK, ErrorClass.CUT_OFF):
            exc = LLMRequestError(f"{record.status.value}: {record.error_message or ''}".rstrip(": "))
        cut = record.status is ErrorClass.CUT_OFF
        self.environment.events.request.fire(
            request_type=record.endpoint,
            name=f"{record.scenario}{CUT_OFF_ROW}" if cut else record.scenario,
            response_time=record.e2e_ms or 0.0,
            response_length=record.response_bytes,
            response=None,
            context={},
            exception=exc,
            start_time=record.start_unix_ns / 1e9,
            url=None,
        )


def not_sent() -> StreamOutcome:
    """An attempt cancelled before its request went out: a user stopped just after spawning it. Without this check
    it was sent anyway and ran to its end unwatched, an answer counted for a user request that never ended."""
    out = StreamOutcome(status=ErrorClass.CANCELLED, message=NOT_SENT, e2e_ms=0.0)
    out.t0 = time.perf_counter()
    return out


def _prompt_unreported(outcome: StreamOutcome) -> bool:
    """An attempt whose record will count output tokens but got no prompt count from the server (cut off, a hedge's
    loser, a server that sends no usage): its prompt is counted here, off the event loop, so it has a cost (without
    one it was reported as a model missing from the price table)."""
    result = outcome.result
    if result is None:
        return outcome.status in UNJUDGED
    return result.usage is None or result.usage.prompt_tokens is None


def cut_off(outcome: StreamOutcome) -> None:
    """An attempt cancelled because its user was stopped (the run ended, a ramp-down): `cut_off`, with how long it
    ran and what arrived; its tokens and cost count as a hedge loser's do. Its age is from its start to now, the
    stop (its cancelled call returns at once), not its E2E, which its terminal event may have set long before."""
    took = max(0.0, time.perf_counter() - outcome.t0)
    outcome.status, unsent = ErrorClass.CUT_OFF, outcome.message == NOT_SENT
    if unsent:  # the server never saw it
        outcome.message = "cut off by the end of the run before it was sent (its user was stopped)"
        return
    outcome.message = (
        f"cut off by the end of the run {took:.1f} s after it was sent, {len(outcome.output_stamps_ms)} output "
        "events in (its user was stopped)"
    )
