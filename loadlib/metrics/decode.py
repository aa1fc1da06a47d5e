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
    """One line when a row's TPOT p50 and stream TPOT p50 differ by over GAP_SHARE, naming the causes."""
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
    causes = _causes(row, stream)
    return f"{head}: {'; '.join(causes)}" if causes else f"{head} (cause not visible in the stream)"


def _causes(row: dict[str, Any], stream: float) -> list[str]:
    facts = row.get("decode") or {}
    out = []
    per_token = facts.get("tail_per_token_ms")
    if per_token is not None and per_token >= CAUSE_SHARE * stream:
        tail = ((row.get("latency_ms") or {}).get("stream_tail") or {}).get("p50")
        tail_text = f"p50 {tail:.1f} ms" if tail is not None else "its mean"
        out.append(
            f"the stream's tail ({tail_text} from the last token to the end of the stream) adds "
            f"{per_token:.1f} ms per token"
        )
    ratio = facts.get("tokens_per_event")
    if ratio is not None and abs(ratio - 1.0) >= CAUSE_SHARE:
        out.append(
            f"the usage counts {ratio:.2f} tokens per output event "
            + (
                "(events that carry several tokens, or usage that over-counts)"
                if ratio > 1
                else "(usage that under-counts)"
            )
        )
    return out
