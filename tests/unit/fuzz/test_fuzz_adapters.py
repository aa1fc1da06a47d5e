"""Fuzzing the provider adapters with Hypothesis: whatever JSON (or non-JSON) a server sends, nothing of ours breaks.

(a) Adapter level: protocol-shaped event sequences with any JSON value in every field are fed to each adapter's
parser. `feed` may raise only MalformedEventError or UnsupportedAPIError; `result()` never raises and holds only
well-typed values (strings for text, sane integer counts); a record built from it serialises. Non-streamed bodies
(`parse_response`) and error bodies (`classify_error`) likewise.

(b) The real stream path (`loadlib.transport.stream.stream_call`) over a loopback TCP pair (tests/support/wire.py),
with random HTTP framing, TCP write boundaries and SSE line endings: never `internal_error`, sane timings, a
serialisable record, and, when the response is well framed, exactly the adapter's own reading of the events it
carried.

Counts: see strategies.py (`FUZZ_EXAMPLES=20x` for a longer run). Bugs this fuzzer found are listed in KNOWN_BUGS
and pinned by regression tests in tests/unit/providers/test_malformed_fields.py; all are fixed, so by default the
properties fail on every one of them. While a new one is being fixed, `FUZZ_KNOWN_BUGS=` (empty) or
`FUZZ_KNOWN_BUGS=<names>` lets the properties step past known bugs (all, or all but those named) to hunt for others.
"""

from __future__ import annotations

import gevent

import math
import os
import re
import traceback
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from itertools import pairwise
from pathlib import Path

import orjson
import pytest
from hypothesis import given, note, settings

from loadlib.errors import ErrorClass, MalformedEventError, NotJSONError, UnsupportedAPIError
from loadlib.outputs.records import record_line
from loadlib.providers import errors_body
from loadlib.providers.base import ERROR, OUTPUT, TERMINAL, VISIBLE, Adapter, ProviderError, StreamResult, Usage
from loadlib.providers.errors_body import MAX_MESSAGE, short
from loadlib.providers.fields import MAX_COUNT
from loadlib.providers.registry import get_adapter
from loadlib.records.build import build_record
from loadlib.records.pricing import PriceTable
from loadlib.records.record import RequestRecord
from loadlib.transport.status import head_verdict
from loadlib.transport.stream import MAX_ERROR_BODY, StreamOutcome
from tests.support.records import IDENTITY
from tests.support.wire import call, http_head

from . import strategies as fz

PRICES = PriceTable.load(None)
MODELS = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4"}  # priced, so cost is computed
ALLOWED = (MalformedEventError, UnsupportedAPIError)
ALL_FLAGS = OUTPUT | VISIBLE | TERMINAL | ERROR
COUNT_FIELDS = tuple(f.name for f in fields(Usage) if f.name != "rejected")
ADAPTER = settings(fz.FUZZ, max_examples=fz.examples(fz.ADAPTER_EXAMPLES), deadline=None)
WIRE = settings(fz.FUZZ, max_examples=fz.examples(fz.WIRE_EXAMPLES), deadline=None)
SCALED_TIMEOUT = pytest.mark.timeout(round(300 * fz.SCALE))  # pyproject's 300 s per test, scaled with the counts

# --- bugs found by this fuzzer (fixed) ------------------------------------------------------------------------------

KNOWN_BUGS = {  # each pinned by regression tests in tests/unit/providers/test_malformed_fields.py (fixed)
    "unhashable-block-type": "Anthropic: a content block whose `type` is an array or object raises TypeError "
    "(`kind in _TOOL_BLOCKS` on an unhashable value) in AnthropicParser._block_start and "
    "AnthropicAdapter.parse_response; stream_call reports internal_error",
    "self-refusal": "an adapter refuses its own protocol's shape (OpenAI `choices` null or not an array, Anthropic "
    "`type: message` with `content` not an array or as a stream event) with UnsupportedAPIError telling the user to "
    "use the provider they already use, instead of reading it or naming the malformed field",
}
_STRICT = {name.strip() for name in os.environ.get("FUZZ_KNOWN_BUGS", "fail").split(",")} - {""}
if _STRICT - {"fail", *KNOWN_BUGS}:
    raise ValueError(f"FUZZ_KNOWN_BUGS: give `fail` or names of KNOWN_BUGS, not {sorted(_STRICT - set(KNOWN_BUGS))}")


def tolerated(bug: str) -> bool:
    """Whether the fuzz properties step past this known bug (see FUZZ_KNOWN_BUGS in the module docstring)."""
    assert bug in KNOWN_BUGS, bug
    return "fail" not in _STRICT and bug not in _STRICT


