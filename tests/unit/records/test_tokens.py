"""Token counting, offline: the bundled encodings are installed where tiktoken looks, and chat framing is counted."""

from __future__ import annotations

import os

import pytest

from loadlib.errors import ConfigError
from loadlib.records import tokens


def test_counts_come_from_the_bundled_encodings_without_a_download(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    assert tokens.install_offline_encodings() == tmp_path
    assert len(list(tmp_path.iterdir())) == len(tokens.BUNDLED)
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(tmp_path)
    assert tokens.count_text("hello world") == 2


def test_chat_framing_is_counted_per_message() -> None:
    one = [{"role": "user", "content": "hello world"}]
    two = [{"role": "system", "content": "be brief"}, *one]
    assert tokens.count_chat(one) == tokens.REPLY_PRIMING + tokens.TOKENS_PER_MESSAGE + 1 + 2
    assert tokens.count_chat(two) > tokens.count_chat(one) + tokens.TOKENS_PER_MESSAGE
    parts = [{"role": "user", "content": [{"type": "text", "text": "hello world"}]}]
    assert tokens.count_chat(parts) == tokens.count_chat(one)


def test_encoding_by_model_and_unknown_encodings() -> None:
    assert tokens.encoding_name_for("gpt-4-0613") == "cl100k_base"
    assert tokens.encoding_name_for("gpt-4o-mini") == "o200k_base"
    with pytest.raises(ConfigError, match="not bundled"):
        tokens.get_encoding("p50k_base")
