"""The run summary's contract as types: what `build_summary` makes, what the node parts add, what the outputs read.

The JSON schema (schemas/summary-v1.schema.json) says the same to readers of the file; these say it to the code, so
mypy finds a part writing a key nobody declared or an output reading one that is not there. A test keeps the key
sets equal to the schema's. No `from __future__ import annotations` here: `Required` must be evaluated for
`__required_keys__`, which that test reads.
"""

from typing import Any, Required, TypedDict


class Distribution(TypedDict, total=False):
    """A histogram's figures in a row: count and mean, and the percentiles asked for (ms unless the key says)."""

    count: int
    mean: float | None
    p10: float | None
    p50: float | None
    p90: float | None
    p95: float | None
    p99: float | None
    p50_ci: list[float | None] | None
    p95_ci: list[float | None] | None
    p99_ci: list[float | None] | None
    max: float | None


class Row(TypedDict, total=False):
    """One (scenario, endpoint) row, or the total (docs/outputs.md; metrics.summary._row makes it)."""

    name: Required[str]
    scenario: Required[str]
    endpoint: Required[str]
    count: Required[int]
    ok: Required[int]
    cancelled: int
    cut_off: int
    errors_total: Required[int]
    error_rate: Required[float | None]
    errors: Required[dict[str, int]]
    latency_ms: Required[dict[str, Distribution]]
    decode: dict[str, Any]
    requests_per_s: Required[float | None]
    ok_per_s: Required[float | None]
    output_tokens_per_s: Required[float | None]
    decode_tokens_per_s: Required[Distribution]
    prompt_tokens: Required[int]
    completion_tokens: Required[int]
    cached_prompt_tokens: Required[int]
    cache_reported_prompt_tokens: int
    cache_hit_rate: float | None
    cache_write_tokens: int
    cost_usd: Required[float | None]
    cost_per_1k_requests: Required[float | None]
    unpriced_requests: Required[int]
    usage_rejected: Required[int]
    stale_connection_retries: int
    token_estimate: Required[dict[str, dict[str, Any]]]
    open_loop: Required[dict[str, Any] | None]
    first_start_unix_ns: Required[int | None]
    last_end_unix_ns: Required[int | None]
    good_requests: int | None
    goodput: float | None
    modes: dict[str, Any]
    histograms: dict[str, dict[str, Any]]


class ThresholdResult(TypedDict, total=False):
    """One threshold judged (loadlib.verdicts.evaluate): `passed` None when it could not be judged."""

    expression: Required[str]
    metric: Required[str]
    aggregate: Required[str | None]
    tags: Required[dict[str, str]]
    op: Required[str]
    limit: Required[float]
    unit: Required[str | None]
    value: Required[float | None]
    passed: Required[bool | None]
    samples: Required[int]
    reason: Required[str]
    origin: str
    interval: list[float | None] | None
    more_requests: int | None


class Outcome(TypedDict):
    """The run's verdict: its status, the exit code it sets, and why (loadlib.verdicts.verdict)."""

    status: str
    exit_code: int
    reasons: list[str]


class Summary(TypedDict, total=False):
    """The whole summary; the keys after `client` are added by the node parts that own them."""

    meta: Required[dict[str, Any]]
    duration_s: Required[float]
    rows: Required[list[Row]]
    total: Required[Row]
    client_saturated: Required[bool | None]
    client: Required[dict[str, Any] | None]
    confidence: dict[str, Any]
    request_slo: str | None
    clients: dict[str, Any]
    lockstep: dict[str, Any] | None
    sink: dict[str, Any] | None
    scenarios: dict[str, Any] | None
    failover: dict[str, Any] | None
    thresholds: list[ThresholdResult]
    verdict: Outcome
    aborted: Any
    interrupted: bool
    fatal: str | None
    not_started: str | None
    integrity: dict[str, Any] | None
    capacity: dict[str, Any] | None
    server_metrics: dict[str, Any] | None
    warmup: dict[str, Any] | None
