"""TPOT against the stream's own decode time: why they differ (docs/metrics.md, "TPOT and stream TPOT").

TPOT = (E2E - TTFT) / (tokens - 1) takes the server's token count and everything after the last token; stream TPOT
= (last - first output event) / (events - 1) takes neither. Per request, with r = (tokens - 1) / (events - 1):
TPOT = stream TPOT / r + tail / (tokens - 1). So a gap between them is the stream's tail (a gateway holding the end
of the stream), a token count that is not one per event (usage that over- or under-counts, or events of several
tokens), or both. Pure functions of a summary row.
"""

from __future__ import annotations

from typing import Any

GAP_SHARE = 0.10  # TPOT and stream TPOT p50 further apart than this share of stream TPOT get a line
CAUSE_SHARE = 0.05  # a cause is named when it moves TPOT by at least this share of stream TPOT


def decode_facts(tpot_tokens: int, tpot_events: int, tpot_count: int, tail_mean_ms: float | None) -> dict[str, Any]:
    """A row's `decode` figures: tokens the usage counts per output event, and the tail spread over those tokens."""
    tokens_per_event = tpot_tokens / tpot_events if tpot_events else None
    mean_tokens = tpot_tokens / tpot_count if tpot_count else None
    per_token = tail_mean_ms / mean_tokens if tail_mean_ms is not None and mean_tokens else None
    return {
        "tokens_per_event": None if tokens_per_event is None else round(tokens_per_event, 4),
        "tail_per_token_ms": None if per_token is None else round(per_token, 3),
    }


def tpot_gap_line(row: dict[str, Any]) -> str | None:
    """One line when a row's TPOT p50 and stream TPOT p50 (the table's figures) differ by over GAP_SHARE, naming the
    causes. The causes are per-token means (a mean tail over mean tokens), and medians do not add up while means
    do, so they are set against the gap between the means, never the gap between the p50s: one held stream moves
    the mean tail, not the p50s, and would otherwise explain more gap than the p50s show."""
    lat = row.get("latency_ms") or {}
    tpot = (lat.get("tpot") or {}).get("p50")
    stream = (lat.get("stream_tpot") or {}).get("p50")
    if tpot is None or not stream or abs(tpot - stream) <= GAP_SHARE * stream:
        return None
    gap = (tpot - stream) / stream * 100
    head = (
        f"TPOT vs stream, {row.get('name', '-')}: TPOT p50 {tpot:.1f} ms is {abs(gap):.0f} % "
        f"{'above' if gap > 0 else 'below'} the stream's {stream:.1f} ms per output event"
    )
    means = _means(lat)
    causes = _causes(row, means[1] if means else stream)
    if not causes:
        return f"{head} (cause not visible in the stream)"
    return f"{head}; {_mean_gap_text(means)}{'; '.join(causes)}"


def _means(lat: dict[str, Any]) -> tuple[float, float] | None:
    """(TPOT mean, stream TPOT mean), the like-for-like pair the causes explain; None when either is missing."""
    tpot, stream = (lat.get("tpot") or {}).get("mean"), (lat.get("stream_tpot") or {}).get("mean")
    return (tpot, stream) if tpot is not None and stream else None


def _mean_gap_text(means: tuple[float, float] | None) -> str:
    if means is None:
        return "causes: "
    tpot, stream = means
    return f"the means are {tpot:.1f} and {stream:.1f} ms ({tpot - stream:+.1f} ms per token): "


def _causes(row: dict[str, Any], stream_mean: float) -> list[str]:
    """Each cause with what it adds to mean TPOT, named when that is at least CAUSE_SHARE of mean stream TPOT.
    Per request TPOT = stream TPOT / r + tail / (tokens - 1), so the tail adds its mean per token and a usage
    counting r tokens per event adds stream TPOT x (1 / r - 1)."""
    facts = row.get("decode") or {}
    out = []
    per_token = facts.get("tail_per_token_ms")
    if per_token is not None and per_token >= CAUSE_SHARE * stream_mean:
        tail = (row.get("latency_ms") or {}).get("stream_tail") or {}
        out.append(f"the stream's tail ({_tail_text(tail)} from the last token to the end) adds {per_token:+.1f} ms")
    ratio = facts.get("tokens_per_event")
    if ratio and abs(ratio - 1.0) >= CAUSE_SHARE:
        why = "events that carry several tokens, or usage that over-counts" if ratio > 1 else "usage that under-counts"
        out.append(
            f"the usage counts {ratio:.2f} tokens per output event ({why}): {stream_mean * (1 / ratio - 1):+.1f} ms"
        )
    return out


def _tail_text(tail: dict[str, Any]) -> str:
    mean, p50 = tail.get("mean"), tail.get("p50")
    parts = [f"mean {mean:.1f} ms" if mean is not None else "", f"p50 {p50:.1f} ms" if p50 is not None else ""]
    return ", ".join(p for p in parts if p) or "its mean"
