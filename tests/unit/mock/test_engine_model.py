"""The step model against schedules computed by hand (docs/mock.md#the-model): chunked prefill, batching, the
sequence limit, KV exhaustion with recompute preemption, and prefix caching."""

from __future__ import annotations

import pytest

from loadlib.mock.engine.model import Engine, Step
from loadlib.mock.engine.params import EngineParams
from loadlib.mock.engine.seq import Seq

# 10 ms a step, 1 ms per prompt token, 1 ms per decoded sequence; 8-token budget; blocks of 4 tokens
HAND = EngineParams(
    step_base_ms=10.0,
    prefill_ms_per_1k=1000.0,
    decode_ms_per_seq=1.0,
    max_num_seqs=4,
    max_batched_tokens=8,
    kv_cache_tokens=64,
    block_size=4,
    prefix_caching=True,
)


def run(engine: Engine, arrivals: list[tuple[float, Seq]]) -> list[Step]:
    """Steps back to back from the first arrival; an arrival joins the first step starting at or after it."""
    steps: list[Step] = []
    pending = sorted(arrivals, key=lambda a: a[0])
    t = pending[0][0]
    while pending or engine.busy:
        while pending and pending[0][0] <= t + 1e-12:
            engine.add(pending.pop(0)[1])
        step = engine.step(t)
        if step is None:
            t = pending[0][0]
            continue
        steps.append(step)
        t = step.end
    return steps


def ms(values: list[float]) -> list[float]:
    return [round(v * 1000.0, 6) for v in values]


def test_one_request_chunked_prefill_then_decode() -> None:
    seq = Seq("a", 0.0, 10, 3, ())
    steps = run(Engine(HAND), [(0.0, seq)])
    # 8 prompt tokens (10 + 8 ms), the last 2 (10 + 2) and the first token, then two decode steps of 10 + 1
    assert [(round(s.start * 1000, 6), round(s.end * 1000, 6)) for s in steps] == [
        (0, 18),
        (18, 30),
        (30, 41),
        (41, 52),
    ]
    assert [s.prefill_tokens for s in steps] == [8, 2, 0, 0]
    assert ms(seq.token_times) == [30, 41, 52]
    assert seq.truth()["batch_sizes"] == [[1, 3]] and seq.truth()["decode_steps"] == 2


def test_a_later_arrival_joins_the_batch_and_slows_every_token() -> None:
    a, b = Seq("a", 0.0, 4, 3, ()), Seq("b", 0.005, 4, 2, ())
    run(Engine(HAND), [(0.0, a), (0.005, b)])
    # a alone: 10 + 4; then a's decode with b's prefill: 10 + 1 + 4; then both decode: 10 + 2
    assert ms(a.token_times) == [14, 29, 41]
    assert ms(b.token_times) == [29, 41]
    assert b.truth()["queue_ms"] == 9.0 and b.truth()["waits_ms"] == [[0.0, 9.0]]
    assert a.truth()["batch_sizes"] == [[1, 1], [2, 2]] and b.truth()["batch_sizes"] == [[2, 2]]


def test_max_num_seqs_queues_the_rest() -> None:
    params = EngineParams(**_hand(max_num_seqs=1))
    a, b = Seq("a", 0.0, 4, 2, ()), Seq("b", 0.0, 4, 1, ())
    run(Engine(params), [(0.0, a), (0.0, b)])
    assert ms(a.token_times) == [14, 25]  # 10 + 4, then 10 + 1
    assert ms(b.token_times) == [39]  # admitted when a is done: 25 + 10 + 4
    assert b.truth()["queue_ms"] == 25.0


def _hand(**changes: object) -> dict[str, object]:
    fields = {name: getattr(HAND, name) for name in HAND.__dataclass_fields__}
    return {**fields, **changes}


def test_kv_exhaustion_preempts_the_latest_and_recomputes_it() -> None:
    engine = Engine(EngineParams(**_hand(kv_cache_tokens=16)))  # 4 blocks
    a, b = Seq("a", 0.0, 8, 8, ()), Seq("b", 0.0, 4, 4, ())
    steps = run(engine, [(0.0, a), (0.0, b)])
    # 0-18 a's prompt fills the budget; 18-33 a decodes, b prefills (all 4 blocks used); at 33 b's next block does
    # not fit: b is preempted; a decodes alone to its 8th token at 99; b recomputes 4 + 1 tokens (10 + 5), then decodes
    assert ms(a.token_times) == [18, 33, 44, 55, 66, 77, 88, 99]
    assert ms(b.token_times) == [33, 114, 125, 136]
    truth = b.truth()
    assert truth["preemptions"] == 1 and truth["preempted_at_ms"] == [33.0]
    assert truth["waits_ms"] == [[0.0, 18.0], [33.0, 99.0]] and truth["queue_ms"] == 84.0
    assert [s.rid for s in steps[2].preempted] == ["b"]
    assert engine.kv.used == 0 and engine.kv.free == 4