OWN_API = {"openai": errors_body.OPENAI_CHAT, "anthropic": errors_body.ANTHROPIC_MESSAGES}
_ANTHROPIC_PY = str(Path("loadlib", "providers", "anthropic.py"))
_UNHASHABLE = re.compile(r"TypeError: unhashable type: '(list|dict)'")


def known_bug(exc: BaseException) -> str | None:
    """The KNOWN_BUGS key this exception is an instance of, when that bug is tolerated; else None."""
    if not isinstance(exc, TypeError) or not str(exc).startswith("unhashable type"):
        return None
    where = traceback.extract_tb(exc.__traceback__)[-1]
    if where.filename.endswith(_ANTHROPIC_PY) and where.name in ("_block_start", "parse_response"):
        return "unhashable-block-type" if tolerated("unhashable-block-type") else None
    return None


def check_refusal(provider: str, exc: Exception) -> None:
    """A MalformedEventError or UnsupportedAPIError: a message, and never "use the provider you use"."""
    assert type(str(exc)) is str and str(exc)
    if isinstance(exc, UnsupportedAPIError) and str(exc) == OWN_API[provider]:
        assert tolerated("self-refusal"), ("the adapter refuses its own API", KNOWN_BUGS["self-refusal"])


# --- checks shared by (a) and (b) ----------------------------------------------------------------------------------


@contextmanager
def shown_on_failure(**values: object) -> Iterator[None]:
    """Print the decoded case with a failure (computing reprs only then: they cost more than the check)."""
    try:
        yield
    except BaseException:
        for name, shown in values.items():
            note(f"{name} = {shown!r}")
        raise


def check_flags(flags: object) -> None:
    assert type(flags) is int and flags & ~ALL_FLAGS == 0, flags
    assert not flags & VISIBLE or flags & OUTPUT, "VISIBLE without OUTPUT would never clock TTFO"


def optional_str(value: object) -> bool:
    return value is None or type(value) is str


def check_usage(usage: Usage | None) -> None:
    if usage is None:
        return
    assert type(usage) is Usage
    for name in COUNT_FIELDS:
        count = getattr(usage, name)
        assert count is None or (type(count) is int and 0 <= count <= MAX_COUNT), (name, count)
    assert type(usage.rejected) is tuple and all(type(r) is str and r for r in usage.rejected), usage.rejected


def check_provider_error(err: ProviderError | None, in_stream: bool) -> None:
    if err is None:
        return
    assert type(err) is ProviderError
    assert isinstance(err.error_class, ErrorClass)
    if in_stream:
        assert err.error_class is ErrorClass.PROVIDER_ERROR
    assert type(err.message) is str and 0 < len(err.message) <= MAX_MESSAGE, err.message
    assert "\n" not in err.message and "\r" not in err.message, err.message
    assert optional_str(err.type) and optional_str(err.code), (err.type, err.code)


def check_result(result: StreamResult) -> None:
    """Every field of a result has the type the rest of loadlib relies on."""
    assert type(result) is StreamResult
    for idx, text in result.text_by_choice.items():
        assert type(idx) is int and idx >= 0 and type(text) is str, (idx, text)
    assert type(result.reasoning) is str and type(result.refusal) is str
    for tool in result.tool_calls:
        assert type(tool.index) is int and tool.index >= 0, tool
        assert optional_str(tool.id) and optional_str(tool.name) and type(tool.arguments) is str, tool
    check_usage(result.usage)
    assert optional_str(result.finish_reason), result.finish_reason
    for idx, reason in result.finish_by_choice.items():
        assert type(idx) is int and type(reason) is str, (idx, reason)
    check_provider_error(result.error, in_stream=True)
    assert optional_str(result.response_id) and optional_str(result.model), (result.response_id, result.model)
    assert type(result.output_events) is int and result.output_events >= 0
    assert type(result.terminal) is bool


def check_record(provider: str, outcome: StreamOutcome) -> RequestRecord:
    """A record builds from the outcome, its money and TPOT are sane, and it serialises with orjson."""
    record = build_record(
        outcome,
        **{**IDENTITY, "provider": provider, "model": MODELS[provider]},
        prices=PRICES,
        prompt_tokens_est=100,
        completion_tokens_est=20,
    )
    assert record.cost_usd is None or (math.isfinite(record.cost_usd) and record.cost_usd >= 0), record.cost_usd
    if record.tpot_ms is not None:
        assert math.isfinite(record.tpot_ms), record.tpot_ms
        assert record.tpot_ms >= 0, ("negative TPOT", record.tpot_ms)
    line = orjson.loads(orjson.dumps(record_line(record)))
    assert line["status"] == outcome.status.value
    return record


