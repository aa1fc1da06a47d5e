"""Hostile behaviours about usage: a valid stream whose final usage is impossible, each count sane on its own; an
Anthropic stream that ends before its final usage, leaving only message_start's provisional output count.

Registered in loadlib.mock.hostile's `--list` by an import at the end of that module. `cached_tokens` 1,000,000 of a
10-token prompt priced a run 16,700 times too high (issue 23): a client must reject such counts, say which, and price
its own estimate instead (docs/metrics.md, "Tokens and cost"). The ids say what each response carried
(`NAME-N`), so a test can tell the responses of the mix apart. Anthropic's message_start carries `output_tokens` 1, a
placeholder the final message_delta replaces: a stream broken or cut off before it must not be counted as 1 token
(issue 36).
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from loadlib.mock.hostile import CHUNKED, DONE, SSE, Exchange, behaviour, chunk, delta, event, head, send_stream

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


# What Anthropic's message_start says of a cached prompt: input 4 + cache read 6 = the whole prompt of 10, and the
# provisional output count, 1, that only message_delta would have made final.
START_USAGE = {"input_tokens": 4, "cache_read_input_tokens": 6, "cache_creation_input_tokens": 0, "output_tokens": 1}
START_PROMPT, START_CACHED = 10, 6
PARTIAL_TEXT = ("One", " two", " three", " four", " five")  # the text deltas before the break: 5 tokens (o200k)
BROKEN = "broken-before-message-delta"  # the fault counted in GET /hostile/stats
SLOW_PAUSE_S = 0.2  # between a never-ending stream's deltas: slow, well inside any idle timeout


def messages_event(obj: dict[str, Any]) -> bytes:
    """One named SSE event of Anthropic's Messages stream: `event: TYPE` then its data."""
    return b"event: " + obj["type"].encode() + b"\n" + event(obj)


def messages_opening(x: Exchange, rid: str) -> None:
    """The head, message_start with the provisional usage, and the text block's start."""
    message = {"id": rid, "type": "message", "role": "assistant", "model": "hostile", "content": []}
    start = {"type": "message_start", "message": {**message, "usage": START_USAGE}}
    block = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    x.peer.send(head("200 OK", SSE, CHUNKED) + chunk(messages_event(start)) + chunk(messages_event(block)))


def text_delta(text: str) -> bytes:
    return chunk(
        messages_event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})
    )


@behaviour(
    "anthropic-broken",
    "200 SSE (Messages): message_start with output_tokens 1, 5 text deltas, then the "
    "connection closes before message_delta",
)
def anthropic_broken(x: Exchange) -> bool:
    """The chunked body ends without its last chunk: the client sees the connection lost mid-stream, having read
    everything sent (nothing of the request is left unread, so the close is a FIN, not a reset)."""
    messages_opening(x, f"anthropic-broken-{x.n}")
    for text in PARTIAL_TEXT:
        time.sleep(PAUSE_S)
        x.peer.send(text_delta(text))
    x.tally(BROKEN)
    return False


@behaviour(
    "anthropic-never-finishes",
    "200 SSE (Messages): message_start with output_tokens 1, then a text delta "
    "every 200 ms, forever (no message_delta)",
)
def anthropic_never_finishes(x: Exchange) -> bool:
    """Only the client's total timeout or the end of its run stops it; it ends when the client hangs up."""
    messages_opening(x, f"anthropic-never-finishes-{x.n}")
    for i in itertools.count():
        x.peer.send(text_delta(f" w{i}"))
        time.sleep(SLOW_PAUSE_S)
    return False
