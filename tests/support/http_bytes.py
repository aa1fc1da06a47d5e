"""Raw HTTP/1.1 bytes for tests that read a response off a plain socket (no client library in between)."""

from __future__ import annotations


def response_complete(buf: bytes) -> bool:
    """Whether `buf` holds a whole response: its Content-Length reached, or the last chunk of a chunked body."""
    head, sep, rest = buf.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.decode().lower().split("\r\n"):
        if line.startswith("content-length:"):
            return len(rest) >= int(line.split(":")[1])
    return rest.endswith(b"0\r\n\r\n")
