"""A bounded FIFO that drops its oldest items when full and counts every drop exactly.

While InfluxDB is down the newest points are the most useful ones (they show the run as it is now), and memory must
stay bounded on a worker that may run for hours, so the oldest points go first and the count says how many.
Appending is O(1) and never blocks. Not thread-safe: it is shared by greenlets of one gevent hub, which never switch
inside these methods.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class DropOldestBuffer(Generic[T]):
    """Holds at most `maxlen` items; `dropped` counts every item pushed out to make room."""

    __slots__ = ("_items", "dropped", "maxlen")

    def __init__(self, maxlen: int) -> None:
        if maxlen < 1:
            raise ValueError("maxlen must be >= 1")
        self.maxlen = maxlen
        self.dropped = 0
        self._items: deque[T] = deque()

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def append(self, item: T) -> None:
        """Add the newest item, dropping (and counting) the oldest one if the buffer is full."""
        items = self._items
        if len(items) >= self.maxlen:
            items.popleft()
            self.dropped += 1
        items.append(item)

    def take(self, n: int) -> list[T]:
        """Remove and return up to `n` of the oldest items, oldest first."""
        items = self._items
        k = min(n, len(items))
        return [items.popleft() for _ in range(k)]

    def requeue(self, batch: Iterable[T]) -> None:
        """Put a batch that could not be delivered back in front (it is older than anything buffered since), then
        drop the oldest items beyond the bound, counting them."""
        items = self._items
        items.extendleft(reversed(list(batch)))
        excess = len(items) - self.maxlen
        for _ in range(max(excess, 0)):
            items.popleft()
        self.dropped += max(excess, 0)

    def clear(self) -> int:
        """Empty the buffer; returns how many items were removed (not counted as dropped: the caller decides)."""
        n = len(self._items)
        self._items.clear()
        return n
