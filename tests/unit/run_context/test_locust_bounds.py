"""Locust's own run-long state on a master, bounded: its per-second counts keep the last KEEP_S seconds (what its
current RPS reads stays exact) and its chart history at most MAX_HISTORY points, evenly spaced over the whole run."""

from __future__ import annotations

from locust.stats import RequestStats

import time
from itertools import pairwise
from types import SimpleNamespace

from loadlib.locust.locust_bounds import KEEP_S, MAX_HISTORY, HistoryThinner, LocustBoundsPart, trim_seconds


def test_old_seconds_go_and_the_current_rate_is_unchanged() -> None:
    stats = RequestStats()
    now = int(time.time())
    entry = stats.get("chat", "POST")
    for t in range(now - 3600, now + 1):  # an hour of t % 7 requests a second, a failure every tenth second
        entry.num_reqs_per_sec[t] = t % 7
        if t % 10 == 0:
            entry.num_fail_per_sec[t] = 1
    stats.total.start_time, stats.total.last_request_timestamp = now - 3600, now
    rates = entry.current_rps, entry.current_fail_per_sec
    dropped = trim_seconds(entry, now - KEEP_S)
    assert min(entry.num_reqs_per_sec) == now - KEEP_S and len(entry.num_reqs_per_sec) == KEEP_S + 1
    assert min(entry.num_fail_per_sec) >= now - KEEP_S and dropped == 3600 - KEEP_S + sum(
        1 for t in range(now - 3600, now - KEEP_S) if t % 10 == 0
    )
    assert (entry.current_rps, entry.current_fail_per_sec) == rates and rates[0] > 0


def test_the_history_stays_bounded_and_evenly_spaced_over_the_whole_run() -> None:
    thinner, history = HistoryThinner(limit=100), []
    for i in range(1000):  # Locust appends one point per 5 s; the part thins every other append or so
        history.append(i)
        if i % 3 == 0:
            thinner.thin(history)
        assert len(history) <= 102, "at most the appends between two thinnings past the limit"
    thinner.thin(history)
    assert len(history) <= 100
    assert history[0] == 0, "the run's start stays"
    gaps = {b - a for a, b in pairwise(history)}
    assert gaps == {thinner.stride} == {16}, "evenly spaced, the interval doubled each time the list filled"
    assert history[-1] > 1000 - 16


def test_a_reset_history_starts_again() -> None:
    thinner, old = HistoryThinner(limit=10), list(range(50))
    thinner.thin(old)
    assert thinner.stride == 8
    new = [0, 1, 2]
    thinner.thin(new)  # Locust's reset_all() gives its stats a new list
    assert new == [0, 1, 2] and thinner.stride == 1


def test_the_part_trims_a_master_runners_stats() -> None:
    stats = RequestStats()
    stats.history.extend(range(MAX_HISTORY + 1))
    stats.total.num_reqs_per_sec.update({0: 1, int(time.time()): 2})
    ctx = SimpleNamespace(environment=SimpleNamespace(runner=SimpleNamespace(stats=stats)))
    LocustBoundsPart(ctx).trim()
    assert len(stats.history) <= MAX_HISTORY and dict(stats.total.num_reqs_per_sec) == {int(time.time()): 2}
