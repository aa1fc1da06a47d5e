"""A body or event that is not JSON names why when its bytes tell (gzip, invalid UTF-8 and where), in both adapters:
"not JSON (129 bytes)" alone left a user guessing between a proxy, a cut character and a foreign API."""

from __future__ import annotations

import gzip

import pytest

from loadlib.errors import MalformedEventError
from loadlib.providers.errors_body import not_json
from loadlib.providers.registry import get_adapter

DELTA = b'{"choices":[{"index":0,"delta":{"content":"caf\xc3\xa9 \xff\xfe"}}]}'


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"{nope", "event is not JSON (5 bytes)"),
        (DELTA, "event is not JSON: invalid UTF-8 at byte 49 of 56"),
        (b'{"a":"\xe2\x82"}', "event is not JSON: invalid UTF-8 at byte 6 of 10"),  # a character cut in two
        (gzip.compress(b"{}"), "event is gzip-compressed, not JSON (22 bytes)"),
    ],
)
def test_not_json_names_the_cause(data, expected):
    assert not_json("event", data) == expected


@pytest.mark.parametrize(("provider", "what"), [("openai", "chat completion"), ("anthropic", "messages")])
def test_both_adapters_name_invalid_utf8_in_an_event_and_gzip_in_a_body(provider, what):
    adapter = get_adapter(provider)
    with pytest.raises(MalformedEventError, match=f"^{what} event is not JSON: invalid UTF-8 at byte 49 of 56"):
        adapter.new_parser().feed(b"", DELTA)
    with pytest.raises(MalformedEventError, match=f"^{what} body is gzip-compressed, not JSON"):
        adapter.parse_response(gzip.compress(b'{"choices": []}'))
