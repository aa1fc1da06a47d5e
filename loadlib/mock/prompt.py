"""Prompt-token counts for usage, cached: clients compare them with their own estimate, and long prompts repeat.

Both APIs are counted with `loadlib.records.tokens.count_chat` (o200k, OpenAI's per-message framing); an Anthropic
`system` field counts as a leading system message, which is what our adapter lifts it out of. A long-document canary
(`loadlib.data.canary`) is found with the count; its token position is counted only when a request truncates the
prompt, since only then can it fall in the part the mock dropped.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

from loadlib.data import canary
from loadlib.records.tokens import (
    REPLY_PRIMING,
    TOKENS_PER_MESSAGE,
    TOKENS_PER_NAME,
    content_text,
    count_chat,
    get_encoding,
)

LARGE_PROMPT_BYTES = 32 * 1024  # above this, count off the event loop (tiktoken releases the GIL)


@dataclass(frozen=True, slots=True)
class Canary:
    """The last reference code of a conversation: its message and the index just after it in that message's text."""

    code: str
    message: int
    end: int


@dataclass(frozen=True, slots=True)
class PromptCount:
    """What the mock knows of a prompt: its tokens as sent, its canary, and (once a truncating request needed it)
    the prompt tokens up to the canary's end."""

    tokens: int
    canary: Canary | None = None
    canary_at: int | None = None
    bounds: tuple[int, ...] = ()  # prompt tokens up to the end of each message (the batching engine's prefix keys)

    def needs_position(self, truncate_to: int) -> bool:
        """Whether `truncate_to` cuts this prompt and the canary's position is still unknown."""
        return self.canary is not None and self.canary_at is None and 0 < truncate_to < self.tokens

    def canary_kept(self, truncate_to: int) -> bool | None:
        """Whether the part of the prompt the mock keeps holds the canary; None without one."""
        if self.canary is None:
            return None
        if truncate_to <= 0 or self.tokens <= truncate_to:
            return True
        return self.canary_at is not None and self.canary_at <= truncate_to


def chat_messages(api: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    messages = list(body.get("messages") or [])
    if api == "anthropic" and body.get("system"):
        messages.insert(0, {"role": "system", "content": body["system"]})
    return messages


def content_key(messages: list[dict[str, Any]]) -> bytes:
    """Stable bytes of the conversation: the LRU key and the seed of the output text."""
    return orjson.dumps(messages, option=orjson.OPT_SORT_KEYS)


def find_canary(messages: list[dict[str, Any]]) -> Canary | None:
    """The conversation's last canary: one regex scan of each message's text, and nothing more without one."""
    for index in range(len(messages) - 1, -1, -1):
        found = canary.find(content_text(messages[index].get("content")))
        if found is not None:
            return Canary(found[0], index, found[1])
    return None


def canary_position(messages: list[dict[str, Any]], found: Canary) -> int:
    """Prompt tokens up to the canary's end: the messages before it framed as count_chat frames them, then its own
    message cut just after the code (the reply priming comes after the prompt, so it is not counted)."""
    msg = messages[found.message]
    cut = {**msg, "content": content_text(msg.get("content"))[: found.end]}
    return count_chat([*messages[: found.message], cut]) - REPLY_PRIMING


def message_bounds(messages: list[dict[str, Any]]) -> tuple[int, ...]:
    """Tokens up to the end of each message, framed as `count_chat` frames them (its total is the last bound plus
    the reply priming): one pass, the same encodes as `count_chat`."""
    enc = get_encoding()
    total, out = 0, []
    for msg in messages:
        total += TOKENS_PER_MESSAGE + len(enc.encode(content_text(msg.get("content")), disallowed_special=()))
        total += len(enc.encode(str(msg.get("role", "")), disallowed_special=()))
        if msg.get("name"):
            total += TOKENS_PER_NAME + len(enc.encode(str(msg["name"]), disallowed_special=()))
        out.append(total)
    return tuple(out)


def measure(messages: list[dict[str, Any]], truncate_to: int, known: PromptCount | None = None) -> PromptCount:
    """Count the prompt and find its canary (unless `known`), then the canary's position if `truncate_to` cuts it.
    The count keeps each message's end, which the batching engine names prefix blocks by."""
    if known is None:
        bounds = message_bounds(messages)
        known = PromptCount((bounds[-1] if bounds else 0) + REPLY_PRIMING, find_canary(messages), bounds=bounds)
    count = known
    if count.needs_position(truncate_to) and count.canary is not None:
        count = dataclasses.replace(count, canary_at=canary_position(messages, count.canary))
    return count


class PromptCounter:
    """LRU of prompt counts keyed by the conversation's bytes."""

    def __init__(self, maxsize: int = 2048) -> None:
        self.maxsize = maxsize
        self._cache: OrderedDict[bytes, PromptCount] = OrderedDict()

    def cached(self, key: bytes) -> PromptCount | None:
        n = self._cache.get(key)
        if n is not None:
            self._cache.move_to_end(key)
        return n

    def store(self, key: bytes, count: PromptCount) -> PromptCount:
        self._cache[key] = count
        if len(self._cache) > self.maxsize:
            self._cache.popitem(last=False)
        return count
