"""The arrival thread keeps a packet's own kernel stamp when the reader comes late and TCP has merged later
packets into it (the merged buffer carries the newest packet's stamp)."""

from __future__ import annotations

from gevent.monkey import get_original

import socket
import struct
import sys
import time

import pytest

from loadlib.transport.stamps import FirstByteStamper

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kernel receive stamps are Linux-only")

_socket = get_original("socket", "socket")
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def _pair() -> tuple[socket.socket, socket.socket]:
    listener = _socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = _socket()
    client.connect(listener.getsockname())
    server, _ = listener.accept()
    listener.close()
    client.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    client.setblocking(False)
    return server, client


def _busy(seconds: float) -> None:
    """CPU-bound Python, as a busy worker runs: the GIL is only given up at the interpreter's switch interval."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _stamp(ancillary: list) -> float:
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack_from("qq", payload)
            return sec + nsec * 1e-9
    raise AssertionError("no kernel stamp")


def test_first_packet_keeps_its_stamp_when_the_reader_is_late() -> None:
    server, client = _pair()
    stamper = FirstByteStamper()
    try:
        arrival = stamper.arm(client)
        assert arrival is not None
        sent_first = time.time()
        server.send(b"a" * 100)
        _busy(0.02)
        sent_second = time.time()
        server.send(b"b" * 100)
        _busy(0.02)
        early = stamper.disarm(arrival)
        data, ancillary, _, _ = client.recvmsg(4096, socket.CMSG_SPACE(16))
        merged = _stamp(ancillary)
    finally:
        server.close()
        client.close()
    assert data == b"a" * 100 + b"b" * 100
    assert merged >= sent_second, "the kernel merged both packets under the newest stamp (what the thread is for)"
    assert early is not None
    assert sent_first <= early < sent_first + 0.005, (early - sent_first, merged - sent_first)


def test_nothing_arrived_gives_no_stamp_and_a_socket_can_be_armed_again() -> None:
    server, client = _pair()
    stamper = FirstByteStamper()
    try:
        arrival = stamper.arm(client)
        time.sleep(0.01)
        assert stamper.disarm(arrival) is None
        arrival = stamper.arm(client)
        sent = time.time()
        server.send(b"x")
        deadline = time.perf_counter() + 1.0
        while arrival.stamp is None and time.perf_counter() < deadline:
            time.sleep(0.001)
        stamp = stamper.disarm(arrival)
    finally:
        server.close()
        client.close()
    assert stamp is not None and sent <= stamp < sent + 0.005


def test_a_socket_closed_while_armed_is_forgotten() -> None:
    server, client = _pair()
    stamper = FirstByteStamper()
    arrival = stamper.arm(client)
    assert arrival is not None
    client.close()
    server.close()
    assert stamper.disarm(arrival) is None  # no error: the kernel dropped the closed fd from the epoll set
    assert stamper._armed == {}