def synthetic_outcome(result: StreamResult, stamps: list[float]) -> StreamOutcome:
    """A plausible outcome around an adapter's result, for building a record in (a)."""
    status = ErrorClass.OK
    if result.error is not None:
        status = ErrorClass.PROVIDER_ERROR
    elif not stamps:
        status = ErrorClass.EMPTY_RESPONSE
    return StreamOutcome(
        status=status,
        message=result.error.message if result.error else None,
        http_status=200,
        ttfb_ms=0.5,
        first_event_ms=1.0,
        ttft_ms=stamps[0] if stamps else None,
        ttfo_ms=stamps[0] if stamps else None,
        e2e_ms=(stamps[-1] if stamps else 1.0) + 1.0,
        output_stamps_ms=array("d", stamps),
        events=len(stamps),
        response_bytes=1000,
        result=result,
    )


# --- (a) adapter level ---------------------------------------------------------------------------------------------


def check_event_sequence(provider: str, events: list[tuple[bytes, bytes]]) -> None:
    parser = get_adapter(provider).new_parser()
    stamps: list[float] = []
    for i, (event, data) in enumerate(events):
        try:
            flags = parser.feed(event, data)
        except ALLOWED as exc:
            check_refusal(provider, exc)
            continue
        except TypeError as exc:
            if known_bug(exc):
                continue
            raise
        check_flags(flags)
        if flags & OUTPUT:
            stamps.append(10.0 * (i + 1))
    result = parser.result()
    check_result(result)
    assert parser.result() == result, "result() is a pure function of what was fed"
    check_record(provider, synthetic_outcome(result, stamps))


def check_bodies(provider: str, body: bytes, error: tuple[int, bytes]) -> None:
    adapter = get_adapter(provider)
    try:
        result = adapter.parse_response(body)
    except ALLOWED as exc:
        check_refusal(provider, exc)
        result = None
    except TypeError as exc:
        if not known_bug(exc):
            raise
        result = None
    if result is not None:
        check_result(result)
        check_record(provider, synthetic_outcome(result, [5.0] if result.output_events else []))
    status, error_body = error
    for status_, body_ in ((status, error_body), (status, body)):
        try:
            err = adapter.classify_error(status_, body_)
        except ALLOWED:
            continue
        check_provider_error(err, in_stream=False)
        assert err.error_class in (
            ErrorClass.RATE_LIMITED,
            ErrorClass.CONTEXT_LENGTH_EXCEEDED,
            ErrorClass.HTTP_4XX,
            ErrorClass.HTTP_5XX,
        ), err
        if status_ == 429:
            assert err.error_class is ErrorClass.RATE_LIMITED
        elif err.error_class is not ErrorClass.CONTEXT_LENGTH_EXCEEDED:
            assert err.error_class is (ErrorClass.HTTP_5XX if status_ >= 500 else ErrorClass.HTTP_4XX), err


# One example is one case of each kind: an event sequence, a non-streamed body and an error response.


@SCALED_TIMEOUT
@ADAPTER
@given(case=fz.adapter_cases("openai"))
def test_openai_adapter_is_total(case: fz.AdapterCase) -> None:
    with shown_on_failure(events=case.events, body=case.body, error=case.error):
        check_event_sequence("openai", case.events)
        check_bodies("openai", case.body, case.error)


@SCALED_TIMEOUT
@ADAPTER
@given(case=fz.adapter_cases("anthropic"))
def test_anthropic_adapter_is_total(case: fz.AdapterCase) -> None:
    with shown_on_failure(events=case.events, body=case.body, error=case.error):
        check_event_sequence("anthropic", case.events)
        check_bodies("anthropic", case.body, case.error)


# --- (b) the real stream path --------------------------------------------------------------------------------------


@dataclass
class Expected:
    """What stream_call must make of a well-framed response, by the adapter's own reading of it."""

    status: ErrorClass | None = None  # None: not predicted (the response is cut or mis-framed)
    message: str | None = None  # compared when not None
    result: StreamResult | None = None  # compared when `compare_result`
    compare_result: bool = False
    outputs: int | None = None  # output-bearing events, compared when not None
    bug: str | None = None  # a KNOWN_BUGS key the adapter hits on this response


