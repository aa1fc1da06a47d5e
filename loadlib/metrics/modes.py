"""Is a latency distribution multimodal? A gap test on the merged histogram (docs/metrics.md, "Multimodal latency").

Why: behind a gateway that retries upstream failures at fixed backoffs, or in front of a prompt cache, a latency
distribution is two or more separate humps, and its p95 describes neither. The test: walk the occupied buckets in
ascending order and cut wherever the next occupied value is more than GAP_RATIO times the previous one (nothing in
between: an empty stretch of at least 50 % of the value); each resulting cluster holding at least MIN_MODE_SHARE of
the samples is a mode. Two or more modes: multimodal. Simple on purpose: a jittered single hump has no empty
stretch that wide inside it, and a few outliers beyond one are too small a share to count.
"""

from __future__ import annotations

from typing import Any

from loadlib.histogram import Histogram

GAP_RATIO = 1.5
MIN_MODE_SHARE = 0.05
MIN_SAMPLES = 100


def latency_modes(h: Histogram) -> list[dict[str, Any]]:
    """The modes of a multimodal distribution (position = the cluster's median, share of all samples), or []."""
    if h.count < MIN_SAMPLES:
        return []
    clusters: list[list[tuple[float, int]]] = [[]]
    previous = None
    for value, n in h.occupied():
        if previous is not None and previous > 0 and value > previous * GAP_RATIO:
            clusters.append([])
        clusters[-1].append((value, n))
        previous = value
    modes = [_mode(c, h.count) for c in clusters]
    modes = [m for m in modes if m["share"] >= MIN_MODE_SHARE]
    return modes if len(modes) > 1 else []


def _mode(cluster: list[tuple[float, int]], total: int) -> dict[str, Any]:
    size = sum(n for _, n in cluster)
    seen, middle = 0, cluster[0][0]
    for value, n in cluster:
        seen += n
        if seen * 2 >= size:
            middle = value
            break
    return {"at_ms": round(middle, 3), "share": round(size / total, 4), "count": size}


def modes_line(name: str, metric: str, modes: list[dict[str, Any]]) -> str:
    """One console line for a multimodal metric of one row."""
    parts = ", ".join(f"{m['at_ms']:,.0f} ms ({m['share'] * 100:.0f} %)" for m in modes)
    return (
        f"multimodal {metric.upper()}, {name}: modes at {parts}: its percentiles describe none of them "
        "(retries behind a gateway, a cache, two backends?)"
    )
