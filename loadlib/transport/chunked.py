"""Chunk size lines as RFC 9112 allows them, made what the response parser accepts.

RFC 9112 section 7.1.1 allows whitespace around a chunk extension's `;` and `=` (`5 ;x`, `5; x`, `5 ; a = b`); llhttp
refuses it ("Invalid character in chunk size"), which turned a whole answer into `stream_broken`. Extensions carry
nothing a client uses, so a size line that holds a blank is handed on as its size alone, and so is one with blanks
after the size (which the grammar does not allow but parsers accept: llhttp's own lenient mode). Every other byte
passes as it came, for the parser to judge. The framing is followed chunk by chunk (one match per size line), never
byte by byte; a read that needs no change is passed on without a copy.
"""

from __future__ import annotations

import re

_PLAIN = re.compile(rb"([0-9A-Fa-f]+)(?:;[^ \t\r\n]*)?\r\n")  # a size line as llhttp takes it: passed as it is
_SPACED = re.compile(rb"([0-9A-Fa-f]+)[ \t]*(?:;[^\r\n]*)?\r\n")  # with blanks: passed as its size alone
MAX_SIZE_LINE = 4096  # a size line not ended within this is passed on as it is: the parser refuses it


class ChunkSizeLines:
    """Follows one chunked body's framing across reads and rewrites the size lines that hold blanks.

    `feed(data)` returns the bytes to parse: `data` itself when nothing changed, or a copy with rewritten size lines,
    without the start of a size line that has not ended yet (held for the next read: framing bytes only, so no body
    byte waits). After the last chunk (size 0), or a size line that is not one, everything passes unchanged."""

    __slots__ = ("done", "held", "left")

    def __init__(self) -> None:
        self.held = b""  # the start of a size line not yet ended
        self.left = 0  # bytes of chunk data and its CRLF still to pass before the next size line
        self.done = False

    def feed(self, data: bytes) -> bytes:
        """The hot path (one size line per event of a paced stream): one match, no copy."""
        if self.done or not data:
            return data
        if self.held:
            data, self.held = self.held + data, b""
        n = len(data)
        pos = self.left
        plain = _PLAIN.match
        while pos < n:
            m = plain(data, pos)
            if m is None:
                return self._rewrite(data, pos)
            size = int(m[1], 16)
            if not size:
                self.done = True  # the last chunk: trailers and whatever follows pass as they are
                return data
            pos = m.end() + size + 2
        self.left = pos - n
        return data

    def _rewrite(self, data: bytes, pos: int) -> bytes:
        """From `pos`, a size line that is not plain: with blanks (rewritten), not ended yet (held), or not a size
        line at all (passed on, and the framing no longer followed)."""
        pieces = [data[:pos]]
        n = len(data)
        while pos < n:
            m = _PLAIN.match(data, pos) or _SPACED.match(data, pos)
            if m is None:
                if data.find(b"\n", pos) < 0 and n - pos < MAX_SIZE_LINE:
                    self.held = data[pos:]  # the line ends in a later read
                else:
                    self.done = True  # not a size line: the parser says what is wrong with it
                    pieces.append(data[pos:])
                return b"".join(pieces)
            line_end = m.end()
            pieces.append(data[pos:line_end] if m.re is _PLAIN else m[1] + b"\r\n")
            size = int(m[1], 16)
            if not size:
                self.done = True
                pieces.append(data[line_end:])
                return b"".join(pieces)
            pos = line_end + size + 2
            pieces.append(data[line_end:pos])
        self.left = pos - n
        return b"".join(pieces)
