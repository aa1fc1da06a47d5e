"""The asyncio driver on an injected clock: tokens delivered at their step's end in the model's time, arrivals
joining only steps that start after them, aborts freeing the engine; and /metrics parsed by prometheus_client."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from loadlib.mock.engine.driver import EngineDriver
from loadlib.mock.engine.metrics import EngineMetrics
from loadlib.mock.engine.params import EngineParams
from loadlib.mock.engine.seq import Seq

PARAMS = EngineParams(
    step_base_ms=10.0,
    prefill_ms_per_1k=1000.0,
    decode_ms_per_seq=1.0,
    max_batched_tokens=8,
    kv_cache_tokens=64,
    block_size=4,
)


class FakeLoop:
    """`time()`, `call_at()` and `call_soon()` of an event loop whose clock moves only when told; a loop turn
    (`call_soon`) takes TURN_S."""

    TURN_S = 0.00005

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[tuple[float, int, Callable[[], None]]] = []
        self.n = 0
        self.soon = 0

    def call_soon(self, callback: Callable[[], None]) -> None:
        self.soon += 1
        self.call_at(self.now + self.TURN_S, callback)

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[[], None]) -> None:
        self.n += 1
        heapq.heappush(self.timers, (when, self.n, callback))

    def run_until(self, t: float, late: float = 0.0) -> None:
        """Fire every timer due by `t`, each `late` seconds after its time."""
        while self.timers and self.timers[0][0] <= t:
            when, _, callback = heapq.heappop(self.timers)
            self.now = max(self.now, when + late)
            callback()
        self.now = max(self.now, t)


class Recorder:
    def __init__(self) -> None:
        self.tokens: list[tuple[int, float]] = []
        self.done: float | None = None

    def token(self, seq: Seq, when: float) -> None:
        self.tokens.append((seq.generated, round(when * 1000, 6)))

    def finish(self, seq: Seq, when: float) -> None:
        self.done = round(when * 1000, 6)


def driver() -> tuple[FakeLoop, EngineDriver]:
    loop = FakeLoop()
    return loop, EngineDriver(loop, PARAMS, EngineMetrics())  # type: ignore[arg-type]


def test_tokens_arrive_at_step_ends_in_model_time_even_when_timers_are_late() -> None:
    loop, d = driver()
    job = Recorder()
    d.submit(Seq("a", 0.0, 4, 3, ()), job)
    loop.run_until(1.0, late=0.002)  # every timer 2 ms late: the model's times do not drift
    assert job.tokens == [(1, 14.0), (2, 25.0), (3, 36.0)] and job.done == 36.0
    assert d.step is None and d.max_lag_ms > 1.9 - d.wake_early_s * 1000  # 2 ms after a timer set early


def test_a_timer_set_early_polls_until_the_steps_end_and_no_longer() -> None:
    loop, d = driver()
    job = Recorder()
    d.submit(Seq("a", 0.0, 4, 1, ()), job)
    assert loop.timers[0][0] == 0.014 - d.wake_early_s  # the step of 14 ms: its timer fires early
    loop.run_until(0.0139)
    assert job.tokens == [] and loop.soon > 0  # not before the end: the loop turns instead of sleeping
    loop.run_until(1.0)
    assert job.tokens == [(1, 14.0)] and loop.soon <= round(d.wake_early_s / FakeLoop.TURN_S) + 1
    assert d.max_lag_ms < FakeLoop.TURN_S * 1000


def test_an_arrival_during_a_step_waits_for_the_next() -> None:
    loop, d = driver()
    a, b = Recorder(), Recorder()
    d.submit(Seq("a", 0.0, 4, 2, ()), a)
    loop.run_until(0.005)
    d.submit(Seq("b", 0.005, 4, 1, ()), b)
    loop.run_until(1.0)
    assert a.tokens == [(1, 14.0), (2, 29.0)]  # a's decode shares the step with b's prefill: 10 + 1 + 4
    assert b.tokens == [(1, 29.0)]


def test_abort_forgets_the_request_and_frees_its_blocks() -> None:
    loop, d = driver()
    job = Recorder()
    d.submit(Seq("a", 0.0, 4, 50, ()), job)
    loop.run_until(0.030)
    d.abort("a")
    loop.run_until(1.0)
    assert len(job.tokens) == 2 and job.done is None
    assert d.engine.kv.used == 0 and not d.engine.busy


def families(text: str) -> dict[str, Any]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_metrics_parse_with_vllm_names_and_agree_with_the_work_done() -> None:
    loop, d = driver()
    for i in range(3):
        d.submit(Seq(i, 0.0, 4, 5, ()), Recorder())
    loop.run_until(0.010)  # inside the first step
    kv = d.engine.kv
    live = families(d.metrics.render("m", len(d.engine.running), d.waiting, kv.used / kv.total).decode())
    # the first arrival started a step alone; the other two wait for the next one
    assert live["vllm:num_requests_running"].samples[0].value == 1
    assert live["vllm:num_requests_waiting"].samples[0].value == 2
    assert live["vllm:kv_cache_usage_perc"].samples[0].value == 1 / 16
    loop.run_until(5.0)
    done = families(d.metrics.render("m", 0, 0, 0.0).decode())
    assert done["vllm:generation_tokens"].samples[0].value == 15
    assert done["vllm:prompt_tokens"].samples[0].value == 12
    counts = {s.name: s.value for f in done.values() for s in f.samples if s.name.endswith("_count")}
    assert counts["vllm:time_to_first_token_seconds_count"] == 3
    assert counts["vllm:inter_token_latency_seconds_count"] == 12
    assert counts["vllm:request_queue_time_seconds_count"] == 3
    assert done["vllm:request_success"].samples[0].labels == {
        "engine": "0",
        "model_name": "m",
        "finished_reason": "stop",
    }
    sums = {s.name: s.value for f in done.values() for s in f.samples if s.name.endswith("_sum")}
    for name in ("inference_time", "prefill_time", "decode_time", "prompt_tokens", "generation_tokens", "params_n"):
        assert counts[f"vllm:request_{name}{'_seconds' if 'time' in name else ''}_count"] == 3, name
    assert (sums["vllm:request_prompt_tokens_sum"], sums["vllm:request_generation_tokens_sum"]) == (12, 15)
    # every token a step computed: the prompts, and each output token but the last (sampled, never fed back)
    assert sums["vllm:iteration_tokens_total_sum"] == 12 + 15 - 3
    assert (
        counts["vllm:request_time_per_output_token_seconds_count"] == counts["vllm:request_num_preemptions_count"] == 3
    )
    assert sums["vllm:request_prefill_kv_computed_tokens_sum"] == 12, "nothing was cached"
    assert done["vllm:prefix_cache_queries"].samples[0].value == 12
