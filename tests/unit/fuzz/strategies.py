"""Hypothesis strategies for fuzzing the provider adapters, and the settings profile every fuzz test runs under.

Events are shaped like each protocol (OpenAI chat chunks, Anthropic Messages events, non-streamed bodies, error
bodies) but every field the adapters read may instead hold any JSON value: null, booleans, huge, negative and
fractional numbers, unicode and empty strings, nested arrays and objects. Some events are not JSON at all, carry
foreign event names, or belong to another API; the terminal event may come, come early, or never come.

Speed: every value Hypothesis draws costs tens of microseconds here (a few hundred drawn bytes, milliseconds), so
a strategy drawing each field managed about 50 event sequences a second. So Hypothesis draws two integers per case,
a seed and `keep`, and the case is decoded from the seed's pseudo-random bytes by `Source`, deterministically; bit i
of `keep` keeps event i, so shrinking drops the events a failure does not need, and a calm `chaos` (picked by the
seed) keeps most fields on protocol. A falsifying example reads `decode_adapter_case('openai', seed, keep)`, which
rebuilds the case; the test also prints the decoded events.

Example counts: `examples(base)` is a test's count in the normal run. The environment variable FUZZ_EXAMPLES scales
every count up for a longer run: `FUZZ_EXAMPLES=20x` multiplies each by 20, a plain number sets the adapter level
count (ADAPTER_EXAMPLES) to it and scales the others by the same factor. Counts never go below their base.
"""

from __future__ import annotations

import gevent

import json
import math
import os
import random
import struct
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice, pairwise
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from tests.support.wire import chunked, http_head

ADAPTER_EXAMPLES = 10_000  # event sequences (and bodies) per adapter, fed to the adapter directly
WIRE_EXAMPLES = 1_000  # whole HTTP responses per adapter, through the real stream path over loopback TCP

# Hypothesis keeps caches (unicode tables, constants found in the code under test) under its home directory, which
# is `./.hypothesis` by default: keep them out of the repository. The example database is off (database=None).
if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "loadlib-fuzz-hypothesis")

PROFILE = "loadlib-fuzz"
settings.register_profile(
    PROFILE,
    database=None,  # never write an example database into the repository
    deadline=None,
    derandomize=False,  # a new seed each run; a failure prints the falsifying example and its reproduce blob
    print_blob=True,
    suppress_health_check=list(HealthCheck),
)
FUZZ = settings.get_profile(PROFILE)


def _scale() -> float:
    raw = os.environ.get("FUZZ_EXAMPLES", "").strip().lower()
    if not raw:
        return 1.0
    try:
        factor = float(raw[:-1]) if raw.endswith("x") else int(raw) / ADAPTER_EXAMPLES
    except ValueError:
        raise ValueError(f"FUZZ_EXAMPLES={raw!r}: give a factor such as 20x or a count such as 200000") from None
    return max(factor, 1.0)


SCALE = _scale()


def examples(base: int) -> int:
    """The example count of a test whose normal-run count is `base`, scaled by FUZZ_EXAMPLES."""
    return max(base, round(base * SCALE))


# --- decoding bytes into choices -----------------------------------------------------------------------------------


CHAOS = [1000, 200, 40, 12, 4]  # a case's chaos, picked by its seed: about one in this many choices goes off protocol


class Source:
    """Choices read from a case's bytes: 0, and every read past the end, picks the first (plainest) option.

    `chaos` sets how often a choice leaves the protocol (`weird`): a calm case reaches deep into the adapters and
    to the ok outcome (TTFT, TPOT, cost), a chaotic one hits every type check."""

    __slots__ = ("_bytes", "chaos")

    def __init__(self, data: bytes, chaos: int = 4) -> None:
        self._bytes = iter(data)
        self.chaos = chaos

    def byte(self) -> int:
        return next(self._bytes, 0)

    def below(self, n: int) -> int:
        rest = self._bytes
        if n <= 256:
            return next(rest, 0) % n
        return (next(rest, 0) << 16 | next(rest, 0) << 8 | next(rest, 0)) % n

    def pick(self, options: Any) -> Any:
        return options[self.below(len(options))]

    def odds(self, n: int) -> bool:
        """True about once in `n`; False at 0 and past the end."""
        return self.below(n) == n - 1

    def weird(self) -> bool:
        """True about once in `chaos`."""
        return self.below(self.chaos) == self.chaos - 1

    def take(self, n: int) -> bytes:
        return bytes(islice(self._bytes, n))


