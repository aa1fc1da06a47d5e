"""What one request will get and when: pure maths from a MockConfig and a seeded RNG.

All times are milliseconds after the request's last byte was read. Deadlines are absolute offsets (not cumulative
sleeps), so scheduling error never accumulates over a long stream.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import accumulate, pairwise

from loadlib.mockapi.config import MockConfig

# Faults that fire inside the body after `fault_at` tokens.
MID_STREAM_FAULTS = frozenset({"drop", "malformed", "error_event"})
# Faults answered with an error status instead of a body.
STATUS_FAULTS = {"rate_limit": 429, "http_500": 500, "http_503": 503}
VARIANTS = 4096  # distinct alternative outputs a nondeterministic answer can take
_GOLDEN = 0x9E3779B1
_MASK = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class Plan:
    fault: str  # the fault applied to this request ("none" when the dice said no)
    output_tokens: int
    tokens_per_event: int
    finish_reason: str  # "stop" or "length" (capped by the request's max_tokens)
    start_ms: float  # when the response head goes out (hang_headers delays it)
    offsets_ms: tuple[float, ...]  # planned write time of each output event
    end_ms: float  # planned write time of the terminal events (or of a non-streamed body), terminal delay included
    fault_event: int  # number of output events written before a mid-stream fault fires; -1 without one
    usage_scale: float = 1.0  # the streamed usage reports completion tokens x this (a server that miscounts)

    @property
    def events(self) -> int:
        return len(self.offsets_ms)

    @property
    def ttft_ms(self) -> float:
        return self.offsets_ms[0] if self.offsets_ms else self.end_ms

    @property
    def itl_ms(self) -> tuple[float, ...]:
        o = self.offsets_ms
        return tuple([b - a for a, b in pairwise(o)])

    @property
    def mean_itl_ms(self) -> float | None:
        o = self.offsets_ms
        return (o[-1] - o[0]) / (len(o) - 1) if len(o) > 1 else None

    def event_tokens(self, index: int) -> int:
        """Tokens carried by output event `index` (the last one may be short)."""
        return min(self.tokens_per_event, self.output_tokens - index * self.tokens_per_event)

    def tokens_before(self, events: int) -> int:
        return min(events * self.tokens_per_event, self.output_tokens)


def _jittered(value: float, jitter: float, rng: random.Random) -> float:
    return max(0.0, value + rng.uniform(-jitter, jitter)) if jitter > 0 else value


def choose_fault(cfg: MockConfig, rng: random.Random) -> str:
    rate = cfg.effective_fault_rate
    if rate <= 0.0:
        return "none"
    return cfg.fault if rate >= 1.0 or rng.random() < rate else "none"


def billed_prompt_tokens(cfg: MockConfig, sent: int) -> int:
    """Prompt tokens the server processes and bills: all of them, or `truncate_to` when it silently truncates."""
    return sent if cfg.truncate_to <= 0 or sent <= cfg.truncate_to else cfg.truncate_to


def reported_prompt_tokens(cfg: MockConfig, sent: int, billed: int) -> int:
    """Prompt tokens the usage reports: those billed, or those sent (a gateway that counts the prompt itself)."""
    return sent if cfg.usage_prompt == "sent" else billed


def draw_variant(cfg: MockConfig, rng: random.Random) -> int:
    """0 for the request's usual output; another value (at `nondeterminism_rate`) for a different one. Draws no
    random number when the rate is 0, so runs without nondeterminism keep their seeded sequence."""
    rate = cfg.nondeterminism_rate
    if rate <= 0.0:
        return 0
    return rng.randrange(1, VARIANTS) if rate >= 1.0 or rng.random() < rate else 0


def output_seed(content_hash: int, variant: int, seed: int) -> int:
    """Seed of a request's generated output: a function of its content, the variant and the server seed."""
    return ((content_hash ^ (variant * _GOLDEN)) + seed) & _MASK


def json_is_valid(cfg: MockConfig, out_seed: int) -> bool:
    """Whether a structured answer is schema-valid: a deterministic coin of the output seed at `json_valid_rate`,
    so repeating a request repeats its validity (temperature 0)."""
    rate = cfg.json_valid_rate
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    return ((out_seed * 2654435761) & _MASK) / 4294967296.0 < rate


def make_plan(
    cfg: MockConfig,
    max_tokens: int | None,
    rng: random.Random,
    prompt_tokens: int = 0,
    natural_tokens: int | None = None,
) -> Plan:
    """Decide the fault, the number of tokens and every event's deadline for one request.

    `prompt_tokens` (billed) add `ttft_per_1k_prompt_ms` to TTFT; `natural_tokens` is the length of an answer whose
    content is fixed (structured JSON) and replaces `output_tokens`."""
    fault = choose_fault(cfg, rng)
    wanted = 0 if fault == "empty" else (cfg.output_tokens if natural_tokens is None else natural_tokens)
    capped = max_tokens is not None and 0 <= max_tokens < wanted
    n = max_tokens if capped and max_tokens is not None else wanted
    k = cfg.tokens_per_event
    n_events = -(-n // k)
    start = cfg.stall_ms if fault == "hang_headers" else 0.0
    base_ttft = cfg.ttft_ms + cfg.ttft_per_1k_prompt_ms * prompt_tokens / 1000.0 if prompt_tokens else cfg.ttft_ms
    ttft = start + _jittered(base_ttft, cfg.ttft_jitter_ms, rng)
    itl = cfg.itl_ms
    if n_events <= 0:
        offsets: list[float] = []
    elif cfg.itl_jitter_ms > 0:
        j = cfg.itl_jitter_ms
        offsets = list(accumulate((max(0.0, itl + rng.uniform(-j, j)) for _ in range(n_events - 1)), initial=ttft))
    else:
        offsets = [ttft + i * itl for i in range(n_events)]
    end = (offsets[-1] if offsets else ttft) + cfg.terminal_delay_ms  # a gateway holding the end of the stream
    fault_event = -1
    if fault in MID_STREAM_FAULTS or fault == "stall":
        fault_event = min(-(-cfg.fault_at // k), n_events)
    if fault == "stall":
        offsets[fault_event:] = [o + cfg.stall_ms for o in offsets[fault_event:]]
        end += cfg.stall_ms
    return Plan(
        fault=fault,
        output_tokens=n,
        tokens_per_event=k,
        finish_reason="length" if capped else "stop",
        start_ms=start,
        offsets_ms=tuple(offsets),
        end_ms=end,
        fault_event=fault_event,
        usage_scale=cfg.usage_completion_scale,
    )
