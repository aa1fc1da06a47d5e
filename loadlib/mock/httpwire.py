"""The little HTTP/1.1 the mock needs: parse a request head, build response heads, frame chunks. Pure functions."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qs

MAX_HEAD = 64 * 1024
MAX_BODY = 256 * 1024 * 1024
LAST_CHUNK = b"0\r\n\r\n"
REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    411: "Length Required",
    413: "Content Too Large",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
    505: "HTTP Version Not Supported",
    529: "Site is overloaded",
}


class HttpError(Exception):
    """A request the mock cannot parse; answered with `status` and the connection closed."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(slots=True)
class RequestHead:
    method: str
    path: str
    query: dict[str, list[str]]
    version: str
    headers: dict[str, str]  # lower-case names; a repeated header keeps its last value
    content_length: int
    keep_alive: bool
    body: bytes = field(default=b"")


def parse_head(head: bytes) -> RequestHead:
    """Parse the bytes before the blank line: request line and headers."""
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError as exc:  # pragma: no cover - latin-1 decodes any byte
        raise HttpError(400, "undecodable request head") from exc
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise HttpError(400, f"bad request line {lines[0][:80]!r}")
    method, target, version = parts
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        raise HttpError(505, f"unsupported HTTP version {version[:20]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise HttpError(400, f"bad header line {line[:80]!r}")
        headers[name.lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise HttpError(501, "chunked request bodies are not supported; send Content-Length")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise HttpError(400, "bad Content-Length") from None
    if length < 0:
        raise HttpError(400, "bad Content-Length")
    if length > MAX_BODY:
        raise HttpError(413, f"body over {MAX_BODY} bytes")
    conn = headers.get("connection", "").lower()
    keep_alive = "close" not in conn if version == "HTTP/1.1" else "keep-alive" in conn
    path, _, qs = target.partition("?")
    return RequestHead(method, path, parse_qs(qs) if qs else {}, version, headers, length, keep_alive)


def response_head(
    status: int,
    headers: list[tuple[str, str]],
    content_length: int | None = None,
    keep_alive: bool = True,
) -> bytes:
    """Status line and headers; chunked transfer encoding when `content_length` is None."""
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Unknown')}", "server: loadlib-mock"]
    lines += [f"{k}: {v}" for k, v in headers]
    if content_length is None:
        lines.append("transfer-encoding: chunked")
    else:
        lines.append(f"content-length: {content_length}")
    if not keep_alive:
        lines.append("connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def chunk(data: bytes) -> bytes:
    """One HTTP/1.1 chunk; empty data gives nothing (an empty chunk would end the body)."""
    return b"%x\r\n%b\r\n" % (len(data), data) if data else b""