Gen = Callable[[Source], Any]

# --- JSON values ---------------------------------------------------------------------------------------------------

WORDS = ["hi", "Hello", " world", "x", "0", "ok", "{", "\n", "stop", "Ω"]
SPECIAL_TEXT = [
    "",
    " ",
    "stop",
    "length",
    "tool_calls",
    "end_turn",
    "text",
    "thinking",
    "tool_use",
    "server_tool_use",
    "text_delta",
    "input_json_delta",
    "thinking_delta",
    "message",
    "message_start",
    "error",
    "ping",
    "[DONE]",
    "null",
    "-1",
    "é",
    "\u2028\u2029",
    "\x00",
    "\x7f\x85",
    "😀",
    "\ufeff",
    "\U0010ffff",
    "line\nbreak\r",
    '{"a": 1}',
    "sk-proj-abcdefghijklmnop0123",
    "Bearer abcdef0123456789",
    "<html><title>502</title></html>",
    "x" * 300,
    "This model's maximum context length is 8192 tokens",
    "prompt is too long: 250000 tokens > 200000 maximum",
]
ALPHABET = "ab xyz09_-.:,\"'\\/{}[]<>\t\n\r\x00\x1f\x7f\x85\xa0é中\u2028\u2029\ufeff\ufffd😀\U0010ffff"
KNOWN_KEYS = [
    "id",
    "type",
    "text",
    "content",
    "delta",
    "index",
    "usage",
    "message",
    "error",
    "choices",
    "arguments",
    "function",
    "thinking",
    "input_tokens",
    "output_tokens",
    "prompt_tokens",
    "completion_tokens",
    "code",
]
NUMBER_EDGES = [
    0,
    1,
    -1,
    -5,
    -0.0,
    0.5,
    3.5,
    12.0,
    1e9,
    1e9 + 1,
    10**9,
    10**9 + 1,
    2**31,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    -(2**63),
    -(2**63) - 1,
    10**30,
    1e20,
    -1e20,
    1e308,
    -1e308,
    5e-324,
    True,
    False,
]


def text(src: Source) -> str:
    kind = src.below(8)
    if kind == 0:
        return src.pick(WORDS)
    if kind == 1:
        return ""
    if kind == 2:
        return src.pick(SPECIAL_TEXT)
    if kind == 3:
        return src.pick(WORDS) * (1 + src.below(3000))
    chars = []
    for _ in range(src.below(12)):
        b = src.byte()
        if b < 240:
            chars.append(ALPHABET[b % len(ALPHABET)])
        else:
            cp = ((b - 240) << 16 | src.byte() << 8 | src.byte()) % 0x110000
            chars.append("\ufffd" if 0xD800 <= cp < 0xE000 else chr(cp))
    return "".join(chars)


def number(src: Source) -> int | float:
    kind = src.below(6)
    if kind == 0:
        return src.below(5000)
    if kind == 1:
        return src.pick(NUMBER_EDGES)
    if kind == 2:
        return int.from_bytes(src.take(1 + src.below(12)), "big", signed=True)
    if kind == 3:
        value = struct.unpack("<d", src.take(8).ljust(8, b"\0"))[0]
        return value if math.isfinite(value) else 1e308
    if kind == 4:
        return src.below(100) + src.pick([0.5, 0.25, 0.1, 0.0, 1e-9])
    return -1 - src.below(1000)


def value(src: Source, depth: int = 0) -> Any:
    """Any JSON value."""
    kind = src.below(10)
    if kind in (0, 5):
        return text(src)
    if kind in (1, 4):
        return number(src)
    if kind == 2:
        return None
    if kind == 3:
        return src.odds(2)
    if depth >= 3:
        return src.pick(WORDS)
    if kind in (6, 7):
        return [value(src, depth + 1) for _ in range(src.below(4))]
    return {key(src): value(src, depth + 1) for _ in range(src.below(4))}


def key(src: Source) -> str:
    return src.pick(KNOWN_KEYS) if src.odds(2) else text(src)


# --- combinators: specs are functions of a Source ------------------------------------------------------------------


