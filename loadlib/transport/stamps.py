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
from contextlib import suppress
from typing import Any

_epoll: Any = get_original("select", "epoll") if hasattr(select, "epoll") or sys.platform.startswith("linux") else None
_start_thread = get_original("_thread", "start_new_thread")
SO_TIMESTAMPNS: int | None = getattr(socket, "SO_TIMESTAMPNS", 35 if sys.platform.startswith("linux") else None)
ANCILLARY_SIZE = socket.CMSG_SPACE(16)
_TIMESPEC = struct.Struct("qq")
_PEEK = socket.MSG_PEEK | socket.MSG_DONTWAIT
_ARMED = getattr(select, "EPOLLIN", 1) | getattr(select, "EPOLLONESHOT", 1 << 30)
SWITCH_INTERVAL_S = 0.001


class ArmedRead:
    """One armed read: the socket's fd at arming time and the stamp the thread took (wall clock, seconds), if any."""

    __slots__ = ("fd", "stamp")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.stamp: float | None = None


class FirstByteStamper:
    """Sockets armed by readers, each with the `ArmedRead` the thread fills in."""

    def __init__(self) -> None:
        self._armed: dict[int, tuple[Any, ArmedRead]] = {}
        self._epoll: Any = None

    def arm(self, raw_sock: Any) -> ArmedRead | None:
        """Watch a socket (a real, non-blocking `_socket.socket` with SO_TIMESTAMPNS on) until `disarm`."""
        if _epoll is None or SO_TIMESTAMPNS is None:  # not Linux: readers keep their own read stamps
            return None
        try:
            if self._epoll is None:
                self._start()
            arrival = ArmedRead(raw_sock.fileno())
            self._armed[arrival.fd] = (raw_sock, arrival)
            try:
                self._epoll.register(arrival.fd, _ARMED)
            except FileExistsError:  # left registered by a reader that never disarmed (its socket was closed)
                self._epoll.modify(arrival.fd, _ARMED)
        except (OSError, ValueError, RuntimeError):
            return None
        return arrival

    def disarm(self, arrival: ArmedRead) -> float | None:
        """Stop watching; the stamp the thread took meanwhile (wall clock, seconds), if it took one."""
        entry = self._armed.get(arrival.fd)
        if entry is not None and entry[1] is arrival:
            del self._armed[arrival.fd]
        with suppress(OSError, ValueError):  # closed meanwhile: the kernel already dropped it
            self._epoll.unregister(arrival.fd)
        return arrival.stamp

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
                raw_sock, arrival = entry
                try:
                    _, ancillary, _, _ = raw_sock.recvmsg(1, ANCILLARY_SIZE, _PEEK)
                except OSError:
                    continue
                arrival.stamp = kernel_stamp(ancillary)


def kernel_stamp(ancillary: list[tuple[int, int, bytes]]) -> float | None:
    """The SO_TIMESTAMPNS receive stamp in recvmsg's ancillary data (wall clock, seconds), if there is one."""
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(payload) >= 16:
            sec, nsec = _TIMESPEC.unpack_from(payload)
            return sec + nsec * 1e-9
    return None


STAMPER = FirstByteStamper()
