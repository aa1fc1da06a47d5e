"""Prompt-token counts for usage, cached: clients compare them with their own estimate, and long prompts repeat.

Both APIs are counted with `loadlib.records.tokens.count_chat` (o200k, OpenAI's per-message framing); an Anthropic
`system` field counts as a leading system message, which is what our adapter lifts it out of.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import orjson

from loadlib.records.tokens import count_chat

LARGE_PROMPT_BYTES = 32 * 1024  # above this, count off the event loop (tiktoken releases the GIL)


def chat_messages(api: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    messages = list(body.get("messages") or [])
    if api == "anthropic" and body.get("system"):
        messages.insert(0, {"role": "system", "content": body["system"]})
    return messages


def content_key(messages: list[dict[str, Any]]) -> bytes:
    """Stable bytes of the conversation: the LRU key and the seed of the output text."""
    return orjson.dumps(messages, option=orjson.OPT_SORT_KEYS)


class PromptCounter:
    """LRU of prompt-token counts keyed by the conversation's bytes."""

    def __init__(self, maxsize: int = 2048) -> None:
        self.maxsize = maxsize
        self._cache: OrderedDict[bytes, int] = OrderedDict()

    def cached(self, key: bytes) -> int | None:
        n = self._cache.get(key)
        if n is not None:
            self._cache.move_to_end(key)
        return n

    def store(self, key: bytes, n: int) -> int:
        self._cache[key] = n
        if len(self._cache) > self.maxsize:
            self._cache.popitem(last=False)
        return n

    @staticmethod
    def count(messages: list[dict[str, Any]]) -> int:
        return count_chat(messages)
