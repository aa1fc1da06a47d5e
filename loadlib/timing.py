"""Pure timing maths on one request's event stamps (DESIGN.md section 2)."""

from __future__ import annotations

import itertools


def tpot_ms(e2e_ms: float | None, ttft_ms: float | None, output_tokens: int | None) -> float | None:
    """(E2E - TTFT) / (output_tokens - 1), defined for output_tokens >= 2."""
    if e2e_ms is None or ttft_ms is None or output_tokens is None or output_tokens < 2:
        return None
    return (e2e_ms - ttft_ms) / (output_tokens - 1)


def gaps_ms(stamps_ms: list[float]) -> tuple[float, ...]:
    """Inter-token latencies: the gaps between consecutive output-bearing events."""
    return tuple(b - a for a, b in itertools.pairwise(stamps_ms))
