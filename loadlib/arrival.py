"""First-byte arrival stamps taken by an OS thread, so that a busy event loop cannot blur a stream's first token.

The kernel stamps each packet as it arrives (SO_TIMESTAMPNS), but TCP merges a packet into the unread one before it
and the merged buffer keeps the newer stamp. When a worker's loop runs 20 ms late, the first token is read together
with the tokens after it and carries the last one's stamp: TTFT errors cluster at whole multiples of the
inter-token gap (measured: +10, +20, +30 ms at 200 streams on one core). Here a thread blocked in epoll wakes when an
armed socket turns readable and peeks (MSG_PEEK, nothing consumed) at its first unread byte to take the kernel's stamp
before the next packet can merge into it. The thread needs the GIL only for a few microseconds per armed read, and
the switch interval is lowered so that it gets it within about a millisecond.

Every stamp handed back is an upper bound of the first unread byte's arrival at the time of `arm`: a peek that lands
after the reader's own read sees later bytes, whose arrival is later still, so callers take the minimum with their
own read's stamp.
"""

from __future__ import annotations

from gevent.monkey import get_original

import select
import socket
import struct
import sys
from typing import Any

_epoll = get_original("select", "epoll")
_start_thread = get_original("_thread", "start_new_thread")
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_ANCILLARY = socket.CMSG_SPACE(16)
_TIMESPEC = struct.Struct("qq")
_PEEK = socket.MSG_PEEK | socket.MSG_DONTWAIT
_ARMED = select.EPOLLIN | select.EPOLLONESHOT
SWITCH_INTERVAL_S = 0.001


class ArrivalStamper:
    """Sockets armed by readers, each with a one-element slot the thread fills with a wall-clock stamp."""

    def __init__(self) -> None:
        self._armed: dict[int, tuple[Any, list[float | None]]] = {}
        self._epoll: Any = None

    def arm(self, raw_sock: Any) -> list[float | None] | None:
        """Watch a socket (a real, non-blocking `_socket.socket` with SO_TIMESTAMPNS on) until `disarm`."""
        try:
            if self._epoll is None:
                self._start()
            fd = raw_sock.fileno()
            slot: list[float | None] = [None]
            self._armed[fd] = (raw_sock, slot)
            try:
                self._epoll.register(fd, _ARMED)
            except FileExistsError:  # left registered by a reader that never disarmed (its socket was closed)
                self._epoll.modify(fd, _ARMED)
        except (OSError, ValueError, RuntimeError):
            return None
        return slot

    def disarm(self, raw_sock: Any, slot: list[float | None]) -> float | None:
        """Stop watching; the stamp the thread took meanwhile (wall clock, seconds), if it took one."""
        try:
            fd = raw_sock.fileno()
            if self._armed.get(fd, (None, None))[1] is slot:
                del self._armed[fd]
            self._epoll.unregister(fd)
        except (OSError, ValueError, KeyError):
            pass
        return slot[0]

    def _start(self) -> None:
        self._epoll = _epoll()
        if sys.getswitchinterval() > SWITCH_INTERVAL_S:
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        _start_thread(self._run, ())

    def _run(self) -> None:
        poll, armed = self._epoll.poll, self._armed
        while True:
            for fd, _ in poll(1.0):
                entry = armed.get(fd)
                if entry is None:
                    continue
                raw_sock, slot = entry
                try:
                    _, ancillary, _, _ = raw_sock.recvmsg(1, _ANCILLARY, _PEEK)
                except OSError:
                    continue
                for level, kind, payload in ancillary:
                    if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(payload) >= 16:
                        sec, nsec = _TIMESPEC.unpack_from(payload)
                        slot[0] = sec + nsec * 1e-9


STAMPER = ArrivalStamper()
