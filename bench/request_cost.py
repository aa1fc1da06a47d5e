"""Benchmark: what one finished request costs the load generator outside its stream, part by part, in one process
so that process-to-process noise cancels out.

LLMUser.chat runs against a canned stream (the transport replaced by a prepared outcome of 128 output events with
usage), so everything after the stream runs as in a real run: the dispatcher, the attempt's record, Locust's request
event (its own table), the run context's fan-out to every node part (warm-up clock, LLM statistics, goodput, the
local run's chart timeline, records, the InfluxDB sink, the integrity ledger, the drill ledger) and the user-visible
request. Three runs are timed whole, alternating ROUNDS times (the minimum is the least disturbed figure):

- plain: one endpoint, no outputs (the default run);
- outputs: one endpoint with --llm-request-slo, --llm-records and an InfluxDB sink;
- pool: the same outputs, a pool of two endpoints with retries (the dispatcher's full path, the drill ledger and
  the user-visible request's own statistics and point).

Then each part alone on the pool run's record and user-visible request (process CPU, the least of REPEATS repeats),
at 16 and at 128 output tokens, split into a cost per request and one per output token, with their sum. The sink's
and the records' background work (encoding a point, writing a line) is timed too: it is CPU of the same process,
spent off the request path. On a shared machine the whole runs vary by tens of percent from run to run; the parts,
each a minimum over many calls, are the figures to compare with docs/metrics.md, "What a request costs".

    python bench/request_cost.py
"""

from __future__ import annotations

import gc
import json
import logging
import statistics
import sys
import tempfile
import time
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from locust.argument_parser import get_parser  # noqa: E402
from locust.env import Environment  # noqa: E402

from failover_bookkeeping import POOL, User  # noqa: E402  (the same pool of two and no-op user)

import loadlib.locust.user as user_module  # noqa: E402
from loadlib import options  # noqa: E402
from loadlib.errors import ErrorClass  # noqa: E402
from loadlib.failover.dispatch import Attempt  # noqa: E402
from loadlib.locust import LLMUser  # noqa: E402
from loadlib.locust.context import RunContext, context  # noqa: E402
from loadlib.locust.parts import NodePart  # noqa: E402
from loadlib.providers.base import ChatRequest, StreamResult, Usage  # noqa: E402
from loadlib.sinks.lineproto import request_line, user_request_line  # noqa: E402
from loadlib.transport.stream import StreamOutcome  # noqa: E402

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi in twenty words."}]
TOKENS = 128  # the whole runs' answer length
LENGTHS = (16, 128)  # the parts are timed at both
ROUNDS, PER_ROUND, PIECE_CALLS, REPEATS = 40, 1000, 5000, 7


def canned(*_: object, **__: object) -> StreamOutcome:
    """What a successful stream of TOKENS output events leaves behind, without a socket."""
    return canned_of(TOKENS)


def canned_of(tokens: int) -> StreamOutcome:
    e2e = 20.0 + 2 * tokens
    out = StreamOutcome(http_status=200, ttfb_ms=19.0, first_event_ms=20.0, ttft_ms=20.0, ttfo_ms=20.0, e2e_ms=e2e)
    out.t0 = time.perf_counter()
    out.output_stamps_ms = array("d", [20.0 + 2 * i for i in range(tokens)])
    out.events = tokens + 2
    out.response_bytes = 180 * tokens
    usage = Usage(prompt_tokens=24, completion_tokens=tokens)
    out.result = StreamResult(usage=usage, text_by_choice={0: "hi " * tokens})
    return out


def make_user(args: list[str]) -> tuple[LLMUser, RunContext]:
    parser = get_parser()
    if "--llm-provider" not in parser._option_string_actions:
        options.add_arguments(parser)
    opts = parser.parse_args(["--llm-api-key-env", "none", "--llm-estimate-every", "0", *args])
    env = Environment(parsed_options=opts, host=User.host, user_classes=[User])
    env.create_local_runner()
    ctx = context(env)
    ctx.start()
    in_foreground(ctx)
    return User(env), ctx


def runs(tmp: Path) -> dict[str, tuple[LLMUser, RunContext]]:
    sink = ["--influx-url", "http://127.0.0.1:9", "--influx-api", "v1", "--influx-db", "bench"]
    outputs = ["--llm-request-slo", "ttft <= 500ms, tpot <= 50ms", *sink]
    return {
        "plain": make_user([]),
        "outputs": make_user([*outputs, "--llm-records", str(tmp / "outputs-{worker}.jsonl")]),
        "pool": make_user(
            [*outputs, "--llm-records", str(tmp / "pool-{worker}.jsonl"), "--llm-pool", json.dumps(POOL)]
        ),
    }


