"""A server's usage object, OpenAI's or Anthropic's, into `Usage`: each count sane, and the counts possible together.

A count alone is checked by `fields.count` (a non-negative integer up to MAX_COUNT). Counts that are each sane can
still be impossible together: `cached_tokens` 1,000,000 of a 10-token prompt priced a run 16,700 times too high. The
rules are the APIs' own definitions (docs/metrics.md, "Tokens and cost"):

- OpenAI: `prompt_tokens_details.cached_tokens` (DeepSeek: `prompt_cache_hit_tokens`) is part of `prompt_tokens`,
  `completion_tokens_details.reasoning_tokens` part of `completion_tokens`, and `total_tokens` is their sum.
- Anthropic: `input_tokens` counts only the prompt after the last cache breakpoint; `cache_read_input_tokens` and
  `cache_creation_input_tokens` are counted beside it, and the whole prompt is their sum. So any cache count is
  possible beside any input count; only a prompt whose three parts together pass MAX_COUNT is impossible.

Every `Usage` says the same whatever the API: `prompt_tokens` is the whole prompt, `cached_prompt_tokens` (read from
the cache) and `cache_write_tokens` (written to it) are parts of it, `reasoning_tokens` part of `completion_tokens`.

Which count of an impossible combination is wrong cannot be told, so every one of them is rejected, as a count that
is not sane is: dropped (None, the estimate is used instead) and listed in `Usage.rejected` with a reason naming
each field and its value. A part whose whole is absent or rejected has nothing to be part of: it goes too (0 is
always possible and stays). So a cost is never computed from counts that contradict each other. Pure functions.
"""

from __future__ import annotations

from typing import Any

from loadlib.providers import fields
from loadlib.providers.base import Usage

ANTHROPIC_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
ANTHROPIC_PROMPT = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")  # the whole prompt


class Counts:
    """The sane counts of one usage object by role, where each came from, and the reasons of what was rejected."""

    __slots__ = ("at", "n", "rejected")

    def __init__(self, places: dict[str, tuple[str, Any]]) -> None:
        self.rejected: list[str] = []
        self.at = {role: where for role, (where, _) in places.items()}
        self.n = {role: fields.count(value, where, self.rejected) for role, (where, value) in places.items()}

    def shown(self, role: str) -> str:
        return f"{self.at[role]}={self.n[role]}"

    def reject(self, reason: str, *roles: str) -> None:
        """Drop every count of an impossible combination, and say why once."""
        self.rejected.append(reason)
        for role in roles:
            self.n[role] = None


def openai_usage(raw: dict[str, Any], where: str = "usage") -> Usage:
    """An OpenAI-style usage object (also DeepSeek's cache-hit field and Groq's x_groq.usage): counts that are not
    sane, or not possible together, are rejected and listed."""
    c = Counts(_openai_places(raw, where))
    _total(c, raw.get("total_tokens"), f"{where}.total_tokens")
    _part_of(c, "cached", "prompt")
    _part_of(c, "reasoning", "completion")
    n = c.n
    return Usage(
        prompt_tokens=n["prompt"],
        completion_tokens=n["completion"],
        cached_prompt_tokens=n["cached"],
        reasoning_tokens=n["reasoning"],
        rejected=tuple(c.rejected),
    )


def _openai_places(raw: dict[str, Any], where: str) -> dict[str, tuple[str, Any]]:
    """Each count's field path and raw value; a details object of another type holds nothing."""
    prompt_details = raw.get("prompt_tokens_details")
    completion_details = raw.get("completion_tokens_details")
    cached = prompt_details.get("cached_tokens") if type(prompt_details) is dict else None
    cached_at = f"{where}.prompt_tokens_details.cached_tokens"
    if cached is None:
        cached, cached_at = raw.get("prompt_cache_hit_tokens"), f"{where}.prompt_cache_hit_tokens"
    reasoning = completion_details.get("reasoning_tokens") if type(completion_details) is dict else None
    return {
        "prompt": (f"{where}.prompt_tokens", raw.get("prompt_tokens")),
        "completion": (f"{where}.completion_tokens", raw.get("completion_tokens")),
        "cached": (cached_at, cached),
        "reasoning": (f"{where}.completion_tokens_details.reasoning_tokens", reasoning),
    }


def _total(c: Counts, raw_total: Any, where: str) -> None:
    """`total_tokens` = prompt + completion, when the server sent all three: else both parts are rejected. The total
    itself is never used, so one that is not a sane count is no evidence against its parts, and is ignored."""
    total, prompt, completion = fields.count(raw_total, where, []), c.n["prompt"], c.n["completion"]
    if total is None or prompt is None or completion is None or total == prompt + completion:
        return
    reason = f"{where}={total} != {c.shown('prompt')} + {c.shown('completion')}"
    c.reject(reason, "prompt", "completion")


def _part_of(c: Counts, part: str, whole: str) -> None:
    """A part (cached, reasoning) at most its whole; a non-zero part of no whole (absent or rejected) goes too."""
    n_part, n_whole = c.n[part], c.n[whole]
    if not n_part:
        return
    if n_whole is None:
        c.reject(f"{c.shown(part)} without a sane {c.at[whole]}", part)
    elif n_part > n_whole:
        c.reject(f"{c.shown(part)} > {c.shown(whole)}", part, whole)


def anthropic_usage(raw: dict[str, Any]) -> Usage:
    """Anthropic's merged usage as a `Usage` of the whole prompt (input + cache read + cache write): counts that are
    not sane, or a whole prompt beyond MAX_COUNT, are rejected and listed. A cache read above `input_tokens` is
    normal: the input excludes it."""
    c = Counts({key: (f"usage.{key}", raw.get(key)) for key in ANTHROPIC_KEYS})
    whole = _anthropic_prompt(c, raw)
    n = c.n
    return Usage(
        prompt_tokens=whole,
        completion_tokens=n["output_tokens"],
        cached_prompt_tokens=n["cache_read_input_tokens"],
        cache_write_tokens=n["cache_creation_input_tokens"],
        rejected=tuple(c.rejected),
    )


def _anthropic_prompt(c: Counts, raw: dict[str, Any]) -> int | None:
    """input_tokens + cache read + cache write (an absent cache count is 0). Unknown when `input_tokens` is absent or
    not sane, or a cache count sent is not sane: then a non-zero cache count is a part of no whole and goes too."""
    sent = [key for key in ANTHROPIC_PROMPT if raw.get(key) is not None]
    if c.n["input_tokens"] is None or any(c.n[key] is None for key in sent):
        for key in ANTHROPIC_PROMPT[1:]:
            if c.n[key]:
                c.reject(f"{c.shown(key)} without a sane whole prompt (usage.input_tokens and its cache counts)", key)
        return None
    whole = sum(c.n[key] or 0 for key in ANTHROPIC_PROMPT)
    if whole > fields.MAX_COUNT:
        c.reject(f"{' + '.join(c.shown(key) for key in sent)} > {fields.MAX_COUNT}", *ANTHROPIC_PROMPT)
        return None
    return whole
