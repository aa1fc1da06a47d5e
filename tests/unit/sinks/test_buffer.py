"""DropOldestBuffer: bounded, oldest dropped first, every drop counted exactly."""

from __future__ import annotations

import random
from collections import deque

import pytest

from loadlib.sinks.buffer import DropOldestBuffer


def test_append_within_bound_keeps_everything_in_order() -> None:
    buf: DropOldestBuffer[int] = DropOldestBuffer(5)
    for i in range(5):
        buf.append(i)
    assert len(buf) == 5 and buf.dropped == 0
    assert buf.take(10) == [0, 1, 2, 3, 4]
    assert not buf


def test_overflow_drops_the_oldest_and_counts_each() -> None:
    buf: DropOldestBuffer[int] = DropOldestBuffer(3)
    for i in range(10):
        buf.append(i)
    assert buf.dropped == 7
    assert buf.take(3) == [7, 8, 9]


def test_take_returns_oldest_first_in_batches() -> None:
    buf: DropOldestBuffer[int] = DropOldestBuffer(100)
    for i in range(7):
        buf.append(i)
    assert buf.take(3) == [0, 1, 2]
    assert buf.take(3) == [3, 4, 5]
    assert buf.take(3) == [6]
    assert buf.take(3) == []


def test_requeue_puts_a_failed_batch_back_in_front() -> None:
    buf: DropOldestBuffer[int] = DropOldestBuffer(10)
    for i in range(6):
        buf.append(i)
    batch = buf.take(4)
    buf.append(6)
    buf.requeue(batch)
    assert buf.dropped == 0
    assert buf.take(10) == [0, 1, 2, 3, 4, 5, 6]


def test_requeue_beyond_the_bound_drops_the_oldest_of_the_batch() -> None:
    buf: DropOldestBuffer[int] = DropOldestBuffer(4)
    for i in range(4):
        buf.append(i)
    batch = buf.take(3)  # [0, 1, 2] in flight
    for i in range(4, 7):  # buffer refills to 4 while the write is in flight
        buf.append(i)
    assert len(buf) == 4 and buf.dropped == 0
    buf.requeue(batch)
    assert buf.dropped == 3
    assert buf.take(10) == [3, 4, 5, 6]


def test_clear_reports_what_it_removed_without_counting_drops() -> None:
    buf: DropOldestBuffer[int] = DropOldestBuffer(4)
    for i in range(3):
        buf.append(i)
    assert buf.clear() == 3
    assert buf.dropped == 0 and len(buf) == 0


def test_invalid_bound() -> None:
    with pytest.raises(ValueError):
        DropOldestBuffer(0)


def test_random_operations_match_a_reference_model_and_conserve_items() -> None:
    """Whatever the interleaving, appended == delivered + dropped + still buffered, and the survivors are the
    newest items in order."""
    rng = random.Random(1234)
    for maxlen in (1, 2, 7, 50):
        buf: DropOldestBuffer[int] = DropOldestBuffer(maxlen)
        model: deque[int] = deque()
        model_dropped = 0
        appended = delivered = 0
        inflight: list[int] = []
        for step in range(3000):
            op = rng.random()
            if op < 0.6:
                buf.append(step)
                model.append(step)
                appended += 1
                if len(model) > maxlen:
                    model.popleft()
                    model_dropped += 1
            elif op < 0.8 and not inflight:
                n = rng.randint(1, 5)
                inflight = buf.take(n)
                expected = [model.popleft() for _ in range(min(n, len(model)))]
                assert inflight == expected
            elif inflight and op < 0.9:
                delivered += len(inflight)
                inflight = []
            elif inflight:
                buf.requeue(inflight)
                model.extendleft(reversed(inflight))
                while len(model) > maxlen:
                    model.popleft()
                    model_dropped += 1
                inflight = []
            assert list(buf._items) == list(model)
            assert buf.dropped == model_dropped
            assert appended == delivered + buf.dropped + len(buf) + len(inflight)
