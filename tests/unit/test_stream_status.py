"""What a response head decides on the real stream path (loadlib.transport.status applied by stream_call): redirects
are their own class and cannot heal, a code outside 100-599 is not a 5xx, and a body in an encoding the request did
not accept is named as such, never "not JSON". Canned bytes on a loopback TCP pair (tests.support.wire)."""

from __future__ import annotations

import gzip

import pytest

from loadlib.config import Timeouts
from loadlib.errors import ErrorClass
from loadlib.transport.status import head_verdict, redirect_message, unaccepted_encoding
from tests.support.wire import call, chunked, http_head

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")

QUICK = Timeouts(connect=2.0, ttft=2.0, idle=2.0, total=4.0)
URL = "http://127.0.0.1:9/v1/chat/completions"  # what tests.support.wire's endpoint requests
COMPLETION = b'{"id":"x","choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}]}'


def test_a_redirect_is_its_own_class_says_where_and_cannot_heal():
    location = "https://127.0.0.1:9/v1/chat/completions"
    out = call([http_head(301, content_type="text/html", location=location, content_length="5"), b"moved"])
    assert out.status is ErrorClass.HTTP_REDIRECT and out.http_status == 301
    assert out.message == f"HTTP 301 to {location}: redirects are not followed; point --host at the final URL"
    assert out.fatal == out.message


def test_a_redirect_to_itself_is_called_a_loop():
    out = call([http_head(307, content_type="text/html", location="/v1/chat/completions", content_length="0")])
    assert out.status is ErrorClass.HTTP_REDIRECT and "a redirect loop" in out.message and URL in out.message
    assert out.fatal == out.message


@pytest.mark.parametrize("status", ["999", "600", "099", "000", "042"])
def test_a_status_outside_100_to_599_is_invalid_not_a_5xx(status):
    body = b'{"error":{"message":"boom"}}'
    head = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    out = call([head.encode(), body], timeouts=QUICK)
    assert out.status is ErrorClass.HTTP_INVALID_STATUS, out.message
    assert out.message.startswith(f"HTTP {int(status)} is not a status code") and out.fatal is None


def test_a_gzip_body_the_request_did_not_accept_is_named():
    body = gzip.compress(COMPLETION)
    head = http_head(content_type="application/json", content_encoding="gzip", content_length=str(len(body)))
    out = call([head, body])
    assert out.status is ErrorClass.MALFORMED_EVENT
    assert out.message == "Content-Encoding gzip, which the request did not accept"


def test_a_gzip_stream_is_named_too_and_an_identity_body_is_read():
    body = gzip.compress(b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\ndata: [DONE]\n\n')
    out = call([http_head(transfer_encoding="chunked", content_encoding="gzip"), *chunked(body)])
    assert out.status is ErrorClass.MALFORMED_EVENT and "Content-Encoding gzip" in out.message
    plain = http_head(content_type="application/json", content_encoding="identity", content_length=str(len(COMPLETION)))
    assert call([plain, COMPLETION]).status is ErrorClass.OK


def test_an_error_status_keeps_its_class_whatever_its_encoding():
    body = gzip.compress(b'{"error":{"message":"overloaded"}}')
    head = http_head(503, content_type="application/json", content_encoding="gzip", content_length=str(len(body)))
    assert call([head, body]).status is ErrorClass.HTTP_5XX


@pytest.mark.parametrize(
    ("location", "words"),
    [
        ("https://api.example.com/v1/chat/completions", "HTTP 308 to https://api.example.com/v1/chat/completions: "),
        ("/v2/chat/completions", "HTTP 308 to http://127.0.0.1:9/v2/chat/completions: redirects are not followed"),
        (None, "HTTP 308 without a Location: redirects are not followed"),
        (URL, "to the URL requested, http://127.0.0.1:9/v1/chat/completions: a redirect loop"),
    ],
)
def test_redirect_messages(location, words):
    assert words in redirect_message(308, location, URL)


@pytest.mark.parametrize(
    ("encoding", "accept", "expected"),
    [
        (None, "identity", None),
        ("identity", "identity", None),
        ("gzip", "identity", "Content-Encoding gzip, which the request did not accept"),
        ("GZIP", None, "Content-Encoding gzip, which the request did not accept"),
        ("br", "gzip, br;q=0.5", "Content-Encoding br, which loadlib does not decode: accept identity only"),
        ("gzip", "*", "Content-Encoding gzip, which loadlib does not decode: accept identity only"),
    ],
)
def test_unaccepted_encoding(encoding, accept, expected):
    assert unaccepted_encoding(encoding, accept) == expected


@pytest.mark.parametrize(
    ("status", "expected"),
    [(200, None), (404, None), (503, None), (302, ErrorClass.HTTP_REDIRECT), (999, ErrorClass.HTTP_INVALID_STATUS)],
)
def test_head_verdict_by_status(status, expected):
    verdict = head_verdict(status, "/elsewhere", None, "identity", URL)
    assert (verdict[0] if verdict else None) is expected
