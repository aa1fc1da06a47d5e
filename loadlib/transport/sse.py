"""Incremental Server-Sent Events decoder on bytes, framing exactly as the WHATWG EventSource algorithm says.

It runs once per network read of every live stream, so it stays on bytes (no decoding to str), splits whole chunks
with `bytes.split`, keeps per-line work to a couple of byte comparisons, and takes a shortcut for the usual read of
exactly one `data:` event. Each event carries the stamp of the read in which its first field line began, so parsing
never leaks into a latency (docs/metrics.md, "Timing").

Whatever a server sends, decoding stays linear in the bytes received and bounded in memory: an unterminated line is
kept as a list of pieces (joined once, when its end arrives, not on every read) and both the pending line and the
pending event have a cap; crossing one raises `OversizedError`.
"""

from __future__ import annotations

from loadlib.errors import OversizedError

_BOM = b"\xef\xbb\xbf"
_COLON = 58  # b":"[0]: a line starting with it is a comment
_CR = 13
_LF = 10
MAX_LINE_BYTES = 4 << 20
MAX_EVENT_BYTES = 8 << 20


class SSEDecoder:
    """Feed raw body chunks; get back the events they complete as `(stamp, event_type, data)`.

    Spec points: lines end in CRLF, LF or CR (a CR ending one chunk and an LF starting the next are one line end);
    `field:value` loses exactly one leading space; `data` lines join with LF; a blank line dispatches only when at
    least one `data` line was seen; `id`, `retry` and unknown fields are ignored; a UTF-8 BOM opening the stream is
    dropped; an unterminated event at end of stream is never dispatched (see `pending`).

    Caps: a line longer than `max_line` or an event whose data lines add up to more than `max_event` raises
    `OversizedError` (checked once per fed chunk, so the cap may be overshot by at most one chunk).
    """

    __slots__ = (
        "_bom",
        "_bom_stamp",
        "_buf",
        "_cr",
        "_data",
        "_data_len",
        "_event",
        "_held",
        "_held_len",
        "_idle",
        "_stamp",
        "comment_lines",
        "max_event",
        "max_line",
    )

    def __init__(self, max_line: int = MAX_LINE_BYTES, max_event: int = MAX_EVENT_BYTES) -> None:
        self.max_line = max_line
        self.max_event = max_event
        self._buf = b""  # the start of an unterminated line; never holds a line ending
        self._held: list[bytes] = []  # later pieces of that line, joined only when its end arrives
        self._held_len = 0
        self._data_len = 0  # bytes of the pending event's data lines
        self._cr = False  # the last chunk ended in CR, so an LF opening the next one is that line's end
        self._bom: bytes | None = b""  # stream-opening bytes held until the BOM is ruled in or out; None once done
        self._bom_stamp = 0.0
        self._data: list[bytes] = []
        self._event = b""
        self._stamp: float | None = None  # stamp of the current event's first field line, once it is buffered
        self._idle = False  # nothing buffered, no CR to pair, BOM settled: a lone `data: ...` chunk may skip framing
        self.comment_lines = 0

    @property
    def pending(self) -> bool:
        """True while bytes of an unfinished event are buffered: at end of body this means the stream was cut."""
        return bool(self._buf or self._data or self._bom) or self._stamp is not None

    @property
    def held_bytes(self) -> int:
        """Bytes of the unterminated line kept so far."""
        return len(self._buf) + self._held_len

    def feed(self, chunk: bytes, stamp: float) -> list[tuple[float, bytes, bytes]]:
        """Returns the events completed by this chunk as (stamp, event_type, data).

        `stamp` of an event is the stamp passed with the chunk in which the event's first byte arrived (an event
        split across chunks keeps its first stamp). event_type is b"" when no `event:` field was given. Comments
        (lines starting with b":") are ignored."""
        if self._idle and chunk.startswith(b"data: ") and chunk.endswith(b"\n\n"):  # no slices: nothing allocated
            # The usual read: exactly one single-line event, no CR. Framing it line by line gives the same result.
            data = chunk[6:-2]
            if 10 not in data and 13 not in data:
                return [(stamp, b"", data)]
        return self._feed(chunk, stamp)

    def _feed(self, chunk: bytes, stamp: float) -> list[tuple[float, bytes, bytes]]:
        if self._bom is not None:
            chunk = self._skip_bom(chunk, stamp)
        if self._cr and chunk:
            self._cr = False
            if chunk[0] == 10:
                chunk = chunk[1:]
        if _CR in chunk:  # an int operand makes `in` a memchr; b"\r" would take the slow substring path
            self._cr = chunk[-1] == _CR
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if self._buf:
            if _LF not in chunk:  # the line goes on: keep the piece, join once when the line ends (linear cost)
                self._hold(chunk)
                return []
            chunk = b"".join((self._buf, *self._held, chunk))
            self._held = []
            self._held_len = 0
        lines = chunk.split(b"\n")
        tail = lines.pop()
        out: list[tuple[float, bytes, bytes]] = []
        data = self._data
        event = self._event
        ev_stamp = self._stamp
        for line in lines:
            if not line:
                if data:
                    # A complete line seen in this call began in this chunk unless it was the buffered tail, and
                    # a buffered tail already set ev_stamp: so an unset ev_stamp means "this chunk".
                    out.append((stamp if ev_stamp is None else ev_stamp, event, b"\n".join(data)))
                    data = []
                    self._data_len = 0
                event = b""
                ev_stamp = None
            elif line[:6] == b"data: ":
                data.append(line[6:])
                self._data_len += len(line) - 5
            elif line[0] == _COLON:
                self.comment_lines += 1
            else:
                if ev_stamp is None:
                    ev_stamp = stamp
                name, _, value = line.partition(b":")
                if value[:1] == b" ":
                    value = value[1:]
                if name == b"data":
                    data.append(value)
                    self._data_len += len(value) + 1
                elif name == b"event":
                    event = value
        if ev_stamp is None and (data or (tail and tail[0] != _COLON)):
            ev_stamp = stamp
        self._buf = tail
        self._data = data
        self._event = event
        self._stamp = ev_stamp
        self._idle = ev_stamp is None and not (tail or data or event or self._cr) and self._bom is None
        if len(tail) > self.max_line:
            raise OversizedError("line", self.max_line)
        if self._data_len > self.max_event:
            raise OversizedError("event", self.max_event)
        return out

    def _hold(self, piece: bytes) -> None:
        self._held.append(piece)
        self._held_len += len(piece)
        if self.held_bytes > self.max_line:
            raise OversizedError("line", self.max_line)

    def _skip_bom(self, chunk: bytes, stamp: float) -> bytes:
        """Drop a BOM opening the stream, even when it arrives one byte per chunk."""
        held = self._bom or b""
        head = held + chunk
        if len(head) < 3 and _BOM.startswith(head):
            if not held:
                self._bom_stamp = stamp
            self._bom = head
            return b""
        self._bom = None
        if head.startswith(_BOM):
            return head[3:]
        if held:
            self._stamp = self._bom_stamp  # the held bytes open a (malformed) field line of the first event
        return head
