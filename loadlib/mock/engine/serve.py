"""The server's side of the batching engine: building the driver from the settings, handing a request to it, and
the two routes it answers (`/metrics`, `/mock/capacity`). Kept apart so the server module stays about HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from loadlib.mock.connection import Connection
from loadlib.mock.engine.capacity import Bound, max_rate, max_users, parse_bound
from loadlib.mock.engine.driver import EngineDriver
from loadlib.mock.engine.jobs import EngineBodyJob, EngineStreamJob
from loadlib.mock.engine.metrics import EngineMetrics
from loadlib.mock.engine.params import EngineParams, engine_params
from loadlib.mock.engine.prefix import block_keys
from loadlib.mock.engine.seq import Seq
from loadlib.mock.engine.sim import Workload
from loadlib.mock.jobs import JobHost
from loadlib.mock.llm_response import Answer
from loadlib.mock.prompt import PromptCount
from loadlib.mock.render import Stream
from loadlib.mock.truth import TruthLog, TruthRecord
from loadlib.mockapi.config import ENGINE_KEYS, MockConfig

DEFAULT_PROMPT_TOKENS = 512  # the capacity workload's prompt when the mock has not seen a request yet
WORKLOAD_KEYS = ("prompt_tokens", "output_tokens", "shared_prefix_tokens")
CLIENT_KEYS = ("link_ms", "think_ms")  # the closed loop's client: its distance from the engine, its own time


def params_of(config: MockConfig) -> EngineParams | None:
    """The engine's parameters, or None for the fixed-delay mock."""
    if config.engine != "batching":
        return None
    return engine_params(config.engine_profile, {k: getattr(config, k) for k in ENGINE_KEYS})


def sync_driver(
    current: EngineDriver | None, config: MockConfig, loop: asyncio.AbstractEventLoop, metrics: EngineMetrics
) -> EngineDriver | None:
    """Keep the running engine while its parameters stand; new parameters start a new (empty) engine for later
    requests, and the old one finishes the requests it holds."""
    params = params_of(config)
    if params is None:
        return None
    if current is not None and current.params == params:
        return current
    return EngineDriver(loop, params, metrics)


def submit(
    driver: EngineDriver,
    host: JobHost,
    conn: Connection,
    rec: TruthRecord,
    answer: Answer,
    work: tuple[bytes | None, Stream | None, list[tuple[str, str]]],
    t0: float,
    prompt: PromptCount,
) -> None:
    """Hand a planned answer to the engine: a stream job (head, renderer) or a body job (headers)."""
    head, renderer, headers = work
    plan = answer.plan
    tokens = rec.billed_prompt_tokens or 0
    keys = block_keys(answer.call.messages, prompt.bounds, tokens, driver.params.block_size)
    seq = Seq(rec.request_id, t0, tokens, plan.output_tokens, keys)
    seq.finish_reason = plan.finish_reason
    job: EngineStreamJob | EngineBodyJob
    if renderer is not None and head is not None:
        job = EngineStreamJob(host, conn, rec, renderer, plan, head, t0).attach(driver, seq)
    else:
        job = EngineBodyJob(host, conn, rec, answer, headers, t0).attach(driver, seq)
    job.start()
    driver.submit(seq, job)


def metrics_body(driver: EngineDriver | None, metrics: EngineMetrics, streams_active: int, model: str) -> bytes:
    """Prometheus text. Without the engine, running is the streams being written and nothing waits."""
    if driver is None:
        return metrics.render(model, streams_active, 0, 0.0)
    kv, params = driver.engine.kv, driver.params
    cache = {
        "block_size": str(params.block_size),
        "enable_prefix_caching": str(params.prefix_caching),
        "engine": "0",
        "num_gpu_blocks": str(params.kv_blocks),
    }
    return metrics.render(model, len(driver.engine.running), driver.waiting, kv.used / max(1, kv.total), cache)


def state(driver: EngineDriver | None) -> dict[str, Any] | None:
    """The engine's load for `/mock/stats`: `max_lag_ms` is how late a step's timer fired at worst (a loop that
    cannot keep up)."""
    if driver is None:
        return None
    kv = driver.engine.kv
    return {
        "running": len(driver.engine.running),
        "waiting": driver.waiting,
        "kv_blocks_used": kv.used,
        "kv_blocks": kv.total,
        "preemptions": driver.engine.preemptions_total,
        "max_lag_ms": round(driver.max_lag_ms, 3),
    }


def workload_of(query: dict[str, list[str]], config: MockConfig, truth: TruthLog) -> Workload:
    """The query's workload; by default the output the mock is set to give, the mean prompt of every request
    completed since the last reset (steady, where the median of the last 200 moved between runs of one workload; the
    mean, as prefill costs per token) and `Workload`'s client (link and think time)."""
    seen = truth.mean_prompt_tokens()
    given = {k: int(query[k][-1]) for k in WORKLOAD_KEYS if k in query}
    client = {k: float(query[k][-1]) for k in CLIENT_KEYS if k in query}
    if any(v < 0 for v in client.values()):
        raise ValueError("link_ms and think_ms must be at least 0")
    prompt = given.get("prompt_tokens", round(seen) if seen else DEFAULT_PROMPT_TOKENS)
    output = given.get("output_tokens", config.output_tokens)
    return Workload(prompt, output, given.get("shared_prefix_tokens", 0), **client)


def bounds_of(query: dict[str, list[str]]) -> list[Bound]:
    bounds = [parse_bound(k, v[-1]) for k, v in query.items()]
    found = [b for b in bounds if b is not None]
    if not found:
        raise ValueError("give at least one bound, e.g. ttft_p95_ms=1000 (metrics ttft, tpot, e2e; any pNN)")
    return found


def capacity(params: EngineParams, workload: Workload, bounds: list[Bound], seed: int) -> dict[str, Any]:
    """The answer key (CPU-bound: the server runs it in a worker thread)."""
    return {
        "users": max_users(params, workload, bounds),
        "rate_per_s": round(max_rate(params, workload, bounds, seed=seed), 4),
        "bounds": {f"{b.metric}_p{round(b.q * 100)}_ms": b.ms for b in bounds},
        "workload": {
            "prompt_tokens": workload.prompt_tokens,
            "output_tokens": workload.output_tokens,
            "shared_prefix_tokens": workload.shared_prefix_tokens,
            "link_ms": workload.link_ms,
            "think_ms": workload.think_ms,
        },
        "params": {k: getattr(params, k) for k in params.__dataclass_fields__},
        "method": "simulation of the engine's step model (docs/mock.md, /mock/capacity)",
    }


def capacity_json(params: EngineParams, workload: Workload, bounds: list[Bound], seed: int) -> bytes:
    return orjson.dumps(capacity(params, workload, bounds, seed))
