"""The step model: what one engine step schedules, how long it takes and which tokens it yields. Pure: no clock,
no I/O; the caller says when a step starts and delivers its tokens when it ends.

Each step (vLLM V1's scheduler, simplified): running sequences first, in admission order, each gets the tokens it
still has to compute (1 when decoding, a chunk of its prompt when prefilling) within the step's token budget, and
the KV blocks for them; when the cache cannot give a block, the latest admitted sequence is preempted (its blocks
freed, its tokens recomputed later). Then, if nothing was preempted, waiting sequences are admitted first come first
served while the budget, `max_num_seqs` and the cache allow (a cached prefix is not computed again). A sequence whose
every token is computed samples one token at the step's end.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from loadlib.mock.engine.kv import KvCache
from loadlib.mock.engine.params import EngineParams
from loadlib.mock.engine.seq import FINISHED, RUNNING, WAITING, Seq


@dataclass(slots=True)
class Step:
    """One planned step: from `start` to `end` (seconds), the sequences that sampled a token at `end` and those that
    finished (after their last token)."""

    start: float
    end: float
    batch: int
    prefill_tokens: int
    decode_seqs: int
    tokens: list[Seq] = field(default_factory=list)
    finished: list[Seq] = field(default_factory=list)
    preempted: list[Seq] = field(default_factory=list)


class Engine:
    """Sequences in, steps out. `add` a request when it arrives; `step(now)` plans the next step (None: idle)."""

    def __init__(self, params: EngineParams) -> None:
        self.params = params
        self.kv = KvCache(params.kv_blocks)
        self.waiting: deque[Seq] = deque()
        self.running: list[Seq] = []
        self.seqs: dict[Any, Seq] = {}
        self.prompt_tokens_total = 0
        self.generation_tokens_total = 0
        self.preemptions_total = 0

    def add(self, seq: Seq) -> None:
        self.seqs[seq.rid] = seq
        self.waiting.append(seq)

    def abort(self, rid: Any) -> None:
        """The client went away: free what the sequence holds and forget it."""
        seq = self.seqs.pop(rid, None)
        if seq is None or seq.state == FINISHED:
            return
        if seq.state == RUNNING:
            self.running.remove(seq)
            self._free(seq)
        else:
            self.waiting.remove(seq)
        seq.state = FINISHED

    @property
    def busy(self) -> bool:
        return bool(self.running or self.waiting)

    def step(self, now: float) -> Step | None:
        """Plan the step that starts at `now` and apply it; its tokens are due at `step.end`."""
        budget = self.params.max_batched_tokens
        plan: list[tuple[Seq, int]] = []
        preempted: list[Seq] = []
        budget = self._schedule_running(now, budget, plan, preempted)
        if not preempted:
            self._admit(now, budget, plan)
        if not plan:
            return None
        return self._apply(now, plan, preempted)

    def _schedule_running(self, now: float, budget: int, plan: list[tuple[Seq, int]], out: list[Seq]) -> int:
        """Inlined (the simulation's hot loop: a step per decode token of every running sequence)."""
        running, size = self.running, self.params.block_size
        i = 0
        while i < len(running) and budget > 0:
            seq = running[i]
            n = seq.prompt_tokens + seq.generated - seq.computed
            n = n if n < budget else budget
            need = -(-(seq.computed + n) // size) - seq.anon - seq.keyed
            if need <= 0 or self._grow(seq, need, now, out):  # most decode steps: the last block has room
                plan.append((seq, n))
                budget -= n
                i += 1
        return budget

    def _grow(self, seq: Seq, need: int, now: float, out: list[Seq]) -> bool:
        """`need` more blocks for a running sequence, preempting from the tail until they fit; False when the
        sequence itself had to go."""
        while not self.kv.allocate(need):
            victim = self.running[-1]
            self._preempt(victim, now)
            out.append(victim)
            if victim is seq:
                return False
        seq.anon += need
        return True

    def _blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.params.block_size)

    def _preempt(self, seq: Seq, now: float) -> None:
        """Recompute preemption: free everything, back to the front of the queue, progress kept as tokens."""
        self.running.remove(seq)
        self._free(seq)
        seq.computed = 0
        seq.state = WAITING
        seq.waiting_since = now
        seq.preempted_at.append(now)
        self.waiting.appendleft(seq)
        self.preemptions_total += 1

    def _free(self, seq: Seq) -> None:
        self.kv.release(seq.anon)
        self.kv.unpin_all(seq.keys[: seq.keyed])
        seq.anon = seq.keyed = 0

    def _admit(self, now: float, budget: int, plan: list[tuple[Seq, int]]) -> None:
        limit = self.params.max_num_seqs
        while self.waiting and budget > 0 and len(self.running) < limit:
            seq = self.waiting[0]
            n = self._start(seq, budget)
            if n == 0:
                break
            self.waiting.popleft()
            self._run(seq, now)
            plan.append((seq, n))
            budget -= n

    def _start(self, seq: Seq, budget: int) -> int:
        """Reserve the cached prefix and the blocks of the first chunk; the chunk's tokens, or 0 without room."""
        hits = self._hits(seq)
        keys = seq.keys[:hits]
        computed = hits * self.params.block_size
        n = min(seq.prompt_tokens + seq.generated - computed, budget)
        need = max(0, self._blocks_for(computed + n) - hits)
        if need > self.kv.free_after_pinning(keys):
            return 0
        for key in keys:
            self.kv.pin(key)
        self.kv.allocate(need)
        seq.keyed, seq.anon, seq.computed = hits, need, computed
        return n

    def _hits(self, seq: Seq) -> int:
        """Cached leading blocks, leaving at least one token to compute (the one whose output is sampled)."""
        if not self.params.prefix_caching:
            return 0
        hits = self.kv.hits(seq.keys)
        size = self.params.block_size
        while hits and hits * size >= seq.prompt_tokens + seq.generated:
            hits -= 1
        return hits

    def _run(self, seq: Seq, now: float) -> None:
        seq.state = RUNNING
        seq.waits.append((seq.waiting_since, now))
        if seq.first_scheduled is None:
            seq.first_scheduled = now
            seq.cached_tokens = seq.computed
        self.running.append(seq)

    def _apply(self, now: float, plan: list[tuple[Seq, int]], preempted: list[Seq]) -> Step:
        decode = total = 0
        for seq, n in plan:
            total += n
            if n == 1 and seq.generated > 0 and seq.computed == seq.prompt_tokens + seq.generated - 1:
                decode += 1  # a decode slot: one token after the prefill (the KV holds all but the last sampled)
        end = now + self.params.step_ms(total - decode, decode) / 1000.0
        step = Step(now, end, len(plan), total - decode, decode, preempted=preempted)
        self._advance(plan, step)
        return step

    def _advance(self, plan: list[tuple[Seq, int]], step: Step) -> None:
        """Each planned sequence computes its tokens; one whose every token is computed samples one (inlined: the
        simulation's hot loop)."""
        caching, batch, end, tokens = self.params.prefix_caching, step.batch, step.end, step.tokens
        for seq, n in plan:
            seq.computed += n
            if caching and seq.keyed < len(seq.keys):
                self._publish(seq)
            generated = seq.generated
            if seq.prompt_tokens + generated > seq.computed:
                continue
            if generated < seq.output_tokens:
                seq.generated = generated = generated + 1
                runs = seq.batches  # flat run-length: batch size, steps, batch size, steps, ...
                if runs and runs[-2] == batch:
                    runs[-1] += 1
                else:
                    runs += (batch, 1)
                seq.token_times.append(end)
                if seq.first_token is None:
                    seq.first_token = end
                    self.prompt_tokens_total += seq.prompt_tokens
                tokens.append(seq)
            if generated >= seq.output_tokens:
                self._finish(seq, step)
        self.generation_tokens_total += len(tokens)

    def _publish(self, seq: Seq) -> None:
        """Full prompt blocks just computed become cached blocks others can share."""
        full = min(seq.computed // self.params.block_size, len(seq.keys))
        if full > seq.keyed:
            self.kv.publish_all(seq.keys[seq.keyed : full])
            seq.anon -= full - seq.keyed
            seq.keyed = full

    def _finish(self, seq: Seq, step: Step) -> None:
        self.running.remove(seq)
        self._free(seq)
        seq.state = FINISHED
        self.seqs.pop(seq.rid, None)
        step.finished.append(seq)
