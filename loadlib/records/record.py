"""RequestRecord: the one immutable record of a request attempt (docs/records.md).

Every number the suite reports is derived from these records, so the fields follow the design's definitions exactly.
All durations are milliseconds from the same `time.perf_counter()` clock, measured from t0 (just before the request
is handed to the HTTP client).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loadlib.errors import ErrorClass

# The per-request durations of a record, in ms (the statistics' timing histograms and InfluxDB's timing fields).
TIMING_FIELDS = (
    "ttfb_ms",
    "first_event_ms",
    "ttft_ms",
    "ttfo_ms",
    "e2e_ms",
    "tpot_ms",
    "stream_tpot_ms",
    "stream_tail_ms",
)


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request attempt as measured: identity (run, scenario, endpoint, turn...), timing in ms from t0 (TTFT,
    TPOT, E2E...), tokens, cost and the outcome (`status`, an ErrorClass; `ok` when it succeeded). Every field is
    defined in docs/records.md; `--llm-records FILE` writes one JSON line per record."""

    # identity
    run_id: str
    scenario: str
    endpoint: str
    provider: str
    model: str
    worker_id: str
    request_id: str
    server_request_id: str | None = None
    attempt: int = 1  # its number within the user-visible request (1 = first)
    user_request_id: str | None = None  # the user-visible request it belongs to (its first attempt's request_id)
    hedge: bool = False  # sent as a hedge beside a slow attempt
    turn: int | None = None
    # timing (ms from t0)
    start_unix_ns: int = 0
    ttfb_ms: float | None = None
    first_event_ms: float | None = None
    ttft_ms: float | None = None
    ttfo_ms: float | None = None
    e2e_ms: float | None = None
    itl_ms: tuple[float, ...] = ()  # the first 4,096 gaps (transport.stream.MAX_ITL)
    itl_dropped: int = 0  # gaps after those, not listed: in `itl_rest` (docs/metrics.md, "Memory")
    itl_rest: dict[str, Any] | None = None  # those gaps as a histogram (loadlib.histogram.Histogram.to_dict)
    tpot_ms: float | None = None
    stream_tpot_ms: float | None = None  # (last output event - first) / (output events - 1): usage plays no part
    stream_tail_ms: float | None = None  # last output event to the end of the stream (its terminal event)
    output_events: int = 0
    intended_send_ms: float | None = None
    schedule_lag_ms: float | None = None
    stale_retry_ms: float | None = None  # sent again on a new connection at this time from t0: the reused one was stale
    # tokens
    prompt_tokens: int | None = None  # the whole prompt, cache reads and writes included, whatever the provider
    completion_tokens: int | None = None
    prompt_tokens_est: int | None = None
    completion_tokens_est: int | None = None
    cached_prompt_tokens: int | None = None  # the part of the prompt read from the cache
    cache_write_tokens: int | None = None  # the part written to it (Anthropic's cache_creation_input_tokens)
    reasoning_tokens: int | None = None
    usage_rejected: str | None = None  # usage counts the server sent that were not sane counts (estimates used)
    usage_source: str | None = None  # stream, final_chunk, stream_start, body or estimated (providers.base)
    usage_disagrees: bool | None = None  # a server count off our estimate by over 10 %; None: nothing to compare
    # money
    cost_usd: float | None = None
    # outcome
    status: ErrorClass = ErrorClass.OK
    http_status: int | None = None
    finish_reason: str | None = None
    error_message: str | None = None
    note: str | None = None  # framing trouble that did not spoil the answer (stray bytes, a body without length)
    ratelimit: dict[str, str] = field(default_factory=dict)
    response_bytes: int = 0
    text_dropped: int = 0  # output characters past --llm-max-text-kb: counted, not kept (providers.kept)

    @property
    def ok(self) -> bool:
        """The attempt succeeded: status `ok` (a scenario check may have made a success a failure)."""
        return self.status is ErrorClass.OK

    @property
    def output_tokens(self) -> int | None:
        """Completion tokens, the server's count preferred, our estimate as fallback."""
        return self.completion_tokens if self.completion_tokens is not None else self.completion_tokens_est

    @property
    def input_tokens(self) -> int | None:
        """Prompt tokens (the whole prompt), the server's count preferred, our estimate as fallback."""
        return self.prompt_tokens if self.prompt_tokens is not None else self.prompt_tokens_est

    @property
    def cache_reported_prompt_tokens(self) -> int | None:
        """The whole prompt when the usage reported a cached count: the prompt-cache hit rate's denominator
        (docs/metrics.md, "Prompt-cache hit rate"); None otherwise."""
        return self.input_tokens if self.cached_prompt_tokens is not None else None

    @property
    def decode_tokens_per_s(self) -> float | None:
        """output_tokens / (E2E - TTFT), docs/metrics.md, "Timing"."""
        n = self.output_tokens
        if n is None or self.e2e_ms is None or self.ttft_ms is None or self.e2e_ms <= self.ttft_ms:
            return None
        return n / ((self.e2e_ms - self.ttft_ms) / 1000.0)
