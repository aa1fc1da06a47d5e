"""One request inside the engine: its progress (tokens computed, tokens generated, blocks held) and the ground truth
of what the engine did to it (waits, preemptions, cache hits, the batch of every step that gave it a token)."""

from __future__ import annotations

from typing import Any

WAITING, RUNNING, FINISHED = "waiting", "running", "finished"


class Seq:
    """Times are the engine's clock (seconds). `keys` name the full blocks of the prompt (prefix caching)."""

    __slots__ = (
        "anon",
        "arrival",
        "batches",
        "cached_tokens",
        "computed",
        "finish_reason",
        "first_scheduled",
        "first_token",
        "generated",
        "keyed",
        "keys",
        "output_tokens",
        "preempted_at",
        "prompt_tokens",
        "rid",
        "state",
        "token_times",
        "waiting_since",
        "waits",
    )

    def __init__(self, rid: Any, arrival: float, prompt_tokens: int, output_tokens: int, keys: tuple[int, ...]) -> None:
        self.rid = rid
        self.arrival = arrival
        self.prompt_tokens = max(1, prompt_tokens)
        self.output_tokens = output_tokens
        self.keys = keys
        self.state = WAITING
        self.finish_reason = "stop"  # what the answer's end will say (length: capped by max_tokens)
        self.computed = 0  # tokens whose KV is computed
        self.generated = 0  # output tokens sampled
        self.anon = 0  # anonymous blocks held
        self.keyed = 0  # leading prompt blocks held as cached (shared) blocks
        self.cached_tokens = 0  # prompt tokens the first admission found in the prefix cache
        self.waiting_since = arrival
        self.first_scheduled: float | None = None
        self.first_token: float | None = None
        self.waits: list[tuple[float, float]] = []  # (from, to) in the waiting queue: the first, then after preemptions
        self.preempted_at: list[float] = []
        self.batches: list[int] = []  # run-length, flat (size, steps, size, ...), of the steps that sampled a token
        self.token_times: list[float] = []

    @property
    def uncomputed(self) -> int:
        """Tokens whose KV the next steps must compute before the next token can be sampled."""
        return self.prompt_tokens + self.generated - self.computed

    @property
    def blocks(self) -> int:
        return self.anon + self.keyed

    def truth(self) -> dict[str, Any]:
        """The engine's part of the request's ground truth, in milliseconds after its arrival."""
        ms = self._ms
        queue = sum(b - a for a, b in self.waits) * 1000.0
        return {
            "queue_ms": round(queue, 3),
            "waits_ms": [[ms(a), ms(b)] for a, b in self.waits],
            "first_scheduled_ms": None if self.first_scheduled is None else ms(self.first_scheduled),
            "prefill_ms": None
            if self.first_token is None or self.first_scheduled is None
            else round((self.first_token - self.first_scheduled) * 1000.0, 3),
            "decode_steps": max(0, self.generated - 1),
            "batch_sizes": [self.batches[i : i + 2] for i in range(0, len(self.batches), 2)],
            "preemptions": len(self.preempted_at),
            "preempted_at_ms": [ms(t) for t in self.preempted_at],
            "cached_tokens": self.cached_tokens,
            "cache_hit": self.cached_tokens > 0,
        }

    def _ms(self, t: float) -> float:
        return round((t - self.arrival) * 1000.0, 3)
