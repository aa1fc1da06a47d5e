"""Run the step model on arrivals instead of a clock: closed-loop users and open-loop (Poisson) rates. The answer
key of `/mock/capacity` and the predictions the tests and benchmarks compare measurements with."""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from itertools import count
from typing import Any

from loadlib.mock.engine.model import Engine
from loadlib.mock.engine.params import EngineParams
from loadlib.mock.engine.seq import Seq


@dataclass(frozen=True, slots=True)
class Workload:
    """What every simulated request asks: its prompt (the first `shared_prefix_tokens` of it the same for all, a
    system prompt) and its output, `output_spread` the output's relative spread (uniform, +/-, a fixed function of
    the user and the request's number: `output_of`).

    The client sits `link_ms` away from the engine's step loop, each way: a request joins the queue that long after
    the client sent it, and a token reaches the client that long after its step ended (network, the server's HTTP
    writer, the client's reading). A closed-loop user sends its next request `think_ms` after it read the last
    answer's end (its wait_time and its own work). So the engine sees the user come back 2 x link + think after the
    last token, mid-step, and waits for the next step; the client's TTFT and E2E carry the link both ways
    (`seen_ms`). While the engine is busy the two cancel: only think moves the client's TTFT; with it idle, the
    link adds to it.

    Answers of one length keep users that started together in step for ever (they finish together and come back
    together); a spread mixes them, as real answers do, so a level settles into one steady state."""

    prompt_tokens: int = 512
    output_tokens: int = 64
    shared_prefix_tokens: int = 0
    link_ms: float = 0.5
    think_ms: float = 0.0
    output_spread: float = 0.0


def unit_draw(user: int, index: int) -> float:
    """A number in [0, 1) fixed by (user, index): the same in the simulation and in a client that replays it."""
    x = (user * 0x9E3779B1 + index * 0x85EBCA77 + 0x165667B1) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x2C1B3C6D) & 0xFFFFFFFF
    x ^= x >> 12
    x = (x * 0x297A2D39) & 0xFFFFFFFF
    x ^= x >> 15
    return x / 4294967296.0


def output_of(workload: Workload, user: int, index: int) -> int:
    """Output tokens of a user's `index`-th request (at least 1)."""
    spread = workload.output_spread * (2.0 * unit_draw(user, index) - 1.0)
    return max(1, round(workload.output_tokens * (1.0 + spread)))


def prompt_keys(workload: Workload, request: Any, block_size: int) -> tuple[int, ...]:
    """Block keys of a request's prompt: shared blocks name the shared prefix, the rest are the request's own."""
    shared = min(workload.shared_prefix_tokens, workload.prompt_tokens) // block_size
    full = workload.prompt_tokens // block_size
    return tuple(hash(("shared", j)) if j < shared else hash((request, j)) for j in range(full))


def _seq(params: EngineParams, workload: Workload, rid: Any, at: float, output: int) -> Seq:
    keys = prompt_keys(workload, rid, params.block_size)
    return Seq(rid, at, workload.prompt_tokens, output, keys)


def _drive(engine: Engine, arrivals: list[tuple[float, int, Seq]], on_finish: Callable[[Seq, float], None]) -> None:
    """The event loop: steps back to back while there is work, idle until the next arrival otherwise."""
    t = 0.0
    while arrivals or engine.busy:
        if not engine.busy:
            t = max(t, arrivals[0][0])
        while arrivals and arrivals[0][0] <= t:
            engine.add(heapq.heappop(arrivals)[2])
        step = engine.step(t)
        if step is None:
            t = arrivals[0][0] if arrivals else t
            continue
        t = step.end
        for seq in step.finished:
            on_finish(seq, t)