def maybe(gen: Gen) -> Gen:
    """Mostly what the protocol promises, once in `chaos` any JSON value at all."""
    return lambda src: value(src) if src.weird() else gen(src)


def const(v: Any) -> Gen:
    return lambda src: v


def one_of(*options: Any) -> Gen:
    return lambda src: src.pick(options)


def obj(required: tuple[str, ...] = (), **fields: Gen) -> Gen:
    """An object whose fields are each present (the plainest case) or, about once in four (in calm cases once in
    ten), absent; `required` fields are absent only once in `chaos`."""
    items = tuple((k, g, k in required) for k, g in fields.items())

    def gen(src: Source) -> dict[str, Any]:
        absent = 4 if src.chaos <= 12 else 10
        return {k: g(src) for k, g, needed in items if not (src.weird() if needed else src.odds(absent))}

    return gen


def list_of(gen: Gen, most: int = 3) -> Gen:
    sizes = [1, 2, 0, *range(3, most + 1)]
    return lambda src: [gen(src) for _ in range(src.pick(sizes))]


def integer(lo: int, hi: int) -> Gen:
    return lambda src: lo + src.below(hi - lo + 1)


def counts(src: Source) -> Any:
    if not src.weird():
        return src.below(5000)
    kind = src.below(3)
    if kind == 0:
        return src.pick(NUMBER_EDGES)
    return number(src) if kind == 1 else value(src)


anything = value
texts = text

# --- bytes on the wire ---------------------------------------------------------------------------------------------


def encode(v: Any, src: Source) -> bytes:
    """JSON text as a server might write it: any integer size, escaped or raw unicode, compact, spaced or indented."""
    style = src.below(4)
    indent = 1 if style == 3 else None
    separators = (", ", ": ") if style == 2 else (",", ":")
    return json.dumps(v, ensure_ascii=style == 1, separators=separators, indent=indent).encode()


GARBAGE = [
    b"",
    b" ",
    b"[DONE]",
    b"[DONE] ",
    b"[done]",
    b"{",
    b"}",
    b"null",
    b"[]",
    b"0",
    b'"text"',
    b"\xff\xfe\x00",
    b"\xef\xbb\xbf{}",
    b'{"choices":',
    b"NaN",
    b"Infinity",
    b"1e400",
    b'{"usage": {"prompt_tokens": 1e400}}',
    b'"\\ud800"',
    b'{"type": "\\ud800"}',
    b"[" * 1100 + b"]" * 1100,
    b'{"a":' * 600 + b"1" + b"}" * 600,
    b'{"choices": [], "choices": 5}',
    b'{"type": "message_stop", "type": 7}',
    b"<html><head><title>Bad Gateway</title></head></html>",
    b"event: message\ndata: {}",
]


def garbage(src: Source) -> bytes:
    return src.pick(GARBAGE) if src.odds(2) else src.take(src.below(24))


def truncated(blob: bytes, src: Source) -> bytes:
    """A prefix of valid JSON: what a cut-off or mis-framed event would carry."""
    return blob[: src.below(len(blob))] if blob else blob


# --- error bodies and other APIs -----------------------------------------------------------------------------------

error_objects = obj(
    message=maybe(texts),
    type=maybe(one_of("invalid_request_error", "rate_limit_error", "overloaded_error", "error", "api_error")),
    code=maybe(one_of("context_length_exceeded", "rate_limit_exceeded", 429, None)),
    param=anything,
    status=maybe(one_of("RESOURCE_EXHAUSTED", "INVALID_ARGUMENT")),
)
_error_shapes = [
    obj(error=maybe(error_objects)),  # OpenAI, Groq, Google
    obj(type=const("error"), error=maybe(error_objects)),  # Anthropic
    obj(object=const("error"), message=maybe(texts), type=maybe(texts), code=anything),  # vLLM
    obj(error=maybe(texts), error_type=maybe(texts)),  # TGI
    obj(detail=anything),  # FastAPI
]
_foreign_shapes = [
    obj(type=one_of("response.created", "response", "thread.run.created", "completion"), response=anything),
    obj(object=one_of("response", "thread.message.delta", "assistant")),
    obj(candidates=anything, promptFeedback=anything),
    obj(token=anything, generated_text=anything),
    obj(done=anything, message=anything, response=anything),
    obj(completion=texts, stop_reason=anything),
]


