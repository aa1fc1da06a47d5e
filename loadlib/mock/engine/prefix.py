"""Names of a prompt's full KV blocks, for prefix caching. The mock has no token ids, so a block is named by the
conversation up to the message its last token falls in, and its index: two prompts that share their first messages
(a system prompt, a conversation's earlier turns) share the names of the blocks inside them, and no others."""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

import orjson


def message_hashes(messages: list[dict[str, Any]]) -> list[int]:
    """Chained hashes: entry k names messages 0..k, so equal entries mean equal conversations up to there."""
    out: list[int] = []
    chain = 0
    for msg in messages:
        chain = hash((chain, orjson.dumps(msg, option=orjson.OPT_SORT_KEYS)))
        out.append(chain)
    return out


def block_keys(
    messages: list[dict[str, Any]], bounds: tuple[int, ...], tokens: int, block_size: int
) -> tuple[int, ...]:
    """The key of each full block of a `tokens`-token prompt whose messages end at `bounds` (the reply priming after
    the last message belongs to the last)."""
    hashes = message_hashes(messages)
    if not hashes:
        return ()
    last = len(hashes) - 1
    keys = []
    for j in range(tokens // block_size):
        m = min(bisect_right(bounds, (j + 1) * block_size - 1), last)
        keys.append(hash((hashes[m], j)))
    return tuple(keys)
