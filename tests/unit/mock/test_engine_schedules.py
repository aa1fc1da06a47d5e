"""The step model's schedules pinned bit for bit on workloads that exercise every path (queueing, chunked prefill,
prefix-cache hits and evictions, KV exhaustion with preemption, closed and open loops): the digests were taken with
the model before its loops were fused for speed (commit bd5a3ad), so a faster model that changed a single step's
time, a batch or a token's time fails here."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import pytest

from loadlib.mock.engine.model import Engine, Step
from loadlib.mock.engine.params import PROFILES, EngineParams
from loadlib.mock.engine.seq import Seq
from loadlib.mock.engine.sim import Workload, _seq, closed_loop, output_of, poisson_arrivals

TINY = PROFILES["tiny-kv"]
SMALL = EngineParams(max_num_seqs=16, max_batched_tokens=2048, kv_cache_tokens=16_384)


def steps_of(params: EngineParams, workload: Workload, times: list[float]) -> tuple[list[Step], list[Seq]]:
    """Open loop, step by step (the simulation's own loop, keeping each step)."""
    engine = Engine(params)
    pending = [_seq(params, workload, i, at, output_of(workload, 0, i)) for i, at in enumerate(times)]
    seqs, steps, t = list(pending), [], 0.0
    while pending or engine.busy:
        if not engine.busy:
            t = max(t, pending[0].arrival)
        while pending and pending[0].arrival <= t:
            engine.add(pending.pop(0))
        step = engine.step(t)
        if step is None:
            t = pending[0].arrival
            continue
        steps.append(step)
        t = step.end
    return steps, seqs


def digest(steps: list[Step], seqs: list[Seq]) -> str:
    rows: list[Any] = [
        (
            s.start,
            s.end,
            s.batch,
            s.prefill_tokens,
            s.decode_seqs,
            [q.rid for q in s.tokens],
            [q.rid for q in s.finished],
            [q.rid for q in s.preempted],
        )
        for s in steps
    ]
    rows += [(q.rid, q.token_times, q.truth(), q.generated, q.state) for q in seqs]
    return hashlib.sha256(repr(rows).encode()).hexdigest()[:16]


OPEN = [
    ("h20-8b queueing", PROFILES["h20-8b"], Workload(1024, 48, output_spread=0.5), 300, 14.0, "18f04dcc8325c18d"),
    (
        "tiny-kv preemption",
        TINY,
        Workload(400, 300, shared_prefix_tokens=128, output_spread=0.8),
        120,
        10.0,
        "2ae80aecd32ac0e8",
    ),
    (
        "no prefix cache",
        dataclasses.replace(TINY, prefix_caching=False),
        Workload(300, 40),
        200,
        9.0,
        "dfa6a132686eac1b",
    ),
    ("small chunked", SMALL, Workload(3000, 20, shared_prefix_tokens=1000), 120, 3.0, "46ae33c276ceedff"),
]


@pytest.mark.parametrize(("name", "params", "workload", "n", "rate", "expected"), OPEN)
def test_open_loop_schedules_are_the_same_as_before(
    name: str, params: EngineParams, workload: Workload, n: int, rate: float, expected: str
) -> None:
    steps, seqs = steps_of(params, workload, poisson_arrivals(n, rate, 3))
    assert digest(steps, seqs) == expected, name


def test_a_closed_loop_is_the_same_as_before() -> None:
    done = closed_loop(TINY, Workload(500, 30, shared_prefix_tokens=128, output_spread=0.5), 40, 4)
    assert digest([], sorted(done, key=lambda s: s.rid)) == "03ffc9c079a0c7e8"