def error_body(src: Source) -> dict[str, Any]:
    return src.pick(_error_shapes)(src)


def foreign_body(src: Source) -> dict[str, Any]:
    return src.pick(_foreign_shapes)(src)


# --- OpenAI --------------------------------------------------------------------------------------------------------

openai_usage = obj(
    prompt_tokens=counts,
    completion_tokens=counts,
    total_tokens=counts,
    prompt_tokens_details=maybe(obj(cached_tokens=counts)),
    prompt_cache_hit_tokens=counts,
    completion_tokens_details=maybe(obj(reasoning_tokens=counts)),
)
_thinking_pieces = list_of(maybe(obj(type=maybe(const("text")), text=maybe(texts))))
_content_part = obj(
    type=maybe(one_of("text", "thinking", "image_url", "reference")),
    text=maybe(texts),
    thinking=maybe(lambda src: _thinking_pieces(src) if src.odds(2) else text(src)),
)
_content_parts = list_of(lambda src: src.pick((text, _content_part, _content_part, value))(src), 4)


def openai_content(src: Source) -> Any:
    return _content_parts(src) if src.odds(3) else text(src)


finish_reasons = one_of(None, "stop", "length", "tool_calls", "content_filter", "")
_tool_call_deltas = list_of(
    maybe(
        obj(
            index=maybe(integer(0, 3)),
            id=maybe(texts),
            type=maybe(const("function")),
            function=maybe(obj(name=maybe(texts), arguments=maybe(texts))),
        )
    )
)
_delta = obj(
    role=maybe(const("assistant")),
    content=maybe(openai_content),
    reasoning_content=maybe(texts),
    reasoning=maybe(texts),
    refusal=maybe(texts),
    tool_calls=maybe(_tool_call_deltas),
)


def _sparse(gen: Gen, plain: Gen) -> Gen:
    """`gen` about once in three, else `plain`: fields a real chunk seldom carries."""
    return lambda src: gen(src) if src.odds(3) else plain(src)


def _rare(gen: Gen, plain: Gen) -> Gen:
    """`gen` once in `chaos`, else `plain`: a field that changes the outcome (an error, another API's type)."""
    return lambda src: gen(src) if src.weird() else plain(src)


_choice = obj(
    ("delta",),
    index=maybe(integer(0, 2)),
    delta=maybe(_sparse(_delta, obj(content=maybe(texts)))),
    text=_sparse(maybe(texts), const(None)),
    finish_reason=maybe(finish_reasons),
    logprobs=_sparse(anything, const(None)),
)
openai_chunk = obj(
    ("choices",),
    id=maybe(texts),
    object=_rare(maybe(one_of("text_completion", "error", "response", "thread.run")), const("chat.completion.chunk")),
    model=maybe(texts),
    choices=maybe(list_of(maybe(_choice))),
    usage=_sparse(maybe(openai_usage), const(None)),
    x_groq=_sparse(maybe(obj(usage=maybe(openai_usage), id=texts)), const(None)),
    error=_rare(maybe(error_objects), const(None)),
    type=_rare(maybe(one_of("ping", "error", "message_start", "response.output_text.delta", "completion")), texts),
)
_choiceless = obj(  # a usage-only chunk (stream_options.include_usage), or with chaos an error or a ping
    ("usage",),
    id=maybe(texts),
    choices=_rare(const(None), const([])),
    usage=maybe(openai_usage),
    x_groq=_sparse(maybe(obj(usage=maybe(openai_usage))), const(None)),
    error=_rare(maybe(error_objects), const(None)),
    object=_rare(maybe(one_of("error", "chat.completion.chunk")), const("chat.completion.chunk")),
    type=_rare(maybe(one_of("ping", "error")), const(None)),
)
OPENAI_EVENT_NAMES = [
    b"message",
    b"error",
    b"ping",
    b"response.output_text.delta",
    b"thread.message.delta",
    b"done",
    b"message_start",
    b"content_block_delta",
    b"completion",
    b"chunk",
    b"\xff",
]
OPENAI_TERMINAL = (b"", b"[DONE]")


