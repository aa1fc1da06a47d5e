"""The output a parser keeps of one response, within a budget of characters (`--llm-max-text-kb`).

A parser keeps the answer's text for the scenarios' checks, conversations and answers, and for the token estimate.
Kept whole, a hostile stream made it grow with the response (0.7 to 2.1 × its bytes: one string object per event
plus the joined copy, docs/metrics.md "Memory"). Here every kind of output (each choice's text, reasoning, refusal,
each tool call's arguments) draws on one budget per response; what does not fit is counted, not kept. Fragments
are joined in groups as they arrive, so a stream of one-character events holds one string per GROUP events instead
of one per event (an object costs ~58 B beside its character).
"""

from __future__ import annotations

import dataclasses

from loadlib.providers.base import StreamResult

DEFAULT_MAX_TEXT = 1 << 20  # characters: a 128K-token answer is about 0.5 M
GROUP = 256  # fragments joined into one string: the tail never holds more


class Budget:
    """Characters one response may still keep, and how many it could not."""

    __slots__ = ("dropped", "room")

    def __init__(self, room: int = DEFAULT_MAX_TEXT) -> None:
        self.room = room
        self.dropped = 0

    def take(self, fragment: str) -> str:
        """The part of `fragment` that fits (all of it while there is room); the rest is counted as dropped."""
        n = len(fragment)
        if n <= self.room:
            self.room -= n
            return fragment
        kept, self.room = fragment[: self.room], 0
        self.dropped += n - len(kept)
        return kept


class Kept:
    """One kind of output of one response: fragments appended as they arrive, joined once at the end."""

    __slots__ = ("_budget", "_chunks", "_tail")

    def __init__(self, budget: Budget) -> None:
        self._budget = budget
        self._chunks: list[str] = []
        self._tail: list[str] = []

    def append(self, fragment: str) -> None:
        budget = self._budget
        n = len(fragment)
        if n <= budget.room:  # Budget.take's common case inline: this runs once per output event
            budget.room -= n
        else:
            fragment = budget.take(fragment)
        if fragment:
            tail = self._tail
            tail.append(fragment)
            if len(tail) >= GROUP:
                self._chunks.append("".join(tail))
                tail.clear()

    def value(self) -> str:
        return "".join(self._chunks) + "".join(self._tail)


def capped(result: StreamResult, room: int) -> StreamResult:
    """A non-streamed answer held to the same budget as a stream's, kinds in the order a stream keeps them: so
    `text_dropped` and the text the checks see mean the same for both (the body itself is bounded by the response
    cap, and gone once parsed)."""
    budget = Budget(room)
    texts = {i: budget.take(t) for i, t in result.text_by_choice.items()}
    reasoning, refusal = budget.take(result.reasoning), budget.take(result.refusal)
    tools = [dataclasses.replace(t, arguments=budget.take(t.arguments)) for t in result.tool_calls]
    if not budget.dropped:
        return result
    return dataclasses.replace(
        result,
        text_by_choice=texts,
        reasoning=reasoning,
        refusal=refusal,
        tool_calls=tools,
        text_dropped=budget.dropped,
    )
