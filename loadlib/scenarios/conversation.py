"""A support conversation's state, pure: the messages so far, their prompt tokens, the next customer message.

The prompt estimate grows by what each turn adds (framing, the new message, the answer's tokens from usage); the
history is never recounted. Only a turn that quotes the previous answer is counted, alone, when it is filled in.
"""

from __future__ import annotations

from typing import Any

from loadlib.data import PREVIOUS, Conversation
from loadlib.records import tokens
from loadlib.scenarios.common import message_tokens, parse_ints

SWEEP_DEFAULT = (100, 250, 500, 1000, 2000)
QUOTE_WORDS = 8


def sweep_sizes(spec: str) -> tuple[int, ...]:
    spec = (spec or "").strip().lower()
    if spec in ("", "off", "no", "0"):
        return ()
    if spec in ("on", "yes", "default"):
        return SWEEP_DEFAULT
    return parse_ints(spec, "--chat-sweep", minimum=1)


def quote(previous: str) -> str:
    """The start of the previous answer, as a customer would quote it."""
    words = previous.split()
    return " ".join(words[:QUOTE_WORDS]) if words else "that"


class Dialogue:
    """One conversation's state: the messages so far and their prompt tokens (framing included, priming not)."""

    def __init__(self, conv: Conversation, system: tuple[str, int], step: int | None) -> None:
        self.conv = conv
        self.step = step
        text, n = (conv.system, conv.system_tokens or 0) if conv.system else system
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": text}]
        self.history_tokens = message_tokens("system", n)
        self.turn = 0
        self.previous = ""
        self.first_prompt: int | None = None  # the first turn's prompt tokens, which later turns grow from

    @property
    def done(self) -> bool:
        return self.turn >= len(self.conv.turns)

    def next_message(self) -> tuple[dict[str, Any], int]:
        """The next customer message and its content tokens (counted now only when it quotes the answer)."""
        template = self.conv.turns[self.turn]
        counted = self.conv.turn_tokens[self.turn]
        if counted is None or PREVIOUS in template:
            content = template.replace(PREVIOUS, quote(self.previous))
            return {"role": "user", "content": content}, tokens.count_text(content)
        return {"role": "user", "content": template}, counted

    def answered(self, user: dict[str, Any], user_tokens: int, answer: str, answer_tokens: int) -> None:
        self.messages += [user, {"role": "assistant", "content": answer}]
        self.history_tokens += message_tokens("user", user_tokens) + message_tokens("assistant", answer_tokens)
        self.previous = answer
        self.turn += 1