def solo_e2e_s(params: EngineParams, workload: Workload) -> float:
    """One request alone: its prefill steps, then a decode step per further token."""
    budget = params.max_batched_tokens
    chunks = -(-workload.prompt_tokens // budget)
    prefill = params.step_ms(workload.prompt_tokens, 0) + (chunks - 1) * params.step_base_ms
    return (prefill + max(0, workload.output_tokens - 1) * params.step_ms(0, 1)) / 1000.0


def closed_loop(
    params: EngineParams, workload: Workload, users: int, rounds: int, spread_s: float | None = None
) -> list[Seq]:
    """`users` users each sending `rounds` requests back to back, the first requests spread evenly over `spread_s`
    (default: one request's time alone, as a ramp-up would; users that start together stay in step, which real
    clients, never exactly together, do not). Returns every request, its `rid` (user, request number), so a client
    that replays the workload can set each of its requests beside the model's."""
    engine = Engine(params)
    ids = count()
    done: list[Seq] = []
    heap: list[tuple[float, int, Seq]] = []
    sent = dict.fromkeys(range(users), 0)

    link, think = workload.link_ms / 1000.0, workload.think_ms / 1000.0

    def send(user: int, at: float) -> None:
        """The user sends at `at`; the engine sees it a link later."""
        index = sent[user]
        seq = _seq(params, workload, (user, index), at + link, output_of(workload, user, index))
        sent[user] += 1
        heapq.heappush(heap, (seq.arrival, next(ids), seq))

    def finished(seq: Seq, t: float) -> None:
        done.append(seq)
        user = seq.rid[0]
        if sent[user] < rounds:
            send(user, t + link + think)  # read a link after the step's end, sent a think later

    spread = solo_e2e_s(params, workload) if spread_s is None else spread_s
    for user in range(users):
        send(user, user * spread / users)
    _drive(engine, heap, finished)
    return done


def poisson_arrivals(n: int, rate: float, seed: int) -> list[float]:
    """`n` arrival times at `rate` per second: seeded unit exponentials scaled by 1/rate, so a higher rate squeezes
    the same pattern (the capacity search stays monotone)."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for _ in range(n):
        t += -math.log(1.0 - rng.random())
        out.append(t / rate)
    return out


def open_loop(
    params: EngineParams, workload: Workload, times: list[float], on_finish: Callable[[Seq], None] | None = None
) -> list[Seq]:
    """One request sent at each of `times` (seconds), whatever the server's state, request i's `rid` i. Returns
    every request; `on_finish` sees each as it finishes (it may raise to stop the run)."""
    engine = Engine(params)
    link = workload.link_ms / 1000.0
    heap = [
        (at + link, i, _seq(params, workload, i, at + link, output_of(workload, 0, i))) for i, at in enumerate(times)
    ]
    heapq.heapify(heap)
    done: list[Seq] = []

    def finished(seq: Seq, t: float) -> None:
        done.append(seq)
        if on_finish is not None:
            on_finish(seq)

    _drive(engine, heap, finished)
    return done


def ttft_ms(seq: Seq) -> float:
    return ((seq.first_token or seq.arrival) - seq.arrival) * 1000.0


def tpot_ms(seq: Seq) -> float:
    """Mean gap between output tokens after the first (0 for an answer of one token)."""
    times = seq.token_times
    return (times[-1] - times[0]) * 1000.0 / (len(times) - 1) if len(times) > 1 else 0.0


def e2e_ms(seq: Seq) -> float:
    return ((seq.token_times[-1] if seq.token_times else seq.arrival) - seq.arrival) * 1000.0


METRICS: dict[str, Callable[[Seq], float]] = {"ttft": ttft_ms, "tpot": tpot_ms, "e2e": e2e_ms}


def seen_ms(metric: str, seq: Seq, workload: Workload) -> float:
    """`metric` (of METRICS) as the client measures it: TTFT and E2E carry the link both ways, TPOT none."""
    return METRICS[metric](seq) + (0.0 if metric == "tpot" else 2.0 * workload.link_ms)


def quantile(values: list[float], q: float) -> float:
    """Nearest-rank quantile: the smallest value with at least q of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]
