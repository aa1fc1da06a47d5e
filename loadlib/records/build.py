"""Turn a StreamOutcome into the immutable RequestRecord, with the timing maths it needs (pure: no I/O, no clocks)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from loadlib.errors import ErrorClass
from loadlib.providers.base import USAGE_ESTIMATED, Usage
from loadlib.records.pricing import PriceTable
from loadlib.records.record import RequestRecord
from loadlib.redact import Redactor
from loadlib.transport.outcome import StreamOutcome
from loadlib.transport.stream import MAX_ITL

MAX_TEXT = 200
DEVIATION_LIMIT_PCT = 10.0  # usage and estimate "disagree" beyond this (docs/metrics.md, "Token counts")
_NO_SECRETS = Redactor()


def build_record(
    outcome: StreamOutcome,
    *,
    run_id: str,
    scenario: str,
    endpoint: str,
    provider: str,
    model: str,
    worker_id: str,
    request_id: str,
    start_unix_ns: int,
    prices: PriceTable,
    prompt_tokens_est: int | None = None,
    completion_tokens_est: int | None = None,
    attempt: int = 1,
    user_request_id: str | None = None,
    hedge: bool = False,
    turn: int | None = None,
    intended_send_ms: float | None = None,
    schedule_lag_ms: float | None = None,
    redact: Redactor | None = None,
) -> RequestRecord:
    """The record of one attempt. Text the server sent (messages, finish reason, ids, header values) goes through
    `redact`; TPOT needs a successful attempt with at least two output-bearing events (a one-event reply has none)."""
    redact = redact or _NO_SECRETS
    result = outcome.result
    usage = result.usage if result else None
    prompt = usage.prompt_tokens if usage else None
    completion = usage.completion_tokens if usage else None
    cached = usage.cached_prompt_tokens if usage else None
    written = usage.cache_write_tokens if usage else None
    out_tokens = completion if completion is not None else completion_tokens_est
    in_tokens = prompt if prompt is not None else prompt_tokens_est
    cost = None
    if in_tokens is not None and out_tokens is not None:
        cost = prices.cost(model, in_tokens, out_tokens, cached, written)
    status = outcome.status
    return RequestRecord(
        run_id=run_id,
        scenario=scenario,
        endpoint=endpoint,
        provider=provider,
        model=model,
        worker_id=worker_id,
        request_id=request_id,
        server_request_id=_server_text(outcome.server_request_id or (result.response_id if result else None), redact),
        attempt=attempt,
        user_request_id=user_request_id,
        hedge=hedge,
        turn=turn,
        start_unix_ns=start_unix_ns,
        **_timing(outcome),
        **_per_token(outcome, out_tokens),
        intended_send_ms=intended_send_ms,
        schedule_lag_ms=schedule_lag_ms,
        prompt_tokens=prompt,
        completion_tokens=completion,
        prompt_tokens_est=prompt_tokens_est,
        completion_tokens_est=completion_tokens_est,
        cached_prompt_tokens=cached,
        cache_write_tokens=written,
        reasoning_tokens=usage.reasoning_tokens if usage else None,
        usage_rejected="; ".join(usage.rejected) if usage and usage.rejected else None,
        usage_source=usage_source(result.usage_source if result else None, usage, in_tokens, out_tokens),
        usage_disagrees=disagrees((prompt, prompt_tokens_est), (completion, completion_tokens_est)),
        cost_usd=cost,
        status=status,
        http_status=outcome.http_status,
        finish_reason=_server_text(result.finish_reason if result else None, redact),
        error_message=redact.optional(outcome.message),
        note=outcome.note,
        ratelimit=redact.mapping(outcome.headers),
        response_bytes=outcome.response_bytes,
        text_dropped=result.text_dropped if result else 0,
    )


def _timing(outcome: StreamOutcome) -> dict[str, Any]:
    """The attempt's clock readings and its ITL gaps (the first MAX_ITL listed, the rest as a histogram)."""
    rest = outcome.itl_rest
    return {
        "ttfb_ms": outcome.ttfb_ms,
        "first_event_ms": outcome.first_event_ms,
        "ttft_ms": outcome.ttft_ms,
        "ttfo_ms": outcome.ttfo_ms,
        "e2e_ms": outcome.e2e_ms,
        "itl_ms": gaps_ms(outcome.output_stamps_ms[: MAX_ITL + 1]),
        "itl_dropped": rest.count if rest is not None else 0,
        "itl_rest": rest.to_dict() if rest is not None else None,
        "output_events": output_events(outcome),
        "stale_retry_ms": outcome.stale_retry_ms,
    }


