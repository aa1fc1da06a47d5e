"""The mock LLM server: routes, the LLM request handling (config, usage, context limit, faults), admin endpoints.

Runs on one asyncio loop with no framework: `Connection` frames HTTP, `jobs` write on deadlines, `render` holds
the bytes. Every LLM request gets an id, a plan and a ground-truth record before its first byte goes out.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import traceback
from collections import deque
from typing import Any

import orjson

from loadlib.mock.config import MockConfig, MockConfigError, parse_overrides, resolve
from loadlib.mock.connection import Connection
from loadlib.mock.httpwire import RequestHead, response_head
from loadlib.mock.jobs import BodyJob, StreamJob
from loadlib.mock.plan import (
    STATUS_FAULTS,
    Plan,
    billed_prompt_tokens,
    draw_variant,
    json_is_valid,
    make_plan,
    output_seed,
)
from loadlib.mock.prompt import LARGE_PROMPT_BYTES, PromptCounter, chat_messages, content_key
from loadlib.mock.render import (
    AnthropicStream,
    OpenAIStream,
    Stream,
    anthropic_body,
    bad_request,
    content_hash,
    context_error,
    offset_of,
    openai_body,
    status_error,
    text,
)
from loadlib.mock.schedule import Scheduler
from loadlib.mock.structured import answer_text, requested_schema, token_pieces
from loadlib.mock.truth import Stats, TruthLog, TruthRecord
from loadlib.tokens import get_encoding

JSON = ("content-type", "application/json")
SSE = [("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache")]
DEFAULT_TRUTH_LIMIT = 1000
DISPATCH_BATCH = 8  # requests handled per loop iteration, so a burst of arrivals cannot delay due token writes


def _api_for(path: str) -> str | None:
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/messages"):
        return "anthropic"
    return None


def _forced_tool(body: dict[str, Any]) -> str | None:
    """Name of the tool an Anthropic request forces with tool_choice (type "tool" or "any"), else None."""
    choice = body.get("tool_choice")
    if not isinstance(choice, dict):
        return None
    if choice.get("type") == "tool":
        return str(choice.get("name") or "tool")
    if choice.get("type") == "any":
        tools = body.get("tools") or []
        first = tools[0] if tools and isinstance(tools[0], dict) else {}
        return str(first.get("name") or "tool")
    return None


def _tool_input(content: str) -> Any:
    """A non-streamed tool_use input must be an object: a broken structured answer becomes an empty one."""
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _max_tokens(api: str, body: dict[str, Any]) -> int | None:
    value = body.get("max_tokens") if api == "anthropic" else body.get("max_completion_tokens", body.get("max_tokens"))
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"max_tokens must be a non-negative integer, got {value!r}")
    return value


def _seconds(value: float) -> str:
    return f"{value:g}"


def rate_limit_headers(api: str, retry_after_s: float) -> list[tuple[str, str]]:
    """What a 429 carries: Retry-After plus OpenAI's x-ratelimit-* (and Anthropic's own names on /v1/messages)."""
    s = _seconds(retry_after_s)
    headers = [
        ("retry-after", s),
        ("retry-after-ms", f"{retry_after_s * 1000:.0f}"),
        ("x-ratelimit-limit-requests", "60"),
        ("x-ratelimit-remaining-requests", "0"),
        ("x-ratelimit-reset-requests", f"{s}s"),
        ("x-ratelimit-limit-tokens", "150000"),
        ("x-ratelimit-remaining-tokens", "0"),
        ("x-ratelimit-reset-tokens", f"{s}s"),
    ]
    if api == "anthropic":
        reset = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + retry_after_s))
        headers += [
            ("anthropic-ratelimit-requests-limit", "60"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", reset),
            ("anthropic-ratelimit-tokens-limit", "150000"),
            ("anthropic-ratelimit-tokens-remaining", "0"),
            ("anthropic-ratelimit-tokens-reset", reset),
        ]
    return headers


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
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self.scheduler: Scheduler = None  # type: ignore[assignment]
        self.loop_time = time.monotonic
        self._server: asyncio.base_events.Server | None = None
        self._conns: set[Connection] = set()
        self._conn_seq = 0
        self._seq = 0
        self._pending: deque[tuple[Connection, RequestHead, float]] = deque()
        self._draining = False
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
        self._server = await self.loop.create_server(self._new_connection, self.host, self.port, backlog=4096)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for conn in list(self._conns):
            if conn.transport is not None:
                conn.transport.abort()
        await self._server.wait_closed()
        self._server = None

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
        api = _api_for(req.path)
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
        elif route == ("GET", "/v1/models"):
            model = {"id": "mock-llm", "object": "model", "created": 0, "owned_by": "loadlib"}
            conn.respond(200, [JSON], orjson.dumps({"object": "list", "data": [model]}))
        elif req.path in ("/health", "/mock/stats", "/mock/truth", "/mock/reset", "/mock/config"):
            conn.respond(405, [JSON], bad_request("openai", f"{req.method} not allowed on {req.path}"))
        else:
            conn.respond(404, [JSON], bad_request("openai", f"no route {req.method} {req.path}"))

    def stats_dict(self) -> dict[str, Any]:
        truth = {"truth_records": len(self.truth), "truth_stamp_bytes": self.truth.stamp_bytes}
        return {**self.stats.to_dict(), **truth, "config": self.config_dict()}

    def config_dict(self) -> dict[str, Any]:
        return {name: getattr(self.config, name) for name in self.config.__dataclass_fields__}

    def reset(self) -> None:
        self.stats.reset(keep_open=len(self._conns))
        self.truth.clear()

    def _truth(self, conn: Connection, req: RequestHead) -> None:
        ids = req.query.get("request_id")
        if ids:
            rec = self.truth.get(ids[-1])
            if rec is None:
                conn.respond(404, [JSON], bad_request("openai", f"no ground truth for request {ids[-1]!r}"))
            else:
                conn.respond(200, [JSON], orjson.dumps(rec.to_dict()))
            return
        try:
            limit = int(req.query.get("limit", [str(DEFAULT_TRUTH_LIMIT)])[-1])
        except ValueError:
            conn.respond(400, [JSON], bad_request("openai", "limit must be an integer"))
            return
        records = [r.to_dict() for r in self.truth.last(limit)]
        conn.respond(200, [JSON], orjson.dumps({"count": len(records), "records": records}))

    def _config(self, conn: Connection, req: RequestHead) -> None:
        """GET shows the server defaults; POST changes them (JSON object or `key=value,...`) for later requests."""
        if req.method == "POST":
            try:
                raw = req.body.decode().strip()
                if raw.startswith("{"):
                    raw = ",".join(f"{k}={v}" for k, v in orjson.loads(raw).items())
                self.config = self.config.with_overrides(parse_overrides(raw, "mock config"))
            except (MockConfigError, ValueError, AttributeError) as exc:
                conn.respond(400, [JSON], bad_request("openai", str(exc)))
                return
        conn.respond(200, [JSON], orjson.dumps(self.config_dict()))

    # LLM endpoints
    def _next_id(self) -> str:
        self._seq += 1
        return f"{self._boot}{self._seq:010d}"

    def _llm(self, conn: Connection, req: RequestHead, api: str, t0: float) -> None:
        rid = self._next_id()
        rec = TruthRecord(rid, conn.id, api, self.truth_events)
        rec.client_request_id = req.headers.get("x-client-request-id")
        self.truth.add(rec)
        id_headers = [
            ("request-id" if api == "anthropic" else "x-request-id", "req_" + rid),
            ("x-mock-request-id", rid),
        ]
        try:
            body = orjson.loads(req.body)
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            model = body.get("model")
            if not isinstance(model, str) or not model:
                raise ValueError("model is required")
            cfg, bare_model = resolve(self.config, req.headers.get("x-mock"), model)
            if not isinstance(body.get("messages"), list) or not all(isinstance(m, dict) for m in body["messages"]):
                raise ValueError("messages must be a list of objects")
            messages = chat_messages(api, body)
            max_tokens = _max_tokens(api, body)
        except (ValueError, TypeError, MockConfigError) as exc:
            self._reject(conn, rec, id_headers, 400, bad_request(api, str(exc)), t0)
            return
        rec.model = bare_model
        rec.stream = body.get("stream") is True
        key = content_key(messages)
        chash = content_hash(key)
        rec.text_offset = offset_of(chash, self.seed)

        def proceed(prompt_tokens: int) -> None:
            if conn.closed:
                self.truth.complete(rec, "client_closed")
                return
            rec.prompt_tokens = prompt_tokens
            self._respond_llm(conn, rec, api, body, cfg, bare_model, max_tokens, id_headers, t0, chash)

        cached = self.prompts.cached(key)
        if cached is not None:
            proceed(cached)
        elif len(key) < LARGE_PROMPT_BYTES:
            proceed(self.prompts.store(key, self.prompts.count(messages)))
        else:
            fut = self.loop.run_in_executor(None, self.prompts.count, messages)

            def counted(f: asyncio.Future[int]) -> None:
                if f.exception() is not None:
                    self._reject(conn, rec, id_headers, 500, bad_request(api, f"mock error: {f.exception()}"), t0)
                else:
                    proceed(self.prompts.store(key, f.result()))

            fut.add_done_callback(counted)

    def _reject(
        self,
        conn: Connection,
        rec: TruthRecord,
        headers: list[tuple[str, str]],
        status: int,
        body: bytes,
        t0: float,
    ) -> None:
        rec.status = status
        rec.headers_sent_ms = rec.end_ms = (self.loop.time() - t0) * 1000.0
        self.truth.complete(rec, "error")
        conn.respond(status, [JSON, *headers], body)

    def _respond_llm(
        self,
        conn: Connection,
        rec: TruthRecord,
        api: str,
        body: dict[str, Any],
        cfg: MockConfig,
        model: str,
        max_tokens: int | None,
        id_headers: list[tuple[str, str]],
        t0: float,
        chash: int = 0,
    ) -> None:
        sent_tokens = rec.prompt_tokens or 0
        prompt_tokens = billed_prompt_tokens(cfg, sent_tokens)
        if prompt_tokens > cfg.context_limit:
            self._reject(conn, rec, id_headers, 400, context_error(api, cfg.context_limit, prompt_tokens), t0)
            return
        tool = _forced_tool(body) if api == "anthropic" else None
        variant = draw_variant(cfg, self.rng)
        if variant:
            rec.text_offset = offset_of(chash, self.seed, variant)
        extra_headers: list[tuple[str, str]] = []
        pieces: tuple[str, ...] | None = None
        answer: str | None = None
        schema = requested_schema(api, body, tool)
        if schema is not None:
            out_seed = output_seed(chash, variant, self.seed)
            valid = json_is_valid(cfg, out_seed)
            answer = answer_text(schema, out_seed, valid)
            pieces = token_pieces(answer)
            extra_headers.append(("x-mock-json", "valid" if valid else "invalid"))
        if variant:
            extra_headers.append(("x-mock-variant", str(variant)))
        if prompt_tokens != sent_tokens:
            extra_headers.append(("x-mock-billed-prompt-tokens", str(prompt_tokens)))
        plan = make_plan(cfg, max_tokens, self.rng, prompt_tokens, len(pieces) if pieces is not None else None)
        self._plan_into(rec, plan)
        if plan.fault != "none":
            self.stats.count_fault(plan.fault)
        status = STATUS_FAULTS.get(plan.fault)
        if status is not None:
            headers = id_headers + (rate_limit_headers(api, cfg.retry_after_s) if status == 429 else [])
            self._reject(conn, rec, headers, status, status_error(api, status, cfg.retry_after_s), t0)
            return
        mean_itl = plan.mean_itl_ms
        headers = [
            *id_headers,
            ("x-mock-planned-ttft-ms", f"{plan.ttft_ms:.3f}"),
            ("x-mock-planned-itl-ms", f"{cfg.itl_ms if mean_itl is None else mean_itl:.3f}"),
            ("x-mock-planned-output-tokens", str(plan.output_tokens)),
            ("x-mock-fault", plan.fault),
            *extra_headers,
        ]
        rec.status = 200
        created = int(time.time())
        offset = rec.text_offset or 0
        if rec.stream:
            renderer: Stream
            if api == "anthropic":
                renderer = AnthropicStream(
                    rec.request_id,
                    model,
                    offset,
                    plan.output_tokens,
                    plan.tokens_per_event,
                    prompt_tokens,
                    tool,
                    pieces,
                )
            else:
                opts = body.get("stream_options")
                include_usage = isinstance(opts, dict) and opts.get("include_usage") is True
                renderer = OpenAIStream(
                    rec.request_id,
                    model,
                    created,
                    offset,
                    plan.output_tokens,
                    plan.tokens_per_event,
                    prompt_tokens,
                    include_usage,
                    cfg.usage,
                    pieces,
                )
            head = response_head(200, SSE + headers, None, conn.keep_alive)
            StreamJob(self, conn, rec, renderer, plan, head, t0).start()
            return
        status, payload = self._body(api, rec, plan, model, created, tool, cfg, prompt_tokens, pieces)
        rec.status = status
        BodyJob(self, conn, rec, plan, status, [JSON, *headers], payload, t0).start()

    def _body(
        self,
        api: str,
        rec: TruthRecord,
        plan: Plan,
        model: str,
        created: int,
        tool: str | None,
        cfg: MockConfig,
        prompt: int,
        pieces: tuple[str, ...] | None,
    ) -> tuple[int, bytes]:
        """Non-streamed body. error_event becomes the provider's overloaded status; malformed a cut JSON body."""
        if plan.fault == "error_event":
            status = 529 if api == "anthropic" else 503
            return status, status_error(api, status)
        if pieces is not None:
            content = "".join(pieces[: plan.output_tokens])
        else:
            content = text(rec.text_offset or 0, plan.output_tokens)
        if api == "anthropic":
            stop = "max_tokens" if plan.finish_reason == "length" else ("tool_use" if tool else "end_turn")
            tool_input = _tool_input(content) if pieces is not None else None
            payload = anthropic_body(rec.request_id, model, content, stop, tool, prompt, plan.output_tokens, tool_input)
        else:
            payload = openai_body(
                rec.request_id,
                model,
                created,
                content,
                plan.finish_reason,
                prompt,
                plan.output_tokens,
                cfg.usage != "none",
            )
        if plan.fault == "malformed":
            payload = payload[: len(payload) // 2]
        return 200, payload

    @staticmethod
    def _plan_into(rec: TruthRecord, plan: Plan) -> None:
        rec.fault = plan.fault
        rec.tokens_per_event = plan.tokens_per_event
        rec.planned_ttft_ms = plan.ttft_ms
        rec.planned_itl_ms.extend(plan.itl_ms[: rec.event_cap])
        rec.planned_end_ms = plan.end_ms
        rec.planned_output_tokens = plan.output_tokens
