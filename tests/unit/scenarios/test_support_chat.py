"""Support chat: the conversation's prompt estimate grows by the new message only and matches a full recount."""

from __future__ import annotations

import pytest

from loadlib.data import Conversation
from loadlib.errors import ConfigError
from loadlib.mock import expected_text
from loadlib.records import tokens
from loadlib.scenarios.common import message_tokens, parse_range, prompt_tokens
from loadlib.scenarios.conversation import SWEEP_DEFAULT, Dialogue, quote, sweep_sizes

TURNS = (
    "My Aurora X14 laptop from order VM-123456 arrived with a cracked hinge. What now?",
    'You said "{previous}". Does that apply if I paid with a gift card?',
    "Can you summarise the next steps for me as a short list?",
)
CONV = Conversation("c1", "order", TURNS, (tokens.count_text(TURNS[0]), None, tokens.count_text(TURNS[2])))


def test_incremental_estimate_equals_a_full_count_every_turn(monkeypatch) -> None:
    system = ("You are a helpful support assistant.", tokens.count_text("You are a helpful support assistant."))
    d = Dialogue(CONV, system, None)
    counted: list[str] = []
    real = tokens.count_text
    monkeypatch.setattr(tokens, "count_text", lambda t, *a: counted.append(t) or real(t, *a))
    for turn in range(3):
        user, user_tokens = d.next_message()
        estimate = d.history_tokens + message_tokens("user", user_tokens) + tokens.REPLY_PRIMING
        assert estimate == tokens.count_chat([*d.messages, user]), f"turn {turn + 1}"
        answer = expected_text(17 * turn, 20 + turn)  # what the mock says: one token per word
        d.answered(user, user_tokens, answer, 20 + turn)
    assert d.done and len(d.messages) == 7
    texts = [t for t in counted if t not in ("system", "user", "assistant")]  # role names are counted once ever
    assert len(texts) == 1 and texts[0].startswith('You said "'), "only the quoting turn is counted, alone"
    assert quote(d.messages[2]["content"]) in d.messages[3]["content"]


def test_conversation_system_prompt_overrides_the_generated_one() -> None:
    conv = Conversation("c2", "account", ("Hi",), (1,), system="Be terse.", system_tokens=3)
    d = Dialogue(conv, ("generated", 1), 500)
    assert d.messages[0] == {"role": "system", "content": "Be terse."}
    assert d.history_tokens == message_tokens("system", 3) and d.step == 500


def test_prompt_tokens_is_count_chat_arithmetic() -> None:
    msgs = [{"role": "system", "content": "policy text here"}, {"role": "user", "content": "a case"}]
    assert prompt_tokens(("system", tokens.count_text("policy text here")), ("user", 2)) == tokens.count_chat(msgs)


def test_quote_and_option_parsing() -> None:
    assert quote("one two three four five six seven eight nine ten") == "one two three four five six seven eight"
    assert quote("") == "that"
    assert sweep_sizes("") == () and sweep_sizes("on") == SWEEP_DEFAULT
    assert sweep_sizes("100, 2000") == (100, 2000)
    assert parse_range("2", "x") == (2.0, 2.0) and parse_range("0.5-1.5", "x") == (0.5, 1.5)
    for bad in ("3-1", "fast", "-1"):
        with pytest.raises(ConfigError):
            parse_range(bad, "--chat-think-time")
    with pytest.raises(ConfigError, match="--chat-sweep"):
        sweep_sizes("100,abc")
