"""JSON orjson refuses, read again (loadlib.providers.jsonread): a lone UTF-16 surrogate escape, which the grammar
allows, is read as U+FFFD and counted, in events and bodies of both adapters; NaN and Infinity are named, not "not JSON
(N bytes)"; the rest keeps its cause (gzip, invalid UTF-8)."""

from __future__ import annotations

import pytest

from loadlib.errors import MalformedEventError, NotJSONError
from loadlib.providers.jsonread import reread
from loadlib.providers.registry import get_adapter

HALF = b'"\\ud83d"'  # the first half of U+1F600, alone


@pytest.mark.parametrize(
    ("data", "value", "mended"),
    [
        (b'{"a": ' + HALF + b"}", {"a": "\ufffd"}, 1),
        (b'{"a": "x\\ude00y\\ud83d"}', {"a": "x\ufffdy\ufffd"}, 2),
        (b'{"\\udc00": ["\\ud800", {"b": "\\ud83d\\ude00"}]}', {"\ufffd": ["\ufffd", {"b": "\U0001f600"}]}, 2),
        (b'{"a": 100000000000000000000}', {"a": 100000000000000000000}, 0),
    ],
)
def test_lone_surrogates_become_replacement_characters_and_are_counted(data: bytes, value: object, mended: int):
    assert reread(data, "event") == (value, mended)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"a": NaN}', "event is not JSON: it holds NaN, which JSON does not allow"),
        (b'{"a": [1, -Infinity]}', "event is not JSON: it holds -Infinity, which JSON does not allow"),
        (b'{"a": "\xed\xa0\xbd"}', "event is not JSON: invalid UTF-8 at byte 7 of 12"),  # an encoded surrogate
        (b"{nope", "event is not JSON (5 bytes)"),
        (b"[" * 5000, "event is not JSON (5000 bytes)"),
    ],
)
def test_what_is_not_json_says_why(data: bytes, message: str):
    with pytest.raises(NotJSONError, match=f"^{message.replace('(', '[(]').replace(')', '[)]')}$"):
        reread(data, "event")


def test_both_adapters_read_half_an_emoji_in_an_event_and_a_body():
    event = b'{"choices":[{"index":0,"delta":{"content":"hi ' + HALF[1:-1] + b'"}}]}'
    parser = get_adapter("openai").new_parser()
    parser.feed(b"", event)
    assert (parser.result().text, parser.result().mended) == ("hi \ufffd", 1)
    messages = get_adapter("anthropic").new_parser()
    messages.feed(b"", b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":' + HALF + b"}}")
    assert (messages.result().text, messages.result().mended) == ("\ufffd", 1)
    body = b'{"choices":[{"index":0,"message":{"content":' + HALF + b'},"finish_reason":"stop"}]}'
    assert get_adapter("openai").parse_response(body).mended == 1
    anthropic = b'{"type":"message","content":[{"type":"text","text":' + HALF + b'}],"stop_reason":"end_turn"}'
    assert get_adapter("anthropic").parse_response(anthropic).text == "\ufffd"


def test_nan_in_an_event_is_malformed_and_named():
    with pytest.raises(MalformedEventError, match="it holds NaN"):
        get_adapter("openai").new_parser().feed(b"", b'{"choices":[{"index":0,"delta":{"content":"a"},"x":NaN}]}')
