"""The drill ledger's traffic bins (docs/failover.md, "Drill figures"): attempts and failed attempts per endpoint in
bins of `step` seconds from the run start, bounded for a long run.

A worker ships its bins with every report and starts again, so it never holds many; the master (or a local run)
keeps them for the whole run: a bin a second per endpoint, for as long as it lasts. Once an endpoint has MAX_BINS
bins the step doubles and neighbouring bins merge, as the web UI's charts do (loadlib.metrics.timeline): counts add
exactly, and a bin still belongs to the window that holds its midpoint, so a drill's traffic share is exact for the
first two hours at 1 s, then placed within a bin's width.
"""

from __future__ import annotations

Bins = dict[int, list[int]]  # bin start (seconds from the run start, a multiple of the step) -> [attempts, failed]
MAX_BINS = 7_200  # per endpoint: two hours of 1-s bins before the first doubling


def count(traffic: dict[str, Bins], endpoint: str, second: int, attempts: int, failed: int, step: int) -> None:
    """Add attempts ending in `second` (from the run start) to the bin of `endpoint` that holds it."""
    bins = traffic.get(endpoint)
    if bins is None:
        bins = traffic[endpoint] = {}
    key = second // step * step
    b = bins.get(key)
    if b is None:
        b = bins[key] = [0, 0]
    b[0] += attempts
    b[1] += failed


def bounded(traffic: dict[str, Bins], step: int) -> int:
    """The step once every endpoint holds at most MAX_BINS bins (doubled, its bins merged, as often as needed)."""
    while any(len(bins) > MAX_BINS for bins in traffic.values()):
        step *= 2
        for endpoint, bins in list(traffic.items()):
            merged: dict[str, Bins] = {}
            for second, (n, f) in bins.items():
                count(merged, endpoint, second, n, f, step)
            traffic[endpoint] = merged.get(endpoint, {})
    return step
