"""The keep-alive check that decides whether a pooled socket is reused: right also past FD_SETSIZE (1024)."""

from __future__ import annotations

import os
import resource
import socket
from collections.abc import Iterator

import pytest

from loadlib.transport.connection import _idle_socket_alive

HIGH_FD = 1500  # above select()'s FD_SETSIZE: a worker holding more than about 1,000 streams has such sockets


@pytest.fixture
def high_pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A connected pair whose first socket has a descriptor above 1023 (as Locust's raised file limit allows)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= HIGH_FD:
        pytest.skip(f"the hard file limit ({hard}) does not allow descriptor {HIGH_FD}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, HIGH_FD + 1), hard))
    a, b = socket.socketpair()
    os.dup2(a.fileno(), HIGH_FD)
    a.close()
    high = socket.socket(fileno=HIGH_FD)
    try:
        yield high, b
    finally:
        high.close()
        b.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_an_idle_socket_above_fd_setsize_is_alive(high_pair: tuple[socket.socket, socket.socket]) -> None:
    """select() raised ValueError on it, which read as dead: every request of such a worker reconnected."""
    assert _idle_socket_alive(high_pair[0])


def test_stray_bytes_or_a_fin_make_it_dead(high_pair: tuple[socket.socket, socket.socket]) -> None:
    high, peer = high_pair
    peer.sendall(b"x")
    assert not _idle_socket_alive(high)
    high.recv(1)
    assert _idle_socket_alive(high)
    peer.shutdown(socket.SHUT_WR)
    assert not _idle_socket_alive(high)


def test_a_closed_socket_is_dead() -> None:
    a, b = socket.socketpair()
    a.close()
    b.close()
    assert not _idle_socket_alive(a)
