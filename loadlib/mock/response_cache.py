"""A gateway's response cache, played by the mock: requests whose key (a configurable list of body fields and
headers) was seen before are answered at once, as LiteLLM's or a CDN's cache answers, and say so in `x-cache`.

The key is what such caches hash: the named body fields as canonical JSON (keys sorted, numbers as sent, so 0.7 and
0.7000000001 are two keys: floats are not normalised), `body` for the raw body bytes, `header:NAME` for a header
(absent and empty are one value). A key is stored when its first request arrives, whatever its answer. The cache is
the mock's ground truth of which variation busts it: the truth record says `hit` or `miss` (docs/mock.md).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any

import orjson

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


class ResponseCache:
    """The keys seen, least recently used out past CAPACITY."""

    def __init__(self) -> None:
        self.keys: OrderedDict[bytes, None] = OrderedDict()

    def lookup(self, key: bytes) -> str:
        """`hit` when the key was seen (it becomes the most recent), else `miss` (it is stored)."""
        if key in self.keys:
            self.keys.move_to_end(key)
            return HIT
        self.keys[key] = None
        if len(self.keys) > CAPACITY:
            self.keys.popitem(last=False)
        return MISS

    def clear(self) -> None:
        self.keys.clear()
