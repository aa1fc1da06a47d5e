"""The engine's parameters and its named profiles.

A profile is a model of load behaviour calibrated to one published throughput figure, not a claim about any GPU:
docs/mock.md cites the figure. Any single parameter can be set over a profile (MockConfig keys, CLI flags).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class EngineParams:
    """A step costs `step_base_ms`, plus `prefill_ms_per_1k` per 1,000 prompt tokens it prefills, plus
    `decode_ms_per_seq` for each sequence it decodes: the batch makes every token slower."""

    step_base_ms: float = 6.0
    prefill_ms_per_1k: float = 65.66
    decode_ms_per_seq: float = 0.326
    max_num_seqs: int = 256
    max_batched_tokens: int = 8192
    kv_cache_tokens: int = 262_144
    block_size: int = 16
    prefix_caching: bool = True

    def step_ms(self, prefill_tokens: int, decode_seqs: int) -> float:
        return (
            self.step_base_ms + self.prefill_ms_per_1k * prefill_tokens / 1000.0 + self.decode_ms_per_seq * decode_seqs
        )

    @property
    def kv_blocks(self) -> int:
        return self.kv_cache_tokens // self.block_size

    def decode_tokens_per_s(self, batch: int) -> float:
        """Output tokens per second of a step loop decoding `batch` sequences and nothing else."""
        return batch * 1000.0 / self.step_ms(0, batch)

    def prefill_tokens_per_s(self) -> float:
        """Prompt tokens per second of a step loop prefilling a full token budget each step."""
        return self.max_batched_tokens * 1000.0 / self.step_ms(self.max_batched_tokens, 0)


# Calibrated to alibaba/InferSim's README table (Qwen3-8B-FP8 on one H20, measured with SGLang): prefill 15,061 and
# decode 2,682 tokens per GPU-second. Prefill: a full 8,192-token budget step takes 6 + 8192 * 0.06566 = 543.9 ms,
# 15,061 tokens/s. Decode: 128 sequences per step take 6 + 128 * 0.326 = 47.7 ms, 2,682 tokens/s.
PROFILES: dict[str, EngineParams] = {
    "h20-8b": EngineParams(),
    # a small cache and budget for tests and drills of KV exhaustion: long documents queue and are preempted
    "tiny-kv": EngineParams(kv_cache_tokens=8192, max_batched_tokens=2048, max_num_seqs=64),
}
DEFAULT_PROFILE = "h20-8b"
# MockConfig keys that override a profile's value (None there: take the profile's)
PARAM_KEYS = tuple(f.name for f in dataclasses.fields(EngineParams))


def engine_params(profile: str, overrides: dict[str, Any]) -> EngineParams:
    """The profile with every key that is not None in `overrides` set over it (prefix_caching as on/off)."""
    given = {k: v for k, v in overrides.items() if k in PARAM_KEYS and v is not None}
    if isinstance(given.get("prefix_caching"), str):
        given["prefix_caching"] = given["prefix_caching"] == "on"
    return dataclasses.replace(PROFILES[profile], **given)