def openai_event(src: Source) -> tuple[bytes, bytes]:
    name = b"message" if src.odds(16) else b""
    if src.weird():
        name = src.pick(OPENAI_EVENT_NAMES) if src.odds(2) else src.take(src.below(8))
    if name == b"error":  # Groq's named error event: JSON of any shape, or plain text
        return name, encode(error_body(src), src) if src.odds(2) else garbage(src)
    if not src.weird():
        return name, encode(openai_chunk(src) if not src.odds(8) else _choiceless(src), src)
    kind = src.below(7)
    if kind == 0:
        data = encode(_choiceless(src), src)
    elif kind == 1:
        data = encode(error_body(src) if src.odds(2) else foreign_body(src), src)
    elif kind == 2:
        data = b"[DONE]"
    elif kind == 3:
        data = garbage(src)
    elif kind == 4:
        data = truncated(encode(openai_chunk(src), src), src)
    elif kind == 5:
        data = encode(value(src), src)
    else:
        data = encode(openai_chunk(src), src)
    return name, data


_tool_calls = list_of(
    maybe(
        obj(
            id=maybe(texts),
            type=maybe(const("function")),
            function=maybe(obj(name=maybe(texts), arguments=lambda src: value(src) if src.odds(3) else text(src))),
        )
    )
)
_message = obj(
    role=maybe(const("assistant")),
    content=maybe(openai_content),
    reasoning_content=_sparse(maybe(texts), const(None)),
    reasoning=_sparse(maybe(texts), const(None)),
    refusal=_sparse(maybe(texts), const(None)),
    tool_calls=_sparse(maybe(_tool_calls), const(None)),
)
openai_body = obj(
    id=maybe(texts),
    object=maybe(const("chat.completion")),
    model=maybe(texts),
    choices=maybe(
        list_of(maybe(obj(index=maybe(integer(0, 2)), message=maybe(_message), text=maybe(texts), finish_reason=texts)))
    ),
    usage=maybe(openai_usage),
    error=_rare(maybe(error_objects), const(None)),
)

# --- Anthropic -----------------------------------------------------------------------------------------------------

anthropic_usage = obj(
    input_tokens=counts,
    output_tokens=counts,
    cache_read_input_tokens=counts,
    cache_creation_input_tokens=counts,
    service_tier=texts,
)
block_types = one_of("text", "thinking", "tool_use", "server_tool_use", "redacted_thinking", "web_search_tool_result")
delta_types = one_of("text_delta", "input_json_delta", "thinking_delta", "signature_delta", "citations_delta", "x")
stop_reasons = one_of("end_turn", "max_tokens", "tool_use", "stop_sequence", None, "")


def _typed(name: str, required: tuple[str, ...] = (), **fields: Gen) -> Gen:
    """An Anthropic event object; its `type` is usually its own name, sometimes absent (the event name is read
    then) or any JSON value."""
    return obj(required, type=maybe(const(name)), **fields)


ANTHROPIC_KINDS: dict[str, Gen] = {
    "content_block_delta": _typed(
        "content_block_delta",
        ("delta",),
        index=maybe(integer(0, 3)),
        delta=maybe(
            obj(
                ("type",),
                type=maybe(delta_types),
                text=maybe(texts),
                partial_json=maybe(texts),
                thinking=maybe(texts),
                signature=texts,
            )
        ),
    ),
    "message_start": _typed(
        "message_start",
        ("message",),
        message=maybe(
            obj(
                id=maybe(texts),
                type=maybe(const("message")),
                role=maybe(const("assistant")),
                model=maybe(texts),
                content=anything,
                usage=maybe(anthropic_usage),
            )
        ),
    ),
    "content_block_start": _typed(
        "content_block_start",
        ("content_block", "index"),
        index=maybe(integer(0, 3)),
        content_block=maybe(
            obj(
                ("type",),
                type=maybe(block_types),
                text=maybe(texts),
                thinking=maybe(texts),
                id=maybe(texts),
                name=maybe(texts),
                input=anything,
            )
        ),
    ),
    "content_block_stop": _typed("content_block_stop", index=maybe(integer(0, 3))),
    "message_delta": _typed(
        "message_delta",
        ("delta",),
        delta=maybe(obj(stop_reason=maybe(stop_reasons), stop_sequence=anything)),
        usage=maybe(anthropic_usage),
    ),
    "message_stop": _typed("message_stop"),
    "ping": _typed("ping"),
    "error": _typed("error", error=maybe(error_objects)),
    "future_event": obj(type=maybe(texts), data=anything),
}
_KIND_NAMES = list(ANTHROPIC_KINDS)
_CALM_KINDS = [
    "content_block_delta",
    "content_block_delta",
    "content_block_delta",
    "content_block_start",
    "content_block_stop",
    "message_start",
    "message_delta",
    "ping",
]
ANTHROPIC_EVENT_NAMES = [b"", b"message", b"error", b"ping", b"response.created", b"completion", b"\xffx"]
ANTHROPIC_TERMINAL = (b"message_stop", b'{"type":"message_stop"}')