def output_events(outcome: StreamOutcome) -> int:
    """Output-bearing events: the stamps kept, plus one per gap only `itl_rest` holds (their stamps were dropped but
    the latest, which holds the slot after the first MAX_ITL + 1)."""
    rest = outcome.itl_rest
    return len(outcome.output_stamps_ms) + (rest.count - 1 if rest is not None else 0)


def _per_token(outcome: StreamOutcome, out_tokens: int | None) -> dict[str, Any]:
    """TPOT, stream TPOT and the stream tail: successful attempts only (a failure's timing describes the failure)."""
    stamps, ok, events = outcome.output_stamps_ms, outcome.status is ErrorClass.OK, output_events(outcome)
    return {
        "tpot_ms": tpot_ms(outcome.e2e_ms, outcome.ttft_ms, out_tokens) if ok and events > 1 else None,
        "stream_tpot_ms": stream_tpot_ms(stamps, events) if ok else None,
        "stream_tail_ms": stream_tail_ms(stamps, outcome.e2e_ms) if ok and outcome.streamed else None,
    }


def _server_text(text: str | None, redact: Redactor) -> str | None:
    """A short string the server chose (an id, a finish reason): clipped and with secrets masked."""
    return None if text is None else redact(text[:MAX_TEXT])


def tpot_ms(e2e_ms: float | None, ttft_ms: float | None, output_tokens: int | None) -> float | None:
    """(E2E - TTFT) / (output_tokens - 1), defined for output_tokens >= 2."""
    if e2e_ms is None or ttft_ms is None or output_tokens is None or output_tokens < 2:
        return None
    return (e2e_ms - ttft_ms) / (output_tokens - 1)


def stream_tpot_ms(stamps_ms: Sequence[float], events: int | None = None) -> float | None:
    """Decode time per token from the stream itself: (last - first output event) / (events - 1), for two or more.
    Unlike TPOT it holds neither the stream's tail nor the server's token count (docs/metrics.md, "Timing").
    `events` counts them when the stamps between were dropped (StreamOutcome.itl_rest); default: one per stamp."""
    n = len(stamps_ms) if events is None else events
    return (stamps_ms[-1] - stamps_ms[0]) / (n - 1) if n > 1 else None


def stream_tail_ms(stamps_ms: Sequence[float], e2e_ms: float | None) -> float | None:
    """From the last output event to the end of the stream (its terminal event): time no token arrived in."""
    return None if not stamps_ms or e2e_ms is None else max(0.0, e2e_ms - stamps_ms[-1])


def usage_source(source: str | None, usage: Usage | None, in_tokens: int | None, out_tokens: int | None) -> str | None:
    """Where the record's token counts came from: the server's usage (and where it sat), else our estimate."""
    if usage is not None and (usage.prompt_tokens is not None or usage.completion_tokens is not None):
        return source
    return USAGE_ESTIMATED if in_tokens is not None or out_tokens is not None else None


def deviation_pct(usage: int | None, estimate: int | None) -> float | None:
    """(estimate - usage) / usage in %, when the server reported a non-zero count and we have an estimate."""
    if usage is None or estimate is None or usage <= 0:
        return None
    return (estimate - usage) * 100.0 / usage


def counted_short(usage: int | None, estimate: int | None) -> bool | None:
    """Whether the server counted over DEVIATION_LIMIT_PCT fewer tokens than our estimate (`disagrees`, one way):
    a server billing what it kept of a prompt, where a count of the prompt as sent agrees. None: nothing compares."""
    dev = deviation_pct(usage, estimate)
    return None if dev is None else dev > DEVIATION_LIMIT_PCT


def disagrees(*pairs: tuple[int | None, int | None]) -> bool | None:
    """Whether any (server count, estimate) pair is off by over DEVIATION_LIMIT_PCT; None when none compares."""
    devs = [d for d in (deviation_pct(u, e) for u, e in pairs) if d is not None]
    return any(abs(d) > DEVIATION_LIMIT_PCT for d in devs) if devs else None


def gaps_ms(stamps_ms: Sequence[float]) -> tuple[float, ...]:
    """Inter-token latencies: the gaps between consecutive output-bearing events."""
    return tuple(b - a for a, b in itertools.pairwise(stamps_ms))
