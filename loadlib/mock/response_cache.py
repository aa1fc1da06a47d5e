"""A gateway's response cache, played by the mock: requests whose key (a configurable list of body fields and
headers) was seen before are answered at once, as LiteLLM's or a CDN's cache answers, and say so in `x-cache`.

The key is what such caches hash: the named body fields as canonical JSON (keys sorted, numbers as sent, so 0.7 and
0.7000000001 are two keys: floats are not normalised), `body` for the raw body bytes, `header:NAME` for a header
(absent and empty are one value). A key is stored when its first request arrives, whatever its answer; the answer
planned for it (its text, length, finish) is stored beside it once planned, and every later hit replays that answer
as a gateway returns its stored response, whatever the hit's own content or a nondeterministic draw would give. The
cache is the mock's ground truth of which variation busts it: the truth record says `hit` or `miss` (docs/mock.md).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

from loadlib.mock.llm_response import Answer
from loadlib.mock.truth import TruthRecord

HIT, MISS = "hit", "miss"
HEADER = "x-cache"
CAPACITY = 100_000  # keys kept, least recently used out
HIT_OVERRIDES: dict[str, Any] = {"ttft_ms": 1.0, "itl_ms": 0.0, "ttft_jitter_ms": 0.0, "itl_jitter_ms": 0.0}


def parse_fields(spec: str) -> tuple[str, ...]:
    """`model+messages+temperature+header:x-team` -> its parts; "" or "off" -> () (no cache)."""
    text = spec.strip().lower()
    if text in ("", "off", "none"):
        return ()
    parts = tuple(p.strip() for p in text.split("+"))
    bad = [p for p in parts if not p or (p.startswith("header:") and not p[7:])]
    if bad:
        raise ValueError(f"response_cache: empty part in {spec!r}; give fields and header:NAME joined by '+'")
    return parts


def cache_key(api: str, fields: tuple[str, ...], body: dict[str, Any], raw: bytes, headers: dict[str, str]) -> bytes:
    """The digest of the request's parts the cache looks at."""
    h = hashlib.blake2b(api.encode(), digest_size=16)
    for name in fields:
        if name == "body":
            value = raw
        elif name.startswith("header:"):
            value = (headers.get(name[7:]) or "").encode()
        else:
            value = orjson.dumps(body.get(name), option=orjson.OPT_SORT_KEYS)
        h.update(b"\0" + name.encode() + b"\0" + value)
    return h.digest()


@dataclass(frozen=True, slots=True)
class Stored:
    """What a stored answer's bytes depend on beyond the request: a hit replays it."""

    text_offset: int
    output_tokens: int
    finish_reason: str
    tool: str | None
    pieces: tuple[str, ...] | None
    lead: str
    canary: str | None


def stored(answer: Answer, rec: TruthRecord) -> Stored:
    plan = answer.plan
    return Stored(
        answer.text_offset, plan.output_tokens, plan.finish_reason, answer.tool, answer.pieces, answer.lead, rec.canary
    )


def replayed(answer: Answer, rec: TruthRecord, kept: Stored | None) -> Answer:
    """A hit's answer with the stored answer's text (its plan already has the stored length: `budget`); the truth
    record says what was sent."""
    if kept is None:
        return answer
    rec.text_offset, rec.canary, rec.structured = kept.text_offset, kept.canary, kept.pieces is not None
    plan = dataclasses.replace(answer.plan, finish_reason=kept.finish_reason)
    return dataclasses.replace(
        answer, text_offset=kept.text_offset, plan=plan, tool=kept.tool, pieces=kept.pieces, lead=kept.lead
    )


def budget(kept: Stored | None, max_tokens: int | None, natural: int | None) -> tuple[int | None, int | None]:
    """The plan's (max_tokens, natural length): the stored answer's length for a hit that replays one."""
    return (max_tokens, natural) if kept is None else (None, kept.output_tokens)


class ResponseCache:
    """The keys seen and the answers stored for them, least recently used out past CAPACITY."""

    def __init__(self) -> None:
        self.keys: OrderedDict[bytes, Stored | None] = OrderedDict()

    def lookup(self, key: bytes) -> str:
        """`hit` when the key was seen (it becomes the most recent), else `miss` (it is stored)."""
        if key in self.keys:
            self.keys.move_to_end(key)
            return HIT
        self.keys[key] = None
        if len(self.keys) > CAPACITY:
            self.keys.popitem(last=False)
        return MISS

    def answer(self, key: bytes) -> Stored | None:
        """The answer stored for a key; None before its first request's answer was planned (or when a fault spoilt
        it): a hit then gets the answer its own content gets."""
        return self.keys.get(key)

    def store(self, key: bytes, kept: Stored) -> None:
        if key in self.keys:
            self.keys[key] = kept

    def clear(self) -> None:
        self.keys.clear()