def test_a_request_longer_than_the_budget_waits_behind_the_head_of_the_queue() -> None:
    engine = Engine(EngineParams(**_hand(kv_cache_tokens=16)))
    a, b = Seq("a", 0.0, 12, 1, ()), Seq("b", 0.0, 2, 1, ())
    run(engine, [(0.0, a), (0.0, b)])
    # a: 8 then 4 prompt tokens (it holds 3 of the 4 blocks); b is admitted beside a's last chunk: 10 + 4 + 2
    assert ms(a.token_times) == [34] and ms(b.token_times) == [34]


def test_prefix_cache_hits_skip_the_cached_blocks() -> None:
    engine = Engine(HAND)
    first = Seq("a", 0.0, 8, 1, ("s1", "s2"))  # type: ignore[arg-type]
    run(engine, [(0.0, first)])
    assert ms(first.token_times) == [18] and first.cached_tokens == 0
    again = Seq("b", 1.0, 10, 1, ("s1", "s2"))  # type: ignore[arg-type]
    run(engine, [(1.0, again)])
    assert again.cached_tokens == 8 and round((again.token_times[0] - 1.0) * 1000, 6) == 12  # 10 + 2
    same = Seq("c", 2.0, 8, 1, ("s1", "s2"))  # type: ignore[arg-type]
    run(engine, [(2.0, same)])
    assert same.cached_tokens == 4  # one token must be computed: the last cached block is computed again
    assert same.truth()["cache_hit"] is True


def test_no_prefix_caching_computes_everything() -> None:
    engine = Engine(EngineParams(**_hand(prefix_caching=False)))
    for i, at in enumerate((0.0, 1.0)):
        seq = Seq(i, at, 8, 1, ("s1", "s2"))  # type: ignore[arg-type]
        run(engine, [(at, seq)])
        assert seq.cached_tokens == 0 and round((seq.token_times[0] - at) * 1000, 6) == 18


def test_an_idle_cached_block_is_evicted_when_room_is_needed() -> None:
    engine = Engine(EngineParams(**_hand(kv_cache_tokens=8)))  # 2 blocks
    run(engine, [(0.0, Seq("a", 0.0, 8, 1, ("s1", "s2")))])  # type: ignore[arg-type]
    assert engine.kv.free == 2 and len(engine.kv.idle) == 2
    other = Seq("b", 1.0, 8, 1, ("x1", "x2"))  # type: ignore[arg-type]
    run(engine, [(1.0, other)])
    assert other.cached_tokens == 0 and set(engine.kv.idle) == {"x1", "x2"}


def test_forgetting_the_prefix_cache_frees_idle_blocks_and_hides_held_ones_until_released() -> None:
    engine = Engine(HAND)
    run(engine, [(0.0, Seq("a", 0.0, 8, 1, ("s1", "s2")))])  # type: ignore[arg-type]
    held = Seq("b", 1.0, 10, 3, ("s1", "s2"))  # type: ignore[arg-type]
    engine.add(held)
    engine.step(1.0)  # b runs, holding the two cached blocks
    engine.kv.forget()
    assert not engine.kv.idle and engine.kv.hits(("s1", "s2")) == 0  # type: ignore[arg-type]
    late = Seq("c", 1.1, 8, 1, ("s1", "s2"))  # type: ignore[arg-type]
    run(engine, [(1.1, late)])
    assert late.cached_tokens == 0 and held.state == "finished"
    assert engine.kv.used == 0 and not engine.kv.retired  # b's blocks were freed, c's are cached afresh
    assert engine.kv.hits(("s1", "s2")) == 2  # type: ignore[arg-type]


def test_abort_frees_the_blocks() -> None:
    engine = Engine(HAND)
    engine.add(Seq("a", 0.0, 8, 5, ()))
    engine.step(0.0)
    assert engine.kv.used == 2
    engine.abort("a")
    assert engine.kv.used == 0 and not engine.busy and engine.step(1.0) is None


@pytest.mark.parametrize(("prefill", "decode"), [(0, 1), (8192, 0), (0, 128)])
def test_step_cost_is_base_plus_prefill_plus_decode(prefill: int, decode: int) -> None:
    p = EngineParams()
    assert p.step_ms(prefill, decode) == pytest.approx(6.0 + 0.06566 * prefill + 0.326 * decode)


def test_the_published_profile_matches_its_figures() -> None:
    """alibaba/InferSim, Qwen3-8B-FP8 on H20: prefill 15,061 and decode 2,682 tokens/s (docs/mock.md)."""
    p = EngineParams()
    assert p.prefill_tokens_per_s() == pytest.approx(15061, rel=0.01)
    assert p.decode_tokens_per_s(128) == pytest.approx(2682, rel=0.01)
