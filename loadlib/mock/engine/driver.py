"""The engine on the asyncio loop: one timer at a time, at the end of the step in progress. Steps follow each other
in the model's time (a step starts when the previous one ends, not when its callback happened to run), so timer
lateness never accumulates; a request is admitted only by a step that starts after it arrived.

A sleeping loop wakes a timer 0.15-0.3 ms late on a loaded core, which every token of the step would carry (a
client of one user saw its TTFT 2 % over the model's for it). So the timer is set WAKE_EARLY_S before the step's
end and the rest is spent polling I/O (zero-timeout loop turns), not sleeping: the tokens go out at the end.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from loadlib.mock.engine.metrics import EngineMetrics
from loadlib.mock.engine.model import Engine, Step
from loadlib.mock.engine.params import EngineParams
from loadlib.mock.engine.seq import FINISHED, Seq

MAX_LAG_S = 0.05  # a loop this late (overloaded) restarts the model's clock at now rather than catch up in a burst
WAKE_EARLY_S = 0.0004  # a step's timer fires this much before its end; the loop polls the rest (at most this per step)


class EngineJob(Protocol):
    def token(self, seq: Seq, when: float) -> None: ...

    def finish(self, seq: Seq, when: float) -> None: ...


class EngineDriver:
    """Feeds arrivals to the `Engine` and hands each step's tokens to the requests' jobs when the step ends."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        params: EngineParams,
        metrics: EngineMetrics,
        wake_early_s: float = WAKE_EARLY_S,
    ) -> None:
        self.loop = loop
        self.wake_early_s = wake_early_s
        self.params = params
        self.engine = Engine(params)
        self.metrics = metrics
        self.jobs: dict[Any, EngineJob] = {}
        self.pending: list[Seq] = []  # arrived after the step in progress began
        self.step: Step | None = None
        self.max_lag_ms = 0.0
        self.free_at = 0.0  # the model's time at which the last step ended: an idle engine starts no earlier

    def fits(self, tokens: int) -> bool:
        """Whether a request of `tokens` (prompt and output) fits in the KV cache at all."""
        return -(-tokens // self.params.block_size) <= self.params.kv_blocks

    def submit(self, seq: Seq, job: EngineJob) -> None:
        self.jobs[seq.rid] = job
        self.pending.append(seq)
        if self.step is None:  # idle: the step began when the request arrived (its parsing is part of it)
            self._begin(max(seq.arrival, self.free_at))

    def abort(self, rid: Any) -> None:
        """The client went away: the engine frees its blocks (a step in progress still ends as planned)."""
        if self.jobs.pop(rid, None) is not None:
            self.pending = [s for s in self.pending if s.rid != rid]
            self.engine.abort(rid)

    @property
    def waiting(self) -> int:
        return len(self.engine.waiting) + len(self.pending)

    def _begin(self, start: float) -> None:
        pending = self.pending
        if pending and not self.engine.busy:
            start = max(start, min(s.arrival for s in pending))
        ready = [s for s in pending if s.arrival <= start]
        if ready:
            self.pending = [s for s in pending if s.arrival > start]
            for seq in sorted(ready, key=lambda s: s.arrival):
                self.engine.add(seq)
        self.step = step = self.engine.step(start)
        if step is not None:
            self.loop.call_at(step.end - self.wake_early_s, self._end)
        elif self.pending:
            self._begin(max(start, min(s.arrival for s in self.pending)))

    def _end(self) -> None:
        step = self.step
        assert step is not None
        now = self.loop.time()
        if now < step.end:  # woken early on purpose: one more loop turn (I/O polled, no sleep) until the end
            self.loop.call_soon(self._end)
            return
        lag = now - step.end
        self.max_lag_ms = max(self.max_lag_ms, lag * 1000.0)
        self._deliver(step)  # before the next step is planned: that one moves the sequences on
        self.free_at = step.end if lag < MAX_LAG_S else now
        self._begin(self.free_at)

    def _deliver(self, step: Step) -> None:
        jobs, metrics, when = self.jobs, self.metrics, step.end
        metrics.preemptions += len(step.preempted)
        metrics.iteration.observe(step.prefill_tokens + step.decode_seqs)
        for seq in sorted(step.tokens, key=_mid_stream):
            self._observe_token(seq)
            job = jobs.get(seq.rid)
            if job is not None:
                job.token(seq, when)
        for seq in step.finished:
            job = jobs.pop(seq.rid, None)
            self._observe_finish(seq)
            if job is not None:
                job.finish(seq, when)

    def _observe_token(self, seq: Seq) -> None:
        metrics = self.metrics
        metrics.generation_tokens += 1
        times = seq.token_times
        if len(times) == 1:
            metrics.ttft.observe(times[0] - seq.arrival)
            metrics.prompt_tokens += seq.prompt_tokens
            metrics.prefix_queries += seq.prompt_tokens
            metrics.prefix_hits += seq.cached_tokens
        else:
            metrics.itl.observe(times[-1] - times[-2])

    def _observe_finish(self, seq: Seq) -> None:
        metrics = self.metrics
        metrics.queue.observe(sum(b - a for a, b in seq.waits))
        end = seq.token_times[-1] if seq.token_times else seq.arrival
        metrics.e2e.observe(end - seq.arrival)
        scheduled = seq.first_scheduled if seq.first_scheduled is not None else end
        first = seq.token_times[0] if seq.token_times else end
        metrics.inference.observe(end - scheduled)
        metrics.prefill.observe(first - scheduled)
        metrics.decode.observe(end - first)
        metrics.prompt_len.observe(seq.prompt_tokens)
        metrics.output_len.observe(seq.generated)
        metrics.params_n.observe(1)  # the mock answers one choice
        metrics.request_preemptions.observe(len(seq.preempted_at))
        metrics.prefill_computed.observe(seq.prompt_tokens - seq.cached_tokens)
        if seq.generated > 1:
            metrics.tpot.observe((end - first) / (seq.generated - 1))
        reason = seq.finish_reason
        metrics.success[reason] = metrics.success.get(reason, 0) + 1


def _mid_stream(seq: Seq) -> bool:
    """Writing a big step's tokens takes a millisecond or more, so a step writes first tokens and answers' ends
    first (a client's TTFT and its next request hang on them), the tokens in between after them."""
    return len(seq.token_times) > 1 and seq.state != FINISHED
