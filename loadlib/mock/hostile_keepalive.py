"""A hostile behaviour about keep-alive: a connection left idle too long is forgotten without a word, and the client
learns it only when it sends its next request on it.

Registered in loadlib.mock.hostile's `--list` by an import at the end of that module. This is what a NAT, a firewall or
a load balancer with an idle timeout does (it drops the flow's state; the next packet gets a reset), and what a server
does whose keep-alive timer fires just as a request arrives (its FIN crosses the request). Either way nothing reaches
the client while the connection is idle, so no check before reuse can see it: the request fails before any byte of a
response. A client must not count that as the endpoint's error (it never answered): it sends the request again, once,
on a new connection, and says so (docs/metrics.md, "Stale keep-alive connections").
"""

from __future__ import annotations

import socket
import struct
import time

from loadlib.mock.hostile import DONE, Exchange, Peer, behaviour, delta, event, send_stream, usage

IDLE_LIMIT_S = 0.1  # a connection idle longer than this is forgotten (locustfiles/chat.py thinks 0.05 to 0.2 s)
RESET = "idle-drop-rst"  # the fault counts GET /hostile/stats reports under `injected`
FIN = "idle-drop-fin"


def idle_s(peer: Peer) -> float:
    """How long the connection has been idle: from the end of its last answer to now (a request just read)."""
    return 0.0 if peer.idle_since is None else time.monotonic() - peer.idle_since


def reset(peer: Peer) -> None:
    """Close with an RST instead of a FIN (SO_LINGER 0), as a middlebox that no longer knows the flow answers."""
    peer.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    peer.rfile.close()
    peer.sock.close()  # the last reference: the descriptor closes now, and the reset goes out


@behaviour(
    "idle-drop",
    f"a good stream, but a request on a connection idle over {IDLE_LIMIT_S:g} s is read and dropped without a byte: "
    "RST on even connections (a NAT/load balancer's idle timeout), FIN on odd ones (a server closing as it arrives)",
)
def idle_drop(x: Exchange) -> bool:
    """The first request of a connection, or one that comes soon enough after the last answer, gets a short good
    stream (keep-alive); a later one is dropped, and counted as injected under its kind."""
    if x.peer.answered and idle_s(x.peer) > IDLE_LIMIT_S:
        if x.peer.number % 2 == 0:
            x.tally(RESET)
            reset(x.peer)
        else:
            x.tally(FIN)
        return False
    rid = f"idle-{x.n}"
    events = [event(delta(f"k{i} ", id=rid)) for i in range(5)]
    return send_stream(x, [*events, event(usage(id=rid)), DONE], 0.01, f"x-request-id: {rid}")
