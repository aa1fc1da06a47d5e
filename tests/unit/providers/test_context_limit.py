"""The context window servers state in their context-length errors (loadlib.providers.errors_body.context_limit_in),
in the words of each server family."""

from __future__ import annotations

import pytest

from loadlib.providers.errors_body import context_limit_in, is_context_length


@pytest.mark.parametrize(
    ("message", "limit"),
    [
        (
            "This model's maximum context length is 4096 tokens. However, your messages resulted in 8086 tokens.",
            4096,
        ),
        ("The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure ...", 4096),
        ("prompt is too long: 210000 tokens > 200000 maximum", 200000),
        ("input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, decrease input length", 200000),
        ("`inputs` tokens + `max_new_tokens` must be <= 4096. Given: 5000 `inputs` tokens and 256", 4096),
        ("The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).", 1048576),
        ("Prompt contains 40000 tokens, too large for model with 32768 maximum context length", 32768),
        ("maximum context length is 131,072 tokens", 131072),
    ],
)
def test_the_stated_window_is_read(message: str, limit: int) -> None:
    assert context_limit_in(message) == limit


def test_a_message_that_states_no_window_gives_none() -> None:
    bare = "the request exceeds the available context size, try increasing it"  # llama.cpp: the number is a field
    assert is_context_length(bare) and context_limit_in(bare) is None
    assert context_limit_in(None) is None and context_limit_in("") is None