def in_foreground(ctx: RunContext) -> None:
    """Stop the records writer's and the sink's background greenlets: their work is done by `background` at the end
    of the run's own round, so no run is charged with another's file writes or point encoding."""
    export = ctx.named("records").export
    if export is not None:
        export.close()
    if ctx.sinks.sink is not None and ctx.sinks.sink._greenlet is not None:
        ctx.sinks.sink._greenlet.kill()


def background(ctx: RunContext) -> None:
    """What the background greenlets would have done with this round's requests: the records' lines appended to
    their file, the sink's points encoded (its write to InfluxDB is left out: sink_cost.py measures that)."""
    export = ctx.named("records").export
    if export is not None:
        export.flush()
    sink = ctx.sinks.sink
    if sink is not None:
        while sink._buffer:
            sink._encode(sink._buffer.take(sink.batch_size))


def per_request_us(user: LLMUser, ctx: RunContext, n: int) -> float:
    """Process CPU per chat(), the background work of its requests included."""
    start = time.process_time()
    for _ in range(n):
        user.chat(MESSAGES, prompt_tokens_est=24)
    background(ctx)
    return (time.process_time() - start) / n * 1e6


def per_call_us(call: Callable[[], Any], n: int = PIECE_CALLS, before: Callable[[], Any] | None = None) -> float:
    """CPU of the least disturbed of REPEATS repeats of `n` calls; `before` runs untimed ahead of each repeat."""
    best = float("inf")
    for _ in range(REPEATS):
        if before is not None:
            before()
        start = time.process_time()
        for _ in range(n):
            call()
        best = min(best, time.process_time() - start)
    return best / n * 1e6


def whole_runs(all_runs: dict[str, tuple[LLMUser, RunContext]]) -> dict[str, float]:
    for user, ctx in all_runs.values():
        per_request_us(user, ctx, 1000)  # warm-up
    results: dict[str, list[float]] = {name: [] for name in all_runs}
    for _ in range(ROUNDS):
        for name, (user, ctx) in all_runs.items():
            results[name].append(per_request_us(user, ctx, PER_ROUND))
    print(f"chat() per request, whole, {TOKENS} output tokens (min / median of {ROUNDS} rounds of {PER_ROUND}):")
    for name, values in results.items():
        print(f"  {name:8s} {min(values):7.1f} us  {statistics.median(values):7.1f} us")
    print(f"  of which this bench's canned stream outcome: {per_call_us(canned, PER_ROUND):.1f} us")
    return {name: min(values) for name, values in results.items()}


