"""The mock's gateway response cache: what its key looks at, and what it ignores."""

from __future__ import annotations

import pytest

from loadlib.mock.response_cache import HIT, MISS, ResponseCache, cache_key, parse_fields
from loadlib.mockapi.config import MockConfigError, parse_overrides

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.7, "metadata": {"a": 1, "b": 2}}
FIELDS = ("model", "messages", "temperature", "metadata", "header:anthropic-version")


def key(body: dict | None = None, raw: bytes = b"{}", **headers: str) -> bytes:
    return cache_key("openai", FIELDS, body or BODY, raw, {k.replace("_", "-"): v for k, v in headers.items()})


def test_fields_parse_and_bad_specs_are_refused() -> None:
    assert parse_fields("Model+messages+header:X-Team") == ("model", "messages", "header:x-team")
    assert parse_fields("") == parse_fields("off") == ()
    assert parse_overrides("response_cache=model+temperature") == {"response_cache": "model+temperature"}
    for bad in ("model++messages", "+model", "model,messages", "model messages"):
        with pytest.raises(MockConfigError):
            parse_overrides(f"response_cache={bad}")
    with pytest.raises(ValueError):
        parse_fields("model+header:")


def test_floats_are_not_normalised_but_key_order_of_a_field_is() -> None:
    assert key() == key(dict(BODY, temperature=0.7))
    assert key() != key(dict(BODY, temperature=0.7000000001))
    assert key() == key(dict(BODY, metadata={"b": 2, "a": 1})), "a field is hashed as canonical JSON"
    assert key() != key(dict(BODY, metadata={"a": 1}))


def test_only_the_named_fields_and_headers_count() -> None:
    assert key() == key(dict(BODY, top_p=0.9, user="u1"), x_custom="1", x_request_id="r-1")
    assert key() != key(anthropic_version="2023-06-01")
    assert key(anthropic_version="") == key(), "absent and empty are one value"
    raw = cache_key("openai", ("body",), BODY, b'{"a":1}', {})
    assert raw != cache_key("openai", ("body",), BODY, b'{"a": 1}', {}), "body: the bytes as sent"
    assert cache_key("openai", ("model",), BODY, b"", {}) != cache_key("anthropic", ("model",), BODY, b"", {})


def test_the_first_request_of_a_key_misses_and_stores_it() -> None:
    cache = ResponseCache()
    assert [cache.lookup(k) for k in (b"a", b"a", b"b", b"a")] == [MISS, HIT, MISS, HIT]


def test_a_key_has_no_stored_answer_until_its_miss_stores_one() -> None:
    from loadlib.mock.response_cache import Stored

    cache, kept = ResponseCache(), Stored(7, 10, "length", None, None, "", None)
    cache.lookup(b"a")
    assert cache.answer(b"a") is None and cache.answer(b"b") is None
    cache.store(b"a", kept)
    cache.store(b"b", kept)  # a key the cache no longer holds stores nothing
    assert cache.answer(b"a") == kept and cache.answer(b"b") is None
    cache.clear()
    assert cache.answer(b"a") is None
