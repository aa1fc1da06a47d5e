"""`python -m loadlib.mock`: run the mock LLM server until SIGINT/SIGTERM (exit 0) or until its parent dies."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from loadlib.mock.eventloop import new_event_loop
from loadlib.mock.server import MockServer
from loadlib.mockapi.config import (
    CONVERTERS,
    FAULTS,
    KEYS,
    QUOTE_CANARY_MODES,
    USAGE_MODES,
    USAGE_PROMPT_MODES,
    MockConfig,
    MockConfigError,
    flag_name,
)

PROG = "python -m loadlib.mock"
READY_PREFIX = "mock LLM listening on "
# Fewer young-generation collections: at 2,000 streams (20,000 events/s) the default (700, 10, 10) paused the loop
# 2-12 ms several times a second, and a request read after a pause starts its TTFT late (bench/streams_per_core.py:
# the client's TTFT error p99 +3.3 to +5.8 ms with the default, +1.6 to +1.8 with these, +1.7 with GC off).
GC_THRESHOLDS = (50_000, 20, 100)

_HELP = {
    "ttft_ms": "time to first output token, ms after the request's last byte",
    "itl_ms": "gap between output events, ms",
    "ttft_jitter_ms": "uniform +/- jitter on TTFT, ms (seeded)",
    "itl_jitter_ms": "uniform +/- jitter on each gap, ms (seeded)",
    "output_tokens": "output tokens per response (capped by the request's max_tokens -> finish_reason length)",
    "tokens_per_event": "tokens of text per SSE event",
    "usage": f"OpenAI usage placement: {', '.join(USAGE_MODES)}",
    "context_limit": "context window in tokens; a longer prompt gets the provider's context-length 400",
    "fault": f"injected fault: {', '.join(FAULTS)}",
    "fault_rate": "share of requests that get the fault, 0..1 (default 1 when --fault is set)",
    "fault_at": "output tokens sent before a mid-stream fault (stall, drop, malformed, error_event)",
    "stall_ms": "pause of the stall and hang_headers faults, ms",
    "retry_after_s": "Retry-After of the rate_limit fault, seconds",
    "ttft_per_1k_prompt_ms": "extra TTFT per 1,000 prompt tokens, ms (prefill cost)",
    "truncate_to": "silently cut prompts longer than N tokens and bill only N (0 = never)",
    "json_valid_rate": "share of structured-output requests answered with schema-valid JSON, 0..1",
    "structured_ratio": "a structured answer is this many times the tokens of the request's prose answer (0: the JSON "
    "alone); whitespace after the JSON fills it up",
    "response_cache": "a gateway's response cache keyed on these body fields and header:NAME parts joined by '+' "
    "(model+messages+temperature+header:x-team; empty: none): a repeat is answered at once with the stored answer, "
    "x-cache: HIT",
    "response_cache_header": "on or off: the response cache says x-cache: HIT or MISS, or nothing (a gateway that "
    "does not tell)",
    "nondeterminism_rate": "share of requests whose output differs from the request's usual output, 0..1",
    "usage_completion_scale": "the streamed usage reports the completion tokens sent times this (1.5: over-counts)",
    "terminal_delay_ms": "a stream's terminal events (finish, usage, [DONE] / message_stop) go out this long after "
    "its last output event, ms; a whole body waits as long (a gateway holding the end)",
    "usage_prompt": f"prompt tokens the usage reports: {', '.join(USAGE_PROMPT_MODES)} (sent: as sent, even when "
    "--truncate-to billed fewer, as a gateway counting the prompt itself)",
    "quote_canary": f"{', '.join(QUOTE_CANARY_MODES)}: begin the answer with a long-document canary's code when the "
    "kept prompt holds it, or never (a model that ignores the instruction)",
    "engine": "fixed (TTFT and ITL as set) or batching (a model of a server under load: docs/mock.md)",
    "engine_profile": "the batching engine's parameters: h20-8b or tiny-kv; the keys below override them",
    "step_base_ms": "batching: fixed cost of every engine step, ms",
    "prefill_ms_per_1k": "batching: step cost per 1,000 prompt tokens prefilled, ms",
    "decode_ms_per_seq": "batching: step cost per sequence decoded (ITL grows with the batch), ms",
    "max_num_seqs": "batching: most sequences running at once",
    "max_batched_tokens": "batching: token budget of one step (chunked prefill)",
    "kv_cache_tokens": "batching: KV cache size in tokens (full: queue, then preemption)",
    "block_size": "batching: tokens per KV block",
    "prefix_caching": "batching: on or off: cached prompt blocks (a shared system prompt) are not prefilled again",
}

EPILOG = """\
Per-request overrides, same keys: header `x-mock: ttft_ms=5,fault=drop` or model name `gpt-4o::ttft_ms=5,fault=drop`.
A model name ending in -<N>k (mock-8k, gpt-4-32k) has a context limit of N*1024 tokens unless overridden.
Endpoints: POST /v1/chat/completions, POST /v1/messages, GET /health, GET /mock/stats,
GET /mock/truth[?request_id=ID|limit=N], POST /mock/reset, GET|POST /mock/config,
GET|POST /mock/fault (a fault for a window, then back by itself: docs/mock.md),
GET /metrics (Prometheus, vLLM's names), GET /mock/capacity?ttft_p95_ms=X (batching: the answer key).
"""


_METAVARS = {
    "usage": "MODE",
    "fault": "FAULT",
    "fault_rate": "P",
    "retry_after_s": "S",
    "json_valid_rate": "P",
    "structured_ratio": "X",
    "response_cache": "KEY",
    "response_cache_header": "ON_OFF",
    "nondeterminism_rate": "P",
    "usage_completion_scale": "X",
    "usage_prompt": "MODE",
    "quote_canary": "MODE",
    "engine": "ENGINE",
    "engine_profile": "NAME",
    "prefix_caching": "ON_OFF",
}


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"port must be an integer, got {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535, got {port}")
    return port


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line, not the whole usage block."""
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _arg_type(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return convert(text)
        except MockConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Mock OpenAI/Anthropic streaming LLM server with fault injection and ground-truth timing.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8000, help="port; 0 picks a free one and prints it (default 8000)")
    p.add_argument("--seed", type=int, default=0, help="seed of jitter, fault dice and output text (default 0)")
    p.add_argument("--cpu", type=int, default=None, help="pin this process to one CPU core (benchmarks)")
    p.add_argument("--uvloop", action="store_true", help="use uvloop if installed (faster I/O, 1 ms timer resolution)")
    p.add_argument("--truth-size", type=int, default=100_000, help="ground-truth records kept (ring, default 100000)")
    p.add_argument("--truth-events", type=int, default=1024, help="event stamps kept per record (default 1024)")
    p.add_argument("--truth-mb", type=float, default=128.0, help="memory cap of stored stamps, MiB (default 128)")
    p.add_argument("--watch-parent", action="store_true", help="exit when the parent process dies")
    defaults = MockConfig()
    g = p.add_argument_group("default behaviour (each can be overridden per request)")
    for f in dataclasses.fields(MockConfig):
        default = getattr(defaults, f.name)
        g.add_argument(
            flag_name(f.name),
            dest=f.name,
            type=_arg_type(CONVERTERS[f.name]),
            default=default,
            metavar=_METAVARS.get(f.name, "MS" if f.name.endswith("_ms") else "N"),
            help=_HELP[f.name]
            + (
                ""
                if default is None
                else f" (default {default:g})"
                if isinstance(default, float)
                else f" (default {default})"
            ),
        )
    return p


async def _serve(server: MockServer, watch_parent: bool) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if watch_parent:
        parent = os.getppid()

        def check() -> None:
            if os.getppid() != parent:
                stop.set()
            else:
                loop.call_later(0.5, check)

        loop.call_later(0.5, check)
    print(f"{READY_PREFIX}{server.url} (OpenAI: /v1/chat/completions, Anthropic: /v1/messages)", flush=True)
    await stop.wait()
    await server.close()


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    config = MockConfig(**{k: getattr(args, k) for k in KEYS})
    if args.cpu is not None:
        try:
            os.sched_setaffinity(0, {args.cpu})
        except (OSError, AttributeError) as exc:
            parser.error(f"--cpu {args.cpu}: {exc}")
    loop = new_event_loop(args.uvloop)
    asyncio.set_event_loop(loop)
    server = MockServer(
        config,
        host=args.host,
        port=args.port,
        seed=args.seed,
        truth_size=args.truth_size,
        truth_events=args.truth_events,
        truth_mb=args.truth_mb,
    )
    try:
        loop.run_until_complete(server.start())
    except (OSError, OverflowError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        sys.stderr.write(f"{PROG}: error: cannot listen on {args.host}:{args.port}: {reason}\n")
        return 1
    gc.freeze()  # start-up objects (tokenizer, templates) never need scanning again
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        loop.run_until_complete(_serve(server, args.watch_parent))
    finally:
        loop.close()
    return 0
