"""Prefix-block names: prompts sharing their first messages share the names of the blocks inside them, no others."""

from __future__ import annotations

from loadlib.mock.engine.prefix import block_keys
from loadlib.mock.prompt import message_bounds
from loadlib.records.tokens import REPLY_PRIMING, count_chat

SYSTEM = {"role": "system", "content": "You are a support agent for a shoe shop. " * 20}


def keys(messages: list[dict[str, str]]) -> tuple[int, ...]:
    bounds = message_bounds(messages)
    return block_keys(messages, bounds, bounds[-1] + REPLY_PRIMING, 16)


def test_bounds_add_up_to_the_count() -> None:
    messages = [SYSTEM, {"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi", "name": "bot"}]
    assert message_bounds(messages)[-1] + REPLY_PRIMING == count_chat(messages)


def test_a_shared_system_prompt_shares_the_blocks_inside_it() -> None:
    a = keys([SYSTEM, {"role": "user", "content": "Where is my parcel? " * 10}])
    b = keys([SYSTEM, {"role": "user", "content": "Can I return shoes? " * 10}])
    inside = message_bounds([SYSTEM])[0] // 16
    assert inside > 5
    assert a[:inside] == b[:inside]
    assert not set(a[inside:]) & set(b[inside:])


def test_a_conversation_shares_its_earlier_turns() -> None:
    turn1 = [SYSTEM, {"role": "user", "content": "Where is my parcel? " * 10}]
    turn2 = [*turn1, {"role": "assistant", "content": "On its way. " * 10}, {"role": "user", "content": "When?"}]
    one, two = keys(turn1), keys(turn2)
    whole = message_bounds(turn1)[-1] // 16
    assert two[:whole] == one[:whole]


def test_a_different_first_message_shares_nothing() -> None:
    a = keys([{"role": "system", "content": "A " + SYSTEM["content"]}])
    b = keys([SYSTEM])
    assert not set(a) & set(b)
