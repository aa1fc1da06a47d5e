"""Hostile behaviours about what a status line and a body claim: redirects, a status code HTTP does not define, a
gzip body nobody asked for, and a delta that is not UTF-8.

Registered in loadlib.mock.hostile's `--list` by an import at the end of that module. A client must name each one
(docs/metrics.md, "Error classes"): a redirect is `http_redirect` and says where it points (never followed, and fatal:
a misconfigured --host stops the run early), 999 is `http_invalid_status`, and an unreadable body says why
(`Content-Encoding gzip, which the request did not accept`; `invalid UTF-8 at byte N`) instead of "not JSON".
"""

from __future__ import annotations

import gzip
import json

from loadlib.mock.hostile import (
    DONE,
    JSON,
    Exchange,
    behaviour,
    completion,
    delta,
    event,
    head,
    send_json,
    send_stream,
    usage,
)

MOVED = b"<html><head><title>301 Moved Permanently</title></head><body>Moved</body></html>"
INVALID_UTF8 = b"caf\xc3 \xff\xfe"  # a cut two-byte character, then bytes that never start one


def _redirect(x: Exchange, status: str, location: str) -> bool:
    """A small HTML body with a Content-Length, as web servers send: the connection stays usable."""
    x.peer.send(head(status, "Content-Type: text/html", f"Location: {location}", f"Content-Length: {len(MOVED)}"))
    x.peer.send(MOVED)
    return True


@behaviour("redirect-301", "HTTP 301 to the same path over https (an http --host in front of an https API)")
def redirect_301(x: Exchange) -> bool:
    return _redirect(x, "301 Moved Permanently", f"https://{x.req.headers.get('host', '127.0.0.1')}{x.req.path}")


@behaviour("redirect-loop-307", "HTTP 307 to the URL requested (a redirect loop), on every request")
def redirect_loop_307(x: Exchange) -> bool:
    return _redirect(x, "307 Temporary Redirect", x.req.path)


@behaviour("status-999", "HTTP 999 (outside 100-599) with an OpenAI-style JSON error body (keep-alive)")
def status_999(x: Exchange) -> bool:
    return send_json(x, "999 Whatever", {"error": {"message": "status 999", "type": "server_error"}})


@behaviour("status-042", "HTTP 042 (below 100, so not an interim 1xx) with a JSON error body (keep-alive)")
def status_042(x: Exchange) -> bool:
    return send_json(x, "042 Whatever", {"error": {"message": "status 42", "type": "server_error"}})


@behaviour("gzip-unasked", "200 JSON completion with Content-Encoding: gzip, though the request accepts identity only")
def gzip_unasked(x: Exchange) -> bool:
    body = gzip.compress(json.dumps(completion(x.n)).encode(), mtime=0)
    x.peer.send(head("200 OK", JSON, "Content-Encoding: gzip", f"Content-Length: {len(body)}") + body)
    return True


def utf8_broken_event(n: int) -> bytes:
    """A content delta whose text holds invalid UTF-8 (the JSON around it is fine)."""
    return event(delta("@BAD@", id=f"utf8-{n}")).replace(b"@BAD@", INVALID_UTF8)


@behaviour("invalid-utf8-delta", "200 SSE: good deltas, one whose content is invalid UTF-8, usage, [DONE]")
def invalid_utf8_delta(x: Exchange) -> bool:
    rid = f"utf8-{x.n}"
    events = [event(delta(f"u{i} ", id=rid)) for i in range(3)]
    return send_stream(x, [*events, utf8_broken_event(x.n), event(usage(id=rid)), DONE], 0.0, f"x-request-id: {rid}")


MIX = (redirect_301, redirect_loop_307, status_999, gzip_unasked, invalid_utf8_delta)


@behaviour(
    "status-mix", "per request in turn: redirect-301, redirect-loop-307, status-999, gzip-unasked, invalid-utf8-delta"
)
def status_mix(x: Exchange) -> bool:
    """All five in turn, by the request counter: one real run counts every class (the redirects stop no run here,
    since the other answers are not fatal)."""
    return MIX[x.n % len(MIX)](x)