def anthropic_event(src: Source) -> tuple[bytes, bytes]:
    kind = src.pick(_KIND_NAMES if src.weird() else _CALM_KINDS)
    name = kind.encode()
    if src.weird():
        name_kind = src.below(3)
        if name_kind == 0:
            name = src.pick(_KIND_NAMES).encode()
        elif name_kind == 1:
            name = src.pick(ANTHROPIC_EVENT_NAMES)
        else:
            name = src.take(src.below(8))
    if not src.weird():
        return name, encode(ANTHROPIC_KINDS[kind](src), src)
    data_kind = src.below(5)
    if data_kind == 0:
        data = b"[DONE]"
    elif data_kind == 1:
        data = garbage(src)
    elif data_kind == 2:
        data = truncated(encode(ANTHROPIC_KINDS[kind](src), src), src)
    elif data_kind == 3:
        data = encode(error_body(src) if src.odds(2) else foreign_body(src), src)
    else:
        data = encode(value(src), src)
    return name, data


_block = maybe(
    obj(
        type=maybe(block_types),
        text=maybe(texts),
        thinking=_sparse(maybe(texts), const(None)),
        id=maybe(texts),
        name=maybe(texts),
        input=anything,
    )
)
anthropic_body = obj(
    id=maybe(texts),
    type=maybe(const("message")),
    role=maybe(const("assistant")),
    model=maybe(texts),
    content=maybe(list_of(_block, 4)),
    stop_reason=maybe(stop_reasons),
    stop_sequence=anything,
    usage=maybe(anthropic_usage),
    error=_rare(maybe(error_objects), const(None)),
)

# --- per adapter ---------------------------------------------------------------------------------------------------

EVENT = {"openai": openai_event, "anthropic": anthropic_event}
TERMINAL = {"openai": OPENAI_TERMINAL, "anthropic": ANTHROPIC_TERMINAL}
BODY = {"openai": openai_body, "anthropic": anthropic_body}
MAX_EVENTS = 8
POOL = 1024  # bytes behind one Source: more than any event or body uses (past the end, choices are the plainest)


def source(seed: int, stream: int, chaos: int = 4) -> Source:
    """The Source of one part of a case: part `stream` of the case `seed`, independent of the other parts."""
    return Source(random.Random(seed * 1024 + stream).randbytes(POOL), chaos)


def chaos_of(seed: int) -> int:
    return CHAOS[(seed >> 1) % len(CHAOS)]


def decode_events(provider: str, seed: int, keep: int) -> list[tuple[bytes, bytes]]:
    """Up to MAX_EVENTS events of any kind (event i is kept when bit i of `keep` is set, so shrinking `keep` drops
    events without changing the others), and the terminal event unless the seed is odd: last, or one time in four
    early, before other events."""
    chaos = chaos_of(seed)
    events = [EVENT[provider](source(seed, i, chaos)) for i in range(MAX_EVENTS) if keep >> i & 1]
    if seed & 1:
        return events
    early = (seed >> 8) % 4 == 3
    at = (seed >> 16) % (len(events) + 1) if early else len(events)
    return [*events[:at], TERMINAL[provider], *events[at:]]


def decode_body(provider: str, src: Source) -> bytes:
    """A non-streamed 2xx body: mostly the provider's own shape, else an error, another API's, or not JSON."""
    if not src.weird():
        return encode(BODY[provider](src), src)
    kind = src.below(4)
    if kind == 0:
        return encode(error_body(src) if src.odds(2) else foreign_body(src), src)
    if kind == 1:
        other = BODY["anthropic" if provider == "openai" else "openai"]
        return encode(other(src) if src.odds(2) else value(src), src)
    if kind == 2:
        return truncated(encode(BODY[provider](src), src), src)
    return garbage(src)


