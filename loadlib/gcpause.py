"""Pausing Python's cyclic garbage collector around work that makes no reference cycles but keeps many objects alive
(a file's parsed rows, a simulation's sequences): the collector would scan them again and again, for nothing."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """The collector off for the block, back on after it if it was on (a nested pause leaves it to the outer)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
