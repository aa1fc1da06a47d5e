"""What a response head alone decides about an attempt, before its body is read: a redirect (never followed), a
status code HTTP does not define, or a body in an encoding the request did not accept. Pure functions, so every
wording is tested without a socket; loadlib.transport.stream applies them.

A redirect is not followed on purpose: a load test that follows one measures two requests as one and, behind an
http-to-https redirect, sends the API key in clear first. The message says where it points, so the fix (--host at
the final URL) is one copy away. A 3xx is its own class, not `http_4xx`; a code outside 100-599 is not `http_5xx`:
neither says anything about the server's load.
"""

from __future__ import annotations

from urllib.parse import urljoin

from loadlib.errors import ErrorClass
from loadlib.providers.errors_body import short

REDIRECT_FIX = "redirects are not followed; point --host at the final URL"
VALID_STATUS = range(100, 600)


def redirect_message(status: int, location: str | None, request_url: str) -> str:
    """`HTTP 301 to https://host/v1/chat/completions: redirects are not followed; ...`; a redirect to the URL that
    was asked (a loop) says so, since no --host fixes that: the server's own configuration does."""
    if not location:
        return f"HTTP {status} without a Location: {REDIRECT_FIX}"
    target = urljoin(request_url, location.strip())
    if target == request_url:
        return f"HTTP {status} to the URL requested, {short(target)}: a redirect loop (redirects are not followed)"
    return f"HTTP {status} to {short(target)}: {REDIRECT_FIX}"


def invalid_status_message(status: int) -> str:
    return f"HTTP {status} is not a status code (HTTP defines 100-599): the server or a proxy before it is broken"


def unaccepted_encoding(content_encoding: str | None, accept_encoding: str | None) -> str | None:
    """Why a body in `content_encoding` cannot be read (None when it can: none, or identity). The adapters ask for
    identity, and nothing here decodes gzip or br: a body the request did accept is unreadable all the same (an
    --llm-header widened Accept-Encoding)."""
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("", "identity"):
        return None
    accepted = {part.split(";")[0].strip().lower() for part in (accept_encoding or "").split(",")}
    if encoding in accepted or "*" in accepted:
        return f"Content-Encoding {short(encoding)}, which loadlib does not decode: accept identity only"
    return f"Content-Encoding {short(encoding)}, which the request did not accept"


def head_verdict(
    status: int, location: str | None, content_encoding: str | None, accept_encoding: str | None, request_url: str
) -> tuple[ErrorClass, str] | None:
    """The class and message the head decides, or None when the body decides (a 2xx, a 4xx or 5xx error body)."""
    if status not in VALID_STATUS:
        return ErrorClass.HTTP_INVALID_STATUS, invalid_status_message(status)
    if 300 <= status < 400:
        return ErrorClass.HTTP_REDIRECT, redirect_message(status, location, request_url)
    problem = unaccepted_encoding(content_encoding, accept_encoding) if status < 300 else None
    return (ErrorClass.MALFORMED_EVENT, problem) if problem else None


def header(headers: dict[str, str], name: str) -> str | None:
    """A request header by case-insensitive name (the adapters write `Accept-Encoding` or `accept-encoding`)."""
    name = name.lower()
    return next((value for key, value in headers.items() if key.lower() == name), None)
