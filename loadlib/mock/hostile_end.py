"""Hostile behaviours about the end of a run: a stream that is still running when `-t` or a signal ends the test.

Registered in loadlib.mock.hostile's `--list` by an import at the end of that module. A client must count such an
attempt (as `cut_off`, with what arrived), not lose it, and must still end on time.
"""

from __future__ import annotations

import itertools
import time

from loadlib.mock.hostile import CHUNKED, SSE, Exchange, behaviour, chunk, delta, event, head

NEVER_FINISHES_PAUSE_S = 0.2  # well inside any idle timeout: the stream is slow, not stalled


@behaviour("never-finishes", "200 SSE, chunked: one content event every 200 ms, forever (no usage, no [DONE])")
def never_finishes(x: Exchange) -> bool:
    """A stream that is alive (an event every NEVER_FINISHES_PAUSE_S) but never ends: only the client's total
    timeout or the end of its run stops it; it ends when the client hangs up (the write fails)."""
    x.peer.send(head("200 OK", SSE, CHUNKED))
    for i in itertools.count():
        x.peer.send(chunk(event(delta(f"n{i} ", id=f"never-{x.n}"))))
        time.sleep(NEVER_FINISHES_PAUSE_S)
    return False
