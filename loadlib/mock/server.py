"""The mock LLM server: connections, routes, the admin endpoints, and the order of work on an LLM request.

Runs on one asyncio loop with no framework: `Connection` frames HTTP, `llm_request` parses, `llm_response` decides
the headers and bytes, `jobs` write on deadlines, `render` holds the bytes. Every LLM request gets an id, a plan and
a ground-truth record before its first byte goes out.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import random
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable
from typing import Any

import orjson

from loadlib.mock import response_cache as rc
from loadlib.mock.connection import Connection
from loadlib.mock.engine import serve as engine
from loadlib.mock.engine.driver import EngineDriver
from loadlib.mock.engine.metrics import EngineMetrics
from loadlib.mock.faults import FaultError, FaultState, parse_fault
from loadlib.mock.httpwire import RequestHead, response_head
from loadlib.mock.jobs import BodyJob, StreamJob
from loadlib.mock.llm_request import LlmCall, api_for, forced_function, forced_tool, parse_call
from loadlib.mock.llm_response import (
    Answer,
    Header,
    planned_headers,
    prompt_answer,
    record_plan,
    request_id_headers,
    status_fault,
    stream_renderer,
    structured_answer,
    variant_headers,
    whole_body,
)
from loadlib.mock.plan import STATUS_FAULTS, billed_prompt_tokens, draw_variant, make_plan, output_seed
from loadlib.mock.prompt import LARGE_PROMPT_BYTES, PromptCount, PromptCounter, content_key, measure
from loadlib.mock.render import bad_request, content_hash, context_error, offset_of
from loadlib.mock.response_cache import HEADER as CACHE_HEADER
from loadlib.mock.response_cache import HIT, HIT_OVERRIDES, MISS, ResponseCache, cache_key, parse_fields
from loadlib.mock.schedule import Scheduler
from loadlib.mock.truth import Stats, TruthLog, TruthRecord, truth_query
from loadlib.mockapi.config import MockConfig, MockConfigError, parse_overrides
from loadlib.records.tokens import get_encoding

JSON = ("content-type", "application/json")
SSE = [("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache")]
DEFAULT_TRUTH_LIMIT = 1000
DISPATCH_BATCH = 8  # requests handled per loop iteration, so a burst of arrivals cannot delay due token writes


class MockServer:
    """One mock LLM endpoint on one asyncio loop. Start with `await start()`; `url` is valid afterwards."""

    def __init__(
        self,
        config: MockConfig | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        seed: int = 0,
        truth_size: int = 100_000,
        truth_events: int = 1024,
        truth_mb: float = 128.0,
    ) -> None:
        self.config = config or MockConfig()
        self.host = host
        self.port = port
        self.seed = seed
        self.truth_events = truth_events
        self.rng = random.Random(seed)
        self.stats = Stats()
        self.truth = TruthLog(truth_size, int(truth_mb * 1024 * 1024))
        self.prompts = PromptCounter()
        self.responses = ResponseCache()
        self.metrics = EngineMetrics()
        self.driver: EngineDriver | None = None  # the batching engine (config.engine), None for fixed delays
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self.scheduler: Scheduler = None  # type: ignore[assignment]
        self.loop_time = time.monotonic
        self._server: asyncio.base_events.Server | None = None
        self._conns: set[Connection] = set()
        self._conn_seq = 0
        self._seq = 0
        self._pending: deque[tuple[Connection, RequestHead, float]] = deque()
        self._draining = False
        self.faults = FaultState(random.Random(seed ^ 0xFA17))  # own dice: a fault's rate keeps the plan's sequence
        self._fault_timer: asyncio.TimerHandle | None = None
        self._reopen_task: asyncio.Task[None] | None = None
        self._closed = False
        self._boot = f"{(os.getpid() * 7919 + int(time.time())) & 0xFFFFFF:06x}"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        get_encoding()  # load the tokenizer now, not inside the first timed request
        self.loop = asyncio.get_running_loop()
        self.loop_time = self.loop.time
        self.scheduler = Scheduler(self.loop)
        self.driver = engine.sync_driver(None, self.config, self.loop, self.metrics)
        await self._listen()

    async def _listen(self) -> None:
        self._server = await self.loop.create_server(self._new_connection, self.host, self.port, backlog=4096)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        self._closed = True
        if self._fault_timer is not None:
            self._fault_timer.cancel()
        if self._reopen_task is not None:
            self._reopen_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reopen_task
        server = self._stop_listening(None)
        if server is not None:
            await server.wait_closed()

    def _stop_listening(self, keep: Connection | None) -> asyncio.base_events.Server | None:
        """Close the listener and cut every connection but `keep` (which closes itself after its answer)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for conn in list(self._conns):
            if conn is not keep and conn.transport is not None:
                conn.transport.abort()
        return server

    # connections
    def _new_connection(self) -> Connection:
        self._conn_seq += 1
        return Connection(self, self._conn_seq)

    def connection_opened(self, conn: Connection) -> None:
        self._conns.add(conn)
        self.stats.connections_accepted += 1
        self.stats.connections_open += 1

    def connection_closed(self, conn: Connection) -> None:
        self._conns.discard(conn)
        self.stats.connections_open -= 1

    # routing
    def enqueue(self, conn: Connection, req: RequestHead, t0: float) -> None:
        """Queue a complete request (t0 = when its last byte was read) for handling in small batches."""
        self._pending.append((conn, req, t0))
        if not self._draining:
            self._draining = True
            self.loop.call_soon(self._drain)

    def _drain(self) -> None:
        pending = self._pending
        for _ in range(min(DISPATCH_BATCH, len(pending))):
            conn, req, t0 = pending.popleft()
            if not conn.closed:
                try:
                    self.dispatch(conn, req, t0)
                except Exception as exc:  # a mock bug must cost one request, not the connection or the loop
                    traceback.print_exc()
                    if conn.busy and conn.job is None and not conn.closed:
                        conn.respond(500, [JSON], bad_request("openai", f"mock error: {exc!r}"), keep_alive=False)
        if pending:
            self.loop.call_soon(self._drain)
        else:
            self._draining = False

    def dispatch(self, conn: Connection, req: RequestHead, t0: float) -> None:
        api = api_for(req.path)
        if api is not None:
            if req.method != "POST":
                conn.respond(405, [JSON, ("allow", "POST")], bad_request(api, "use POST"))
                return
            self.stats.requests += 1
            self._llm(conn, req, api, t0)
            return
        route = (req.method, req.path)
        if route == ("GET", "/health"):
            conn.respond(200, [("content-type", "text/plain")], b"ok")
        elif route == ("GET", "/mock/stats"):
            conn.respond(200, [JSON], orjson.dumps(self.stats_dict()))
        elif route == ("GET", "/mock/truth"):
            self._truth(conn, req)
        elif route == ("POST", "/mock/reset"):
            self.reset()
            conn.respond(200, [JSON], b'{"reset":true}')
        elif route in (("GET", "/mock/config"), ("POST", "/mock/config")):
            self._config(conn, req)
        elif route in (("GET", "/mock/fault"), ("POST", "/mock/fault")):
            self._fault(conn, req)
        elif route == ("GET", "/metrics"):
            body = engine.metrics_body(self.driver, self.metrics, self.stats.streams_active, "mock-llm")
            conn.respond(200, [("content-type", "text/plain; version=0.0.4; charset=utf-8")], body)
        elif route == ("GET", "/mock/capacity"):
            self._capacity(conn, req)
        elif route == ("GET", "/v1/models"):
            model = {"id": "mock-llm", "object": "model", "created": 0, "owned_by": "loadlib"}
            conn.respond(200, [JSON], orjson.dumps({"object": "list", "data": [model]}))
        elif req.path in ("/health", "/mock/stats", "/mock/truth", "/mock/reset", "/mock/config", "/mock/fault"):
            conn.respond(405, [JSON], bad_request("openai", f"{req.method} not allowed on {req.path}"))
        else:
            conn.respond(404, [JSON], bad_request("openai", f"no route {req.method} {req.path}"))

    def stats_dict(self) -> dict[str, Any]:
        truth = {"truth_records": len(self.truth), "truth_stamp_bytes": self.truth.stamp_bytes}
        return {**self.stats.to_dict(), **truth, "engine": engine.state(self.driver), "config": self.config_dict()}

    def config_dict(self) -> dict[str, Any]:
        return {name: getattr(self.config, name) for name in self.config.__dataclass_fields__}

    def reset(self) -> None:
        """Counters, truth and /metrics start again, and both caches forget: a run after it starts cold."""
        self.stats.reset(keep_open=len(self._conns))
        self.truth.clear()
        self.metrics = EngineMetrics()
        self.responses.clear()
        if self.driver is not None:
            self.driver.metrics = self.metrics
            self.driver.engine.kv.forget()

    def _truth(self, conn: Connection, req: RequestHead) -> None:
        status, body = truth_query(self.truth, req.query, DEFAULT_TRUTH_LIMIT)
        conn.respond(status, [JSON], body)

    def _config(self, conn: Connection, req: RequestHead) -> None:
        """GET shows the server defaults; POST changes them (JSON object or `key=value,...`) for later requests."""
        if req.method == "POST":
            try:
                raw = req.body.decode().strip()
                if raw.startswith("{"):
                    raw = ",".join(f"{k}={v}" for k, v in orjson.loads(raw).items())
                self.config = self.config.with_overrides(parse_overrides(raw, "mock config"))
                self.driver = engine.sync_driver(self.driver, self.config, self.loop, self.metrics)
            except (MockConfigError, ValueError, AttributeError) as exc:
                conn.respond(400, [JSON], bad_request("openai", str(exc)))
                return
        conn.respond(200, [JSON], orjson.dumps(self.config_dict()))

    def _capacity(self, conn: Connection, req: RequestHead) -> None:
        """The answer key (docs/mock.md#capacity), simulated in a worker thread so streams keep their timers."""
        params = engine.params_of(self.config)
        try:
            if params is None:
                raise ValueError("/mock/capacity answers for the batching engine: set engine=batching")
            work = engine.workload_of(req.query, self.config, self.truth)
            bounds = engine.bounds_of(req.query)
        except ValueError as exc:
            conn.respond(400, [JSON], bad_request("openai", str(exc)))
            return
        fut = self.loop.run_in_executor(None, engine.capacity_json, params, work, bounds, self.seed)

        def answered(f: asyncio.Future[bytes]) -> None:
            exc = f.exception()
            if not conn.closed:
                status, body = (500, bad_request("openai", f"mock error: {exc!r}")) if exc else (200, f.result())
                conn.respond(status, [JSON], body)

        fut.add_done_callback(answered)

    # faults on a timer (loadlib/mock/faults.py)
    def _fault(self, conn: Connection, req: RequestHead) -> None:
        """GET shows the running fault; POST starts one for `for_s` seconds (or ends it: kind none)."""
        if req.method == "POST":
            try:
                spec = parse_fault(req.body)
            except FaultError as exc:
                conn.respond(400, [JSON], bad_request("openai", str(exc)))
                return
            if self._fault_timer is not None:
                self._fault_timer.cancel()
                self._fault_timer = None
            if spec is None:
                self.faults.end()
            else:
                self.faults.start(spec)
                self._fault_timer = self.loop.call_later(spec.for_s, self._fault_over)
        body = orjson.dumps(self.faults.describe(self.config))
        refusing = self.faults.refusing
        conn.respond(200, [JSON], body, keep_alive=not refusing)
        self._sync_listener(conn)

    def _fault_over(self) -> None:
        """The window's end: revert by itself, so a drill ends even if its driver has died."""
        self._fault_timer = None
        self.faults.end()
        self._sync_listener(None)

    def _sync_listener(self, keep: Connection | None) -> None:
        """Listener closed (connections cut) while `refuse` runs; reopened on the same port otherwise."""
        if self.faults.refusing:
            self._stop_listening(keep)
        elif self._server is None and self._reopen_task is None and not self._closed:
            self._reopen_task = self.loop.create_task(self._reopen())

    async def _reopen(self) -> None:
        """Listen again on the same port; retried while something else holds it (said once on stderr)."""
        said = False
        while not self._closed:
            try:
                await self._listen()
                break
            except OSError as exc:
                if not said:
                    print(f"loadlib mock: cannot listen again on port {self.port}: {exc}; retrying", file=sys.stderr)
                    said = True
                await asyncio.sleep(0.5)
        self._reopen_task = None
        if self.faults.refusing:  # a new refuse began while the listener came back
            self._stop_listening(None)

    # LLM endpoints
    def _new_record(self, conn: Connection, req: RequestHead, api: str) -> TruthRecord:
        """A fresh id (boot prefix + sequence) and its ground-truth record, kept even if the request is rejected."""
        self._seq += 1
        rec = TruthRecord(f"{self._boot}{self._seq:010d}", conn.id, api, self.truth_events)
        rec.client_request_id = req.headers.get("x-client-request-id")
        self.truth.add(rec)
        return rec

    def _llm(self, conn: Connection, req: RequestHead, api: str, t0: float) -> None:
        """Record, parse, count the prompt (off the loop when large), then answer unless the client has gone."""
        rec = self._new_record(conn, req, api)
        rec.received_unix = time.time() - (self.loop.time() - t0)
        id_headers = request_id_headers(api, rec.request_id)
        try:
            call = parse_call(api, req.body, self.faults.config_for(self.config), req.headers.get("x-mock"))
        except (ValueError, TypeError, MockConfigError) as exc:
            self._reject(conn, rec, id_headers, 400, bad_request(api, str(exc)), t0)
            return
        rec.model = call.model
        rec.stream = call.stream
        call, cache_headers = self._response_cache(rec, call, req)
        id_headers += cache_headers
        key = content_key(call.messages)
        chash = content_hash(key)
        rec.text_offset = offset_of(chash, self.seed)

        def proceed(prompt: PromptCount) -> None:
            if conn.closed:
                self.truth.complete(rec, "client_closed")
                return
            rec.prompt_tokens = prompt.tokens
            self._respond_llm(conn, rec, call, id_headers, t0, chash, prompt)

        def failed(exc: BaseException) -> None:
            self._reject(conn, rec, id_headers, 500, bad_request(api, f"mock error: {exc}"), t0)

        self._count_prompt(key, call.messages, call.cfg.truncate_to, proceed, failed)

    def _count_prompt(
        self,
        key: bytes,
        messages: list[dict[str, Any]],
        truncate_to: int,
        proceed: Callable[[PromptCount], None],
        failed: Callable[[BaseException], None],
    ) -> None:
        """Cached counts and small prompts at once; a large prompt is measured in a worker thread, off the loop. A
        cached prompt is measured again only for its canary's position, the first time a request truncates it."""
        cached = self.prompts.cached(key)
        if cached is not None and not cached.needs_position(truncate_to):
            proceed(cached)
        elif len(key) < LARGE_PROMPT_BYTES:
            proceed(self.prompts.store(key, measure(messages, truncate_to, cached)))
        else:
            fut = self.loop.run_in_executor(None, measure, messages, truncate_to, cached)

            def counted(f: asyncio.Future[PromptCount]) -> None:
                exc = f.exception()
                if exc is not None:
                    failed(exc)
                else:
                    proceed(self.prompts.store(key, f.result()))

            fut.add_done_callback(counted)

    def _response_cache(self, rec: TruthRecord, call: LlmCall, req: RequestHead) -> tuple[LlmCall, list[Header]]:
        """Look the request up in the response cache (when `response_cache` names a key): a hit is answered at once,
        past the engine (HIT_OVERRIDES), with the stored answer; both say so in `x-cache` unless told not to."""
        fields = parse_fields(call.cfg.response_cache)
        if not fields:
            return call, []
        key = cache_key(call.api, fields, call.body, req.body, req.headers)
        rec.response_cache = self.responses.lookup(key)
        call = dataclasses.replace(call, cache_key=key)
        if rec.response_cache == HIT:
            cfg = call.cfg.with_overrides(HIT_OVERRIDES)
            call = dataclasses.replace(call, cfg=cfg, replay=self.responses.answer(key))
        return call, [(CACHE_HEADER, rec.response_cache.upper())] if call.cfg.response_cache_header == "on" else []

    def _reject(
        self,
        conn: Connection,
        rec: TruthRecord,
        headers: list[Header],
        status: int,
        body: bytes,
        t0: float,
    ) -> None:
        """An error answer: the record is closed as `error` with its timing, then the response goes out."""
        rec.status = status
        rec.headers_sent_ms = rec.end_ms = (self.loop.time() - t0) * 1000.0
        self.truth.complete(rec, "error")
        conn.respond(status, [JSON, *headers], body)

    def _respond_llm(
        self,
        conn: Connection,
        rec: TruthRecord,
        call: LlmCall,
        id_headers: list[Header],
        t0: float,
        chash: int,
        prompt: PromptCount,
    ) -> None:
        """Bill the prompt and check it against the context limit, plan the answer, then fail it or start writing."""
        cfg = call.cfg
        prompt_tokens = billed_prompt_tokens(cfg, prompt.tokens)
        rec.billed_prompt_tokens = prompt_tokens
        if prompt_tokens > cfg.context_limit:
            self._reject(conn, rec, id_headers, 400, context_error(call.api, cfg.context_limit, prompt_tokens), t0)
            return
        answer, headers = self._plan_answer(rec, call, chash, prompt, prompt_tokens)
        if call.cache_key is not None and rec.response_cache == MISS and answer.plan.fault == "none":
            self.responses.store(call.cache_key, rc.stored(answer, rec))
        status = STATUS_FAULTS.get(answer.plan.fault)
        if status is not None:
            fault_headers, payload = status_fault(call.api, status, cfg.retry_after_s)
            self._reject(conn, rec, id_headers + fault_headers, status, payload, t0)
            return
        rec.status = 200
        self._start_response(conn, rec, answer, [*id_headers, *headers], t0, prompt)

    def _plan_answer(
        self, rec: TruthRecord, call: LlmCall, chash: int, prompt: PromptCount, prompt_tokens: int
    ) -> tuple[Answer, list[Header]]:
        """Draw the variant, then the plan: that order of draws on the server's rng is part of its determinism (a
        response-cache hit draws them too, then replays its stored answer). The usage reports `usage_prompt`'s count;
        a prose answer quotes a canary the kept prompt holds."""
        tool = forced_tool(call.body) if call.api == "anthropic" else forced_function(call.body)
        variant = draw_variant(call.cfg, self.rng)
        if variant:
            rec.text_offset = offset_of(chash, self.seed, variant)
        out_seed = output_seed(chash, variant, self.seed)
        pieces, json_headers = structured_answer(call.api, call.body, tool, call.cfg, out_seed, call.max_tokens)
        rec.structured = pieces is not None
        wanted = rc.budget(call.replay, call.max_tokens, len(pieces) if pieces is not None else None)
        plan = make_plan(call.cfg, wanted[0], self.rng, prompt_tokens, wanted[1])
        record_plan(rec, plan)
        if plan.fault != "none":
            self.stats.count_fault(plan.fault)
        headers = [
            *planned_headers(plan, call.cfg),
            *json_headers,
            *variant_headers(variant, prompt.tokens, prompt_tokens),
        ]
        prose = pieces is None and tool is None and plan.output_tokens > 0
        reported, lead = prompt_answer(rec, call.cfg, prompt, prompt_tokens, prose)
        offset = rec.text_offset or 0
        answer = Answer(call, rec.request_id, int(time.time()), offset, plan, reported, tool, pieces, lead)
        return rc.replayed(answer, rec, call.replay), headers

    def _start_response(
        self, conn: Connection, rec: TruthRecord, answer: Answer, headers: list[Header], t0: float, prompt: PromptCount
    ) -> None:
        """Hand the response to its job: SSE events on their deadlines, or the whole body at the planned end; with
        the batching engine, on the steps that produce its tokens."""
        if self.driver is not None and rec.response_cache != HIT:
            tokens = (rec.billed_prompt_tokens or 0) + answer.plan.output_tokens
            if not self.driver.fits(tokens):
                payload = context_error(answer.call.api, self.driver.params.kv_cache_tokens, tokens)
                self._reject(conn, rec, headers, 400, payload, t0)
                return
            head = response_head(200, SSE + headers, None, conn.keep_alive) if rec.stream else None
            work = (head, stream_renderer(answer) if rec.stream else None, [JSON, *headers])
            engine.submit(self.driver, self, conn, rec, answer, work, t0, prompt)
            return
        if rec.stream:
            head = response_head(200, SSE + headers, None, conn.keep_alive)
            StreamJob(self, conn, rec, stream_renderer(answer), answer.plan, head, t0).start()
            return
        status, payload = whole_body(answer)
        rec.status = status
        BodyJob(self, conn, rec, answer.plan, status, [JSON, *headers], payload, t0).start()