def pieces(user: LLMUser, ctx: RunContext, tokens: int) -> dict[str, float]:
    """Each part of the pool run alone, on the record and user-visible request of one real chat() of `tokens`."""
    rt = ctx.settings
    assert rt is not None
    user_module.stream_call = lambda *_, **__: canned_of(tokens)
    reply = user.chat(MESSAGES, prompt_tokens_est=24)
    record, u = reply.record, reply.user
    assert record.status is ErrorClass.OK and u is not None
    target = rt.targets["primary"]
    endpoint, req = target.endpoint, ChatRequest(messages=MESSAGES, max_tokens=256)
    facts = {"scenario": "chat", "turn": None, "user_request_id": "r1", "prompt_tokens_est": 24}
    facts.update(intended_send_ms=None, attempt=1, hedge=False, start_unix_ns=time.time_ns())
    outcome = canned_of(tokens)
    done = Attempt("primary", 1, ErrorClass.OK, time.perf_counter(), 20.0, 80.0)
    dispatcher, failover, stats = ctx.dispatcher, ctx.failover, ctx.stats
    delivery = dispatcher.send(lambda *_: done)
    export = ctx.part(type(ctx.named("records"))).export
    sink = ctx.sinks.sink
    start_ns, good = record.start_unix_ns, True
    slo, timeline = stats.slo, stats.timeline
    assert slo is not None and timeline is not None and export is not None and sink is not None
    user_start = u.start_unix_ns / 1e9
    table = {
        "request body (adapter.build)": lambda: target.adapter.build(
            endpoint.base_path, endpoint.model, endpoint.api_key(), req
        ),
        "dispatcher.send (pool of 2, retries)": lambda: dispatcher.send(lambda *_: done),
        "attempt's record (build_record)": lambda: user._record(rt, target, outcome, facts, (None, None)),
        "Locust's request event (its table)": lambda: user._fire_locust_request(record),
        "user-visible request: built (UserRequest)": lambda: user._user_request(rt, delivery, facts, start_ns),
        "user-visible request: its statistics": lambda: failover.users.add(u),
        "user-visible request: drill-ledger entry": lambda: failover.ledger.user_request(
            user_start, u.end_unix, u.preferred, u.endpoint, u.ok, u.ttft_ms, u.attempts, u.hedged_won
        ),
        "user-visible request: InfluxDB point queued": lambda: ctx.sinks.user_request(u),
        "drill ledger (FailoverPart.add)": lambda: failover.add(record),
        "warm-up clock": lambda: ctx.warmup.excludes(start_ns),
        "statistics (LLMStats.add)": lambda: stats.stats.add(record, good),
        "goodput (RequestSLO.meets)": lambda: slo.meets(record),
        "chart timeline (local run only)": lambda: timeline.add_record(record),
        "integrity ledger (WorkersPart.add)": lambda: ctx.workers.add(record),
        "records: JSON line (on the request)": lambda: export.add(record),
        "InfluxDB point queued (on the request)": lambda: sink.submit_record(record),
        "loadlib's record event": lambda: ctx.events.record.fire(record=record),
    }
    clear = (lambda: export._buffer.clear(), lambda: sink._buffer.clear())
    out = {name: per_call_us(call, before=lambda: [c() for c in clear]) for name, call in table.items()}
    out[f"run context's fan-out to {len(ctx.parts)} parts (their add: no-ops)"] = fan_out_us(ctx, record)
    out["records: file write (background, per line)"] = write_per_line(export, record)
    out["InfluxDB: encode the request point (background)"] = per_call_us(lambda: request_line(record, "r", "w"))
    out["InfluxDB: encode the user-request point (background)"] = per_call_us(lambda: user_request_line(u, "r", "w"))
    return out


def fan_out_us(ctx: RunContext, record: Any) -> float:
    """ctx.record with every part's `add` a no-op: the fan-out's own cost (one guarded call per part)."""
    parts = ctx.parts
    ctx.parts = [NodePart() for _ in parts]
    try:
        return per_call_us(lambda: ctx.record(record))
    finally:
        ctx.parts = parts


def write_per_line(export: Any, record: Any, lines: int = 5000) -> float:
    """The records writer's flush (off the request path): a batch of `lines` appended to the file, per line."""
    best = float("inf")
    for _ in range(REPEATS):
        export._buffer.clear()
        for _ in range(lines):
            export.add(record)
        start = time.process_time()
        export.flush()
        best = min(best, time.process_time() - start)
    return best / lines * 1e6


def main() -> None:
    logging.getLogger("loadlib.sinks").setLevel(logging.CRITICAL)  # its writes to a closed port fail: no noise
    user_module.stream_call = canned
    gc.collect()  # as a load node does at test start (loadlib.locust.install): no full collection mid-request
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)
    with tempfile.TemporaryDirectory() as tmp:
        all_runs = runs(Path(tmp))
        whole = whole_runs(all_runs)
        added = whole["outputs"] - whole["plain"], whole["pool"] - whole["outputs"]
        print(f"  outputs add {added[0]:.1f} us, the pool {added[1]:.1f} us more")
        short, long = (pieces(*all_runs["pool"], tokens) for tokens in LENGTHS)
    print_pieces(short, long)


def print_pieces(short: dict[str, float], long: dict[str, float]) -> None:
    """Each part at both lengths, and split into a cost per request and one per output token (a straight line
    through the two: what grows with the answer's length is the ITL bookkeeping)."""
    a, b = LENGTHS
    print(f"each part alone, pool run (CPU, min of {REPEATS} x {PIECE_CALLS} calls), us per request:")
    print(f"  {'':54s} {a:>4d} tok {b:>4d} tok  fixed  per token")
    for name in short:
        slope = (long[name] - short[name]) / (b - a)
        print(f"  {name:54s} {short[name]:8.2f} {long[name]:8.2f} {short[name] - a * slope:6.2f} {slope:8.3f}")
    total_a, total_b = sum(short.values()), sum(long.values())
    slope = (total_b - total_a) / (b - a)
    print(f"  {'total':54s} {total_a:8.2f} {total_b:8.2f} {total_a - a * slope:6.2f} {slope:8.3f}")


if __name__ == "__main__":
    main()