def replay(adapter: Adapter, events: list[tuple[bytes, bytes]]) -> Expected:
    """The outcome of an event stream, by feeding its events to a parser as `_stream_events` does (nothing after the
    terminal event)."""
    parser = adapter.new_parser()
    status, message, terminal, outputs = ErrorClass.OK, None, False, 0
    for event, data in events:
        try:
            flags = parser.feed(event, data)
        except MalformedEventError as exc:
            if status is ErrorClass.OK:
                status, message = ErrorClass.MALFORMED_EVENT, short(str(exc))
            continue
        except UnsupportedAPIError as exc:
            result = parser.result()
            return Expected(ErrorClass.UNSUPPORTED_API, str(exc), result, True, outputs)
        except TypeError as exc:
            bug = known_bug(exc)
            if not bug:
                raise
            return Expected(ErrorClass.INTERNAL_ERROR, bug=bug)
        if flags & OUTPUT:
            outputs += 1
        if flags & ERROR and status is not ErrorClass.PROVIDER_ERROR:
            status = ErrorClass.PROVIDER_ERROR
        if flags & TERMINAL:
            terminal = True
            break
    result = parser.result()
    if status is ErrorClass.PROVIDER_ERROR:
        message = result.error.message if result.error else "error event in the stream"
    elif not terminal and status is ErrorClass.OK:
        status = ErrorClass.STREAM_BROKEN  # its message depends on whether the stream was cut mid-event
    elif status is ErrorClass.OK and not outputs:
        status, message = ErrorClass.EMPTY_RESPONSE, "the stream carried no output"
    return Expected(status, message, result, True, outputs)


EMPTY_BODY = Expected(ErrorClass.EMPTY_RESPONSE, "HTTP 200 with an empty body", None, False, 0)
NOT_JSON_TYPES = {"text/plain": "", "text/html": ": a proxy, login or error page?"}  # the hint each type adds


def expect_body(adapter: Adapter, case: fz.WireCase) -> Expected:
    """A whole JSON body, as `transport.body` reads it: one output event only when it parses with output (a body
    that is not the API's answer carries no token); not JSON under a Content-Type that is not JSON is named by it."""
    body = case.body
    if not body and case.framing != "close":
        return EMPTY_BODY
    try:
        result = adapter.parse_response(body)
    except UnsupportedAPIError as exc:
        return Expected(ErrorClass.UNSUPPORTED_API, str(exc))
    except MalformedEventError as exc:
        message = short(str(exc))
        if isinstance(exc, NotJSONError) and case.content_type in NOT_JSON_TYPES:
            hint = NOT_JSON_TYPES[case.content_type]
            message = f"the response is {case.content_type}, not JSON or an event stream ({len(body)} bytes){hint}"
        return Expected(ErrorClass.MALFORMED_EVENT, message, None, False, 0)
    except TypeError as exc:
        bug = known_bug(exc)
        if not bug:
            raise
        return Expected(ErrorClass.INTERNAL_ERROR, bug=bug)
    if result.error is not None:
        return Expected(ErrorClass.PROVIDER_ERROR, result.error.message, result, True, 0)
    if not (any(result.text_by_choice.values()) or result.tool_calls or result.refusal):
        return Expected(ErrorClass.EMPTY_RESPONSE, "the response carried no output", result, True, 0)
    return Expected(ErrorClass.OK, None, result, True, 1)


def expect(case: fz.WireCase) -> Expected:
    adapter = get_adapter(case.provider)
    if case.kind == "sse" and not case.body and case.framing != "close":
        expected = EMPTY_BODY  # a body of no byte, ended where its framing said
    elif case.kind == "sse":
        expected = replay(adapter, case.events)
    elif case.kind == "ndjson":
        expected = Expected(ErrorClass.UNSUPPORTED_API)
    elif case.kind == "json":
        expected = expect_body(adapter, case)
    elif verdict := head_verdict(case.status, None, None, None, ""):  # a 3xx or an invalid code: the head decides
        expected = Expected(*verdict)
    else:
        err = adapter.classify_error(case.status, case.body[:MAX_ERROR_BODY])
        expected = Expected(err.error_class, err.message)
    if not case.exact:  # cut or mis-framed: only a known bug's tolerance carries over
        return Expected(bug=expected.bug)
    return expected


