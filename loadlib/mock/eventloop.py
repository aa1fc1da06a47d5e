"""An asyncio loop whose timers fire within tens of microseconds, not up to a millisecond late.

epoll_wait takes whole milliseconds and Python rounds the wait up, so a plain loop runs `call_at` callbacks
0-1 ms late. The mock's timing error must stay well under that, so finite waits go through select() on the epoll
fd itself (microsecond timeout, one fd), then collect the ready events with a zero-timeout epoll poll.
"""

from __future__ import annotations

import asyncio
import select
import selectors
from typing import Any

_SELECT_FD_LIMIT = 1024
# gevent's monkey-patching removes EpollSelector; such a process only launches the mock, it never runs it.
_EpollBase: Any = getattr(selectors, "EpollSelector", selectors.DefaultSelector)


class PreciseEpollSelector(_EpollBase):
    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is not None and timeout > 0:
            fd = self._selector.fileno()
            if fd < _SELECT_FD_LIMIT:
                try:
                    ready, _, _ = select.select([fd], [], [], timeout)
                except InterruptedError:
                    return []
                if not ready:
                    return []
                timeout = 0
        return super().select(timeout)


def new_event_loop(use_uvloop: bool = False) -> asyncio.AbstractEventLoop:
    """A precise-timer selector loop; uvloop (millisecond timers, faster I/O) only when asked and installed."""
    if use_uvloop:
        try:
            import uvloop
        except ImportError:
            pass
        else:
            loop: Any = uvloop.new_event_loop()
            return loop
    if hasattr(selectors, "EpollSelector") and _EpollBase is selectors.EpollSelector:
        return asyncio.SelectorEventLoop(PreciseEpollSelector())
    return asyncio.new_event_loop()
