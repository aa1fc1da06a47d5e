"""What every adapter does the same way: join the base path, send a JSON POST with the caller's extras merged last,
read a JSON body.

One module for all adapters, so a new provider borrows nothing from another provider's module."""

from __future__ import annotations

from typing import Any

import orjson

from loadlib.errors import MalformedEventError
from loadlib.providers import jsonread
from loadlib.providers.base import ChatRequest, HttpRequest


def join_path(base_path: str, suffix: str) -> str:
    """`/v1` + `/chat/completions` without doubled or missing slashes; an empty base gives the bare suffix."""
    base = base_path.strip().rstrip("/")
    if base and not base.startswith("/"):
        base = "/" + base
    return base + suffix


def merge_body(body: dict[str, Any], extra: dict[str, Any]) -> None:
    """Shallow-merge `extra` last; a None value removes the key (e.g. max_tokens for models that reject it)."""
    for key, value in extra.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value


def merge_headers(headers: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """Add `extra`, replacing same-named headers whatever their case, so no header is ever sent twice."""
    if extra:
        lowered = {k.lower() for k in extra}
        headers = {k: v for k, v in headers.items() if k.lower() not in lowered}
        headers.update(extra)
    return headers


def post_json(path: str, body: dict[str, Any], headers: dict[str, str], req: ChatRequest) -> HttpRequest:
    """POST `body` as JSON to `path`, the request's `extra_body` and `extra_headers` merged last."""
    merge_body(body, req.extra_body)
    return HttpRequest("POST", path, merge_headers(headers, req.extra_headers), orjson.dumps(body))


def json_body(body: bytes, what: str) -> dict[str, Any]:
    """A non-streamed response body as a JSON object, or MalformedEventError naming `what` it should have been."""
    return json_body_mended(body, what)[0]


def json_body_mended(body: bytes, what: str) -> tuple[dict[str, Any], int]:
    """`json_body`, with how many lone surrogate escapes in it were read as U+FFFD (loadlib.providers.jsonread)."""
    try:
        obj, mended = orjson.loads(body), 0
    except orjson.JSONDecodeError:
        obj, mended = jsonread.reread(body, what)
    if not isinstance(obj, dict):
        raise MalformedEventError(f"{what} is not a JSON object")
    return obj, mended