def check_timing(out: StreamOutcome) -> None:
    stamps = list(out.output_stamps_ms)
    assert all(a <= b for a, b in pairwise(stamps)), ("output stamps go back in time", stamps)
    assert out.e2e_ms is not None and out.e2e_ms >= 0, out.e2e_ms
    assert (out.ttft_ms is None) == (not stamps), ("a TTFT without output, or output without one", out.ttft_ms)
    if stamps:
        assert stamps[0] == out.ttft_ms, (out.ttft_ms, stamps)
    assert out.ttft_ms is None or out.ttft_ms <= out.e2e_ms, ("ttft after e2e", out.ttft_ms, out.e2e_ms)
    assert not stamps or stamps[-1] <= out.e2e_ms, ("output after e2e", stamps[-1], out.e2e_ms)
    if out.ttfo_ms is not None:
        assert out.ttft_ms is not None and out.ttft_ms <= out.ttfo_ms, (out.ttft_ms, out.ttfo_ms)
    if out.first_event_ms is not None and out.ttft_ms is not None:
        assert out.first_event_ms <= out.ttft_ms, (out.first_event_ms, out.ttft_ms)
    if out.ttfb_ms is not None and out.first_event_ms is not None:
        assert out.ttfb_ms <= out.first_event_ms, (out.ttfb_ms, out.first_event_ms)


def check_wire_case(case: fz.WireCase) -> None:
    expected = expect(case)
    out = call(case.writes(), provider=case.provider)
    assert isinstance(out, StreamOutcome)
    if out.status is ErrorClass.INTERNAL_ERROR:
        known = expected.bug is not None and _UNHASHABLE.fullmatch(out.message or "")
        assert known, ("internal_error: an exception of ours escaped", out.message)
    if out.status is ErrorClass.UNSUPPORTED_API and out.message == OWN_API[case.provider]:
        assert tolerated("self-refusal"), ("the adapter refuses its own API", KNOWN_BUGS["self-refusal"])
    check_timing(out)
    if out.result is not None:
        check_result(out.result)
    check_record(case.provider, out)
    if expected.status is None:
        return
    assert out.http_status == case.status
    assert out.status is expected.status, (out.status, out.message, expected)
    if expected.message is not None:
        assert out.message == expected.message, (out.message, expected.message)
    if expected.compare_result:
        assert out.result == expected.result, (out.result, expected.result)
    if expected.outputs is not None:
        assert len(out.output_stamps_ms) == expected.outputs, (list(out.output_stamps_ms), expected.outputs)


@SCALED_TIMEOUT
@WIRE
@given(case=fz.wire_cases("openai"))
def test_openai_stream_path(case: fz.WireCase) -> None:
    with shown_on_failure(case=case, pieces=case.pieces):
        check_wire_case(case)


@SCALED_TIMEOUT
@WIRE
@given(case=fz.wire_cases("anthropic"))
def test_anthropic_stream_path(case: fz.WireCase) -> None:
    with shown_on_failure(case=case, pieces=case.pieces):
        check_wire_case(case)


# --- bugs this fuzzer found, fixed since: their regression tests ---------------------------------------------------


def _paused(pieces: list[bytes], pause_s: float = 0.05) -> Iterator[bytes]:
    for i, piece in enumerate(pieces):
        if i:
            gevent.sleep(pause_s)
        yield piece


@pytest.mark.parametrize(
    ("provider", "terminal", "late"),
    [
        ("openai", b"data: [DONE]\n\n", b'data: {"choices": [{"index": 0, "delta": {"content": "late"}}]}\n\n'),
        (
            "anthropic",
            b'event: message_stop\ndata: {"type": "message_stop"}\n\n',
            b"event: content_block_delta\n"
            b'data: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "late"}}\n\n',
        ),
    ],
    ids=["openai", "anthropic"],
)
def test_nothing_after_the_terminal_event_is_output(provider: str, terminal: bytes, late: bytes) -> None:
    """The terminal event, then (in a later read) an output event: it was stamped after E2E (TTFT after E2E, a
    negative TPOT on an ok record). Nothing after the terminal event is output now."""
    for _ in range(3):  # the pause makes the reads differ; three tries make a coalesced read irrelevant
        out = call(_paused([http_head(), terminal, late]), provider=provider)
        record = check_record(provider, out)
        assert out.ttft_ms is None and not out.output_stamps_ms, (out.ttft_ms, list(out.output_stamps_ms))
        assert out.status is ErrorClass.EMPTY_RESPONSE and out.result.text == "", (out.status, out.result)
        assert record.tpot_ms is None


@pytest.mark.parametrize(
    "body", [b'{"object": "error", "message": "\\n"}', b'{"error": {"message": "  "}}'], ids=["vllm", "openai"]
)
def test_a_blank_error_message_falls_back(body: bytes) -> None:
    """An error whose message is only whitespace had the message "" (found by the fuzzer)."""
    parser = get_adapter("openai").new_parser()
    assert parser.feed(b"", body) == ERROR
    assert parser.result().error.message == "error event in the stream"
    assert get_adapter("openai").classify_error(500, body).message == "HTTP 500"
