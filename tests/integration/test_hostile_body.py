"""What a 200 body holds, and how its chunks are framed, against the hostile server (loadlib.mock.hostile_body and
hostile_framing's `chunk-ext-space`) through the real stream path: a lone UTF-16 surrogate escape is read (as U+FFFD,
noted), NaN is named, a text/html page names its type and carries no TTFT, an empty 200 is `empty_response`, and the
blanks RFC 9112 allows in chunk size lines are read. Each answer keeps its connection. Before: `malformed_event ... is
not JSON (124 bytes)` for the surrogate and NaN alike, `is not JSON (96 bytes)` with a TTFT for the page,
`stream_broken` for the empty body and for every chunk-extension blank."""

from __future__ import annotations

import pytest

from loadlib.errors import ErrorClass
from loadlib.mock.hostile_body import LOGIN_PAGE
from loadlib.providers.jsonread import MENDED_NOTE
from loadlib.records.build import build_record
from loadlib.records.pricing import PriceTable
from tests.integration.test_hostile_status import call

pytestmark = pytest.mark.integration

HTML_HINT = ": a proxy, login or error page?"
PAGE = f"the response is text/html, not JSON or an event stream ({len(LOGIN_PAGE)} bytes){HTML_HINT}"
NAN = "chat completion event is not JSON: it holds NaN, which JSON does not allow"
EMPTY = "HTTP 200 with an empty body"
# behaviour: (class, message, text of choice 0 (None: no parsed result), note)
DOCUMENTED = {
    "lone-surrogate": (ErrorClass.OK, None, "smile \ufffd\ufffd done", MENDED_NOTE),
    "nan-logprob": (ErrorClass.MALFORMED_EVENT, NAN, "a ", None),
    "html-200": (ErrorClass.MALFORMED_EVENT, PAGE, None, None),
    "empty-200": (ErrorClass.EMPTY_RESPONSE, EMPTY, "", None),
    "empty-chunked-200": (ErrorClass.EMPTY_RESPONSE, EMPTY, "", None),
    "chunk-ext-space": (ErrorClass.OK, None, "x0 x1 x2 x3 x4 x5 ", None),
}


def record(out):
    fields = dict(run_id="r", scenario="s", endpoint="e", provider="openai", model="hostile", worker_id="w")
    return build_record(out, request_id="1", start_unix_ns=0, prices=PriceTable.load(), **fields)


@pytest.mark.parametrize("behaviour", sorted(DOCUMENTED))
def test_each_body_has_its_documented_class_message_and_note_and_keeps_the_connection(hostile, behaviour):
    status, message, text, note = DOCUMENTED[behaviour]
    server = hostile(behaviour)
    out, conn = call(server)
    again, _ = call(server, conn)
    rec = record(out)
    print(f"\n{behaviour}: {out.status} {out.message!r}, note {out.note!r}, TTFT {out.ttft_ms}")
    for o in (out, again):
        assert (o.status, o.message, o.note) == (status, message, note)
        assert (o.result.text if o.result is not None else None) == text
        assert o.http_status == 200
    assert (rec.note, rec.error_message) == (note, message), "the record says what the outcome says"
    if not text:  # no token came: no TTFT, no output, whatever the body's arrival
        assert rec.ttft_ms is None and not out.output_stamps_ms
    assert conn.connects == 1, "every answer had a length: the connection was reused"
