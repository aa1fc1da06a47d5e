"""Hostile behaviours about usage: a valid stream whose final usage is impossible, each count sane on its own.

Registered in loadlib.mock.hostile's `--list` by an import at the end of that module. `cached_tokens` 1,000,000 of a
10-token prompt priced a run 16,700 times too high (issue 23): a client must reject such counts, say which, and price
its own estimate instead (docs/metrics.md, "Tokens and cost"). The ids say what each response carried
(`NAME-N`), so a test can tell the responses of the mix apart.
"""

from __future__ import annotations

from typing import Any

from loadlib.mock.hostile import DONE, Exchange, behaviour, delta, event, send_stream

PAUSE_S = 0.01  # between events: a real stream's pace, not a flood
PROMPT, COMPLETION = 10, 20

# The usage object each behaviour ends its stream with; "possible-usage" is the control.
USAGES: dict[str, dict[str, Any]] = {
    "impossible-cached": {
        "prompt_tokens": PROMPT,
        "completion_tokens": COMPLETION,
        "total_tokens": PROMPT + COMPLETION,
        "prompt_tokens_details": {"cached_tokens": 1_000_000},
    },
    "impossible-reasoning": {
        "prompt_tokens": PROMPT,
        "completion_tokens": COMPLETION,
        "total_tokens": PROMPT + COMPLETION,
        "completion_tokens_details": {"reasoning_tokens": 500},
    },
    "total-mismatch": {"prompt_tokens": PROMPT, "completion_tokens": COMPLETION, "total_tokens": 99},
    "possible-usage": {
        "prompt_tokens": PROMPT,
        "completion_tokens": COMPLETION,
        "total_tokens": PROMPT + COMPLETION,
        "prompt_tokens_details": {"cached_tokens": PROMPT},
        "completion_tokens_details": {"reasoning_tokens": COMPLETION},
    },
}
MIX = tuple(USAGES)  # "impossible-usage": one of these per request, in turn


def usage_stream(x: Exchange, name: str) -> bool:
    """Five content events, the finish reason, then the usage of `name` on a choice-less chunk, and [DONE]."""
    rid = f"{name}-{x.n}"
    events = [event(delta(f"u{i} ", id=rid)) for i in range(5)]
    finish = {
        "id": rid,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    final = {"id": rid, "object": "chat.completion.chunk", "choices": [], "usage": USAGES[name]}
    return send_stream(x, [*events, event(finish), event(final), DONE], PAUSE_S)


@behaviour("impossible-cached", "200 SSE: a valid stream whose usage has cached_tokens 1,000,000 of a 10-token prompt")
def impossible_cached(x: Exchange) -> bool:
    return usage_stream(x, "impossible-cached")


@behaviour("impossible-reasoning", "200 SSE: a valid stream whose usage has 500 reasoning tokens of 20 completion")
def impossible_reasoning(x: Exchange) -> bool:
    return usage_stream(x, "impossible-reasoning")


@behaviour("total-mismatch", "200 SSE: a valid stream whose usage has total_tokens 99 for prompt 10 + completion 20")
def total_mismatch(x: Exchange) -> bool:
    return usage_stream(x, "total-mismatch")


@behaviour("impossible-usage", "200 SSE: the three impossible usages above and a possible one, in turn per request")
def impossible_usage(x: Exchange) -> bool:
    return usage_stream(x, MIX[x.n % len(MIX)])
