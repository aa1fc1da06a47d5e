"""Why TPOT and stream TPOT differ: the decomposition's figures and the summary line (loadlib/metrics/decode.py)."""

from __future__ import annotations

from typing import Any

import pytest

from loadlib.metrics.decode import decode_facts, tpot_gap_line


def row(tpot: float, stream: float, tail: float, tokens_per_event: float, tail_per_token: float) -> dict[str, Any]:
    """A row whose means equal its p50s (the causes are set against the means)."""
    lat = {
        "tpot": {"p50": tpot, "mean": tpot},
        "stream_tpot": {"p50": stream, "mean": stream},
        "stream_tail": {"p50": tail, "mean": tail},
    }
    return {
        "name": "chat @ gw",
        "latency_ms": lat,
        "decode": {"tokens_per_event": tokens_per_event, "tail_per_token_ms": tail_per_token},
    }


def test_facts_from_sums() -> None:
    # 10 requests of 64 tokens in 64 events, tail 130 ms each: 130 / 63 ms per token
    facts = decode_facts(tpot_tokens=630, tpot_events=630, tpot_count=10, tail_mean_ms=130.0)
    assert facts == {"tokens_per_event": 1.0, "tail_per_token_ms": pytest.approx(130 / 63, abs=1e-3)}
    assert decode_facts(0, 0, 0, None) == {"tokens_per_event": None, "tail_per_token_ms": None}


def test_a_gateway_tail_is_named() -> None:
    line = tpot_gap_line(row(12.1, 10.0, 130.0, 1.0, 2.06))
    assert line is not None and line.startswith("TPOT vs stream, chat @ gw: TPOT p50 12.1 ms is 21 % above")
    assert "the means are 12.1 and 10.0 ms (+2.1 ms per token)" in line
    assert "the stream's tail (mean 130.0 ms, p50 130.0 ms" in line and "adds +2.1 ms" in line
    assert "tokens per output event" not in line


def test_over_counted_usage_is_named() -> None:
    line = tpot_gap_line(row(6.7, 10.0, 0.3, 1.5, 0.005))
    assert line is not None and "33 % below" in line and "1.50 tokens per output event" in line
    assert "-3.3 ms" in line, "stream TPOT x (1 / 1.5 - 1): what the count takes off mean TPOT"
    assert "tail" not in line.split(":", 2)[2]


def test_without_means_the_causes_are_set_against_the_p50() -> None:
    """An older summary without means still gets its causes, without a mean gap."""
    r = row(12.1, 10.0, 130.0, 1.0, 2.06)
    for d in r["latency_ms"].values():
        del d["mean"]
    line = tpot_gap_line(r)
    assert line is not None and "causes: the stream's tail (p50 130.0 ms" in line and "means" not in line


def test_no_line_within_ten_percent_or_without_data() -> None:
    assert tpot_gap_line(row(10.9, 10.0, 9.0, 1.0, 0.1)) is None
    assert tpot_gap_line({"latency_ms": {"tpot": {"p50": 5.0}}}) is None
    assert tpot_gap_line({}) is None


def test_a_gap_without_a_visible_cause_says_so() -> None:
    line = tpot_gap_line(row(13.0, 10.0, 0.0, 1.0, 0.0))
    assert line is not None and line.endswith("(cause not visible in the stream)")