ERROR_STATUSES = [400, 429, 500, 401, 403, 404, 408, 409, 413, 422, 502, 503, 504, 529]


def decode_error_response(src: Source) -> tuple[int, bytes]:
    """(status, body) of a non-2xx response: errors of every known shape, HTML pages, any bytes. Never 304, which
    has no body."""
    status = src.pick(ERROR_STATUSES) if not src.odds(4) else 300 + src.below(300)
    status = 305 if status == 304 else status
    kind = src.below(8)
    if kind < 4:
        body = encode(error_body(src), src)
    elif kind == 4:
        body = encode(foreign_body(src) if src.odds(2) else value(src), src)
    elif kind == 5:
        body = truncated(encode(error_body(src), src), src)
    elif kind == 6:
        body = f"<html><head><title>{text(src)}</title></head><body>{text(src)}</body></html>".encode()
    else:
        body = garbage(src)
    return status, body


@dataclass
class AdapterCase:
    """An event sequence, a non-streamed body and an error response, for one adapter."""

    events: list[tuple[bytes, bytes]]
    body: bytes
    error: tuple[int, bytes]


def decode_adapter_case(provider: str, seed: int, keep: int) -> AdapterCase:
    chaos = chaos_of(seed)
    body = decode_body(provider, source(seed, MAX_EVENTS, chaos))
    return AdapterCase(decode_events(provider, seed, keep), body, decode_error_response(source(seed, MAX_EVENTS + 1)))


# Two integers per case (see the module docstring): `keep` shrinks to the fewest events that still fail.
seeds = st.integers(0, 2**64 - 1)
keeps = st.integers(0, 2**MAX_EVENTS - 1)


def adapter_cases(provider: str) -> st.SearchStrategy[AdapterCase]:
    return st.builds(decode_adapter_case, st.just(provider), seeds, keeps)


# --- whole HTTP responses for the real stream path -----------------------------------------------------------------

SSE_TYPES = ["text/event-stream", "text/event-stream; charset=utf-8", "text/event-stream;charset=UTF-8"]
JSON_TYPES = ["application/json", "application/json; charset=utf-8", "text/plain", "text/html"]
NDJSON_TYPES = ["application/x-ndjson", "application/jsonl; charset=utf-8"]
ERROR_TYPES = ["application/json", "text/html", "text/event-stream", "text/plain"]
LINE_ENDINGS = [[b"\n"], [b"\r\n"], [b"\r"], [b"\n", b"\r\n", b"\r"]]
HEADER_CHARS = "abcXYZ019-_=;,./ é中😀"


@dataclass
class WireCase:
    """One HTTP response for `tests.support.wire.call`, and what the stream path must make of it.

    `events` are exactly the SSE events the response carries (kind "sse"); `exact` is True when the framing is valid
    and the body complete, so the outcome must equal the adapter's own reading of `events` or `body`."""

    provider: str
    kind: str  # sse | json | error | ndjson
    status: int
    content_type: str
    framing: str  # length | chunked | close
    exact: bool
    events: list[tuple[bytes, bytes]]
    body: bytes
    pieces: list[bytes] = field(repr=False)
    pause_s: float = 0.0

    def writes(self) -> Iterator[bytes]:
        """The pieces, with a pause between them when `pause_s` (so that reads, and their stamps, differ)."""
        for i, piece in enumerate(self.pieces):
            if i and self.pause_s:
                gevent.sleep(self.pause_s)
            yield piece


def _field(name: bytes, val: bytes, space: bool) -> bytes:
    """`name:value`; exactly one leading space is dropped by the reader, so a value starting with one needs it."""
    return name + (b": " if space or val[:1] == b" " else b":") + val


def _sse_wire_safe(events: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """An event name cannot hold a line break; data can (as several `data:` lines), but only as LF."""
    return [
        (name.replace(b"\r", b"_").replace(b"\n", b"_"), data.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))
        for name, data in events
    ]


