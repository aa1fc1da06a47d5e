"""Benchmark: the CPU that failover bookkeeping adds to one request, measured in one process so that process-to-process
noise (a few percent on a shared VM, more than the effect) cancels out.

LLMUser.chat runs against a canned stream (the transport is replaced by a prepared outcome of 32 output events), with
a pool of two endpoints and retries, so the dispatcher (router, breaker, retry budget), the user-visible request and
the drill ledger all run. The same user then runs with that bookkeeping switched off (the dispatcher's single-endpoint
path, no user-visible request, no ledger), alternating 12 times; the minimum per case is the least disturbed figure.
Printed: microseconds per request in each case and the difference, then each piece of the bookkeeping timed alone
(timeit). Divide by the client CPU per request of a real run (bench/failover_cost.py: about 0.9 ms at 128 streams
here) for the share.

    python bench/failover_bookkeeping.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import timeit
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from locust import task  # noqa: E402
from locust.argument_parser import get_parser  # noqa: E402
from locust.env import Environment  # noqa: E402

import loadlib.locust.user as user_module  # noqa: E402
from loadlib import options  # noqa: E402
from loadlib.errors import ErrorClass  # noqa: E402
from loadlib.failover.dispatch import Attempt  # noqa: E402
from loadlib.locust import LLMUser  # noqa: E402
from loadlib.locust.context import context  # noqa: E402
from loadlib.providers.base import StreamResult, Usage  # noqa: E402
from loadlib.transport.stream import StreamOutcome  # noqa: E402

POOL = {
    "endpoints": [
        {"name": "primary", "base_url": "http://127.0.0.1:9/v1", "key_env": "none"},
        {"name": "secondary", "base_url": "http://127.0.0.1:8/v1", "key_env": "none", "priority": 2},
    ],
    "retry": {"max_attempts": 3, "budget": 0.2},
}
MESSAGES = [{"role": "user", "content": "Say hi."}]
ROUNDS, PER_ROUND = 12, 5000


class User(LLMUser):
    host = "http://127.0.0.1:9/v1"

    @task
    def noop(self) -> None:
        pass


def canned(*_: object, **__: object) -> StreamOutcome:
    """What a successful 32-event stream leaves behind, without a socket."""
    out = StreamOutcome(http_status=200, ttfb_ms=20.0, first_event_ms=20.0, ttft_ms=20.0, ttfo_ms=20.0, e2e_ms=82.0)
    out.t0 = time.perf_counter()
    out.output_stamps_ms = array("d", [20.0 + 2 * i for i in range(32)])
    out.events = 34
    out.result = StreamResult(usage=Usage(prompt_tokens=10, completion_tokens=32), text_by_choice={0: "hi"})
    return out


def make_user() -> tuple[LLMUser, object]:
    parser = get_parser()
    if "--llm-provider" not in parser._option_string_actions:
        options.add_arguments(parser)
    opts = parser.parse_args(["--llm-api-key-env", "none", "--llm-estimate-every", "0", "--llm-pool", json.dumps(POOL)])
    env = Environment(parsed_options=opts, host=User.host, user_classes=[User])
    env.create_local_runner()
    ctx = context(env)
    ctx.start()
    user_module.stream_call = canned
    return User(env), ctx


def per_request_us(user: LLMUser, n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        user.chat(MESSAGES, prompt_tokens_est=10)
    return (time.process_time() - start) / n * 1e6


def main() -> None:
    user, ctx = make_user()
    part, dispatcher = ctx.failover, ctx.dispatcher
    on = (part.user_request, part.add)
    off = (lambda *a, **k: None, lambda *a, **k: None)
    per_request_us(user, 2000)  # warm-up
    results: dict[str, list[float]] = {"with bookkeeping": [], "without": []}
    for _ in range(ROUNDS):
        for name, (user_request, add), only in (("with bookkeeping", on, None), ("without", off, "primary")):
            part.user_request, part.add, dispatcher.only = user_request, add, only
            results[name].append(per_request_us(user, PER_ROUND))
    for name, values in results.items():
        print(f"{name:17s} min {min(values):6.1f} us  median {statistics.median(values):6.1f} us per request")
    added = min(results["with bookkeeping"]) - min(results["without"])
    print(f"failover bookkeeping adds {added:.1f} us per request (min against min)")
    part.user_request, part.add, dispatcher.only = *on, None
    print_pieces(user, part, dispatcher)


def print_pieces(user: LLMUser, part: object, dispatcher: object) -> None:
    """Each piece alone: the dispatcher's loop (with an attempt that returns at once), the user-visible request's
    statistics and ledger entry, the ledger's per-attempt entry."""
    done = Attempt("primary", 1, ErrorClass.OK, time.perf_counter(), 20.0, 80.0)
    reply = user.chat(MESSAGES, prompt_tokens_est=10)
    delivery = dispatcher.send(lambda *_: done)
    pieces = {
        "dispatcher.send": lambda: dispatcher.send(lambda *_: done),
        "FailoverPart.user_request": lambda: part.user_request(reply.user, delivery),
        "FailoverPart.add": lambda: part.add(reply.record),
    }
    total = 0.0
    for name, call in pieces.items():
        us = min(timeit.repeat(call, number=20000, repeat=5)) / 20000 * 1e6
        total += us
        print(f"  {name:26s} {us:5.2f} us")
    print(f"  {'pieces together':26s} {total:5.2f} us per request")


if __name__ == "__main__":
    main()