def sse_bytes(events: list[tuple[bytes, bytes]], src: Source) -> bytes:
    """An event stream carrying exactly `events`, with comments, ids, a BOM, LF, CRLF, CR or mixed line ends, and
    sometimes an unfinished event at the end (which must not be dispatched)."""
    endings = src.pick(LINE_ENDINGS)
    space = not src.odds(3)
    lines: list[bytes] = []
    for name, data in events:
        if src.odds(8):
            lines.append(b": keep-alive")
        if src.odds(10):
            lines.append(b"id: 17")
        if src.odds(12):
            lines.append(b"retry: 1000")
        if name or src.odds(6):
            lines.append(_field(b"event", name, space))
        lines.extend(_field(b"data", segment, space) for segment in data.split(b"\n"))
        lines.append(b"")
    unfinished = src.odds(max(8, src.chaos))
    if unfinished:
        lines.append(_field(b"data", b'{"choices": [{"delta": {"content": "cut"}}]}', space))
    out = bytearray(b"\xef\xbb\xbf" if src.odds(8) else b"")
    previous = b""
    for i, line in enumerate(lines):
        end = endings[src.below(len(endings))] if len(endings) > 1 else endings[0]
        if previous == b"\r" and not line and end == b"\n":
            end = b"\r\n"  # CR then LF would be read as one line end, losing this blank line
        if unfinished and i == len(lines) - 1 and src.odds(2):
            end = b""
        out += line + end
        previous = end
    return bytes(out)


def _header_text(src: Source) -> str:
    return "".join(src.pick(HEADER_CHARS) for _ in range(1 + src.below(16))).strip() or "x"


def decode_wire_case(provider: str, seed: int, keep: int) -> WireCase:
    chaos = chaos_of(seed)
    src = source(seed, MAX_EVENTS + 2, chaos)
    kind = ("sse", "sse", "sse", "sse", "sse", "json", "error", "ndjson")[src.below(8)]
    events: list[tuple[bytes, bytes]] = []
    status = 200
    if kind in ("sse", "ndjson"):
        events = _sse_wire_safe(decode_events(provider, seed, keep))
    if kind == "sse":
        content_type = src.pick(SSE_TYPES)
        body = sse_bytes(events, src)
    elif kind == "ndjson":
        content_type = src.pick(NDJSON_TYPES)
        body = b"".join(data.replace(b"\n", b" ") + b"\n" for _, data in events)
    elif kind == "json":
        content_type = src.pick(JSON_TYPES)
        body = decode_body(provider, source(seed, MAX_EVENTS, chaos))
    else:
        content_type = src.pick(ERROR_TYPES)
        status, body = decode_error_response(source(seed, MAX_EVENTS + 1))
    headers: dict[str, str] = {}
    if src.odds(4):
        headers["x_request_id"] = _header_text(src)
    if src.odds(6):
        headers["retry_after"] = _header_text(src)
    framing = ("length", "chunked", "close")[src.below(3)]
    exact = True
    if framing == "length":
        length = len(body)
        if src.odds(max(12, src.chaos)):
            length = max(0, length + src.pick([-3, -1, 1, 7]))
            exact = length == len(body)
        headers["content_length"] = str(length)
        framed = body
    elif framing == "chunked":
        headers["transfer_encoding"] = "chunked"
        cuts = sorted({src.below(len(body) + 1) for _ in range(src.below(7))})
        parts = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
        framing_parts = chunked(*parts)
        if src.odds(max(12, src.chaos)):
            framing_parts = framing_parts[:-1]  # no closing zero chunk: the body never ends
            exact = False
        framed = b"".join(framing_parts)
    else:
        framed = body
    if src.odds(max(12, src.chaos)):
        framed = framed[: src.below(len(framed) + 1)]
        exact = False
    head = http_head(status, content_type, **headers)
    if src.odds(16):
        head = b"HTTP/1.1 100 Continue\r\n\r\n" + head
    raw = head + framed
    line_ends = [i for i, b in enumerate(raw) if b in (10, 13)]
    cuts = set()
    for _ in range(src.below(9)):
        if line_ends and src.odds(2):
            cuts.add(src.pick(line_ends) + src.below(2))
        else:
            cuts.add(src.below(len(raw) + 1))
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(raw)), len(raw)]
    pieces = [raw[a:b] for a, b in pairwise(bounds)]
    pause = src.pick([0.001, 0.003]) if src.odds(6) else 0.0
    return WireCase(provider, kind, status, content_type, framing, exact, events, body, pieces, pause)


def wire_cases(provider: str) -> st.SearchStrategy[WireCase]:
    return st.builds(decode_wire_case, st.just(provider), seeds, keeps)
