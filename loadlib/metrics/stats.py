"""LLM statistics per (scenario, endpoint): counts, errors by class, mergeable histograms, token and cost sums.

This is loadlib's own statistics collection (docs/influxdb.md): it sits beside Locust's request table rather than
firing fake requests into it. Each worker `serialize()`s it into its report (and `reset()`s, like Locust's stats),
the master `merge_serialized()`s every report, so percentiles are those of all samples.

What counts where:
- Distributions (every histogram: TTFB, first event, TTFT, TTFO, E2E, TPOT, stream TPOT and tail, ITL, decode speed,
  prompt and completion token counts) take successful attempts only. A failed attempt's timings describe the failure
  (a 429 answers in 2 ms, a timeout takes exactly the limit), so mixing them in would make latency look better or
  worse than service was; failures are counted by class instead. TTFB follows the same rule, so all timing rows
  describe one population.
- Counters and sums (requests, token totals, cost) take every attempt: a truncated or schema-invalid answer was still
  generated and billed. Token sums use the server's usage and fall back to our estimate per request. `priced` counts
  attempts with a cost; `unpriced` those with output tokens but no cost (the model is missing from the price table).
- Token-estimate deviation takes every attempt that has both usage and an estimate: (estimate - usage) / usage, and
  the ratio usage / estimate (signed, so a server that over-counts shows as a ratio above 1).
- `tpot_tokens` and `tpot_events` sum (output tokens - 1) and (output events - 1) over the attempts with a TPOT: their
  ratio is the tokens the usage counts per output event, which with the stream tail explains TPOT against stream TPOT.
- `cancelled` counts hedges' losers (docs/failover.md, "Hedging"): attempts, with their tokens and cost, but not
  errors (`failed` leaves them out, `errors` has no class for them) and, having no complete answer, no timings.
- `cut_off` counts attempts still running when the run ended (cut by it): attempts, with their tokens and cost so
  far, but not errors (the end of a run is not the server's doing: `failed` leaves them out, `errors` has no class
  for them) and, having no complete answer, no timings.
- `stale_connection_retries` counts attempts sent again on a new connection because the kept-alive one they went out
  on proved stale (closed or reset before any byte of a response: docs/metrics.md, "Stale keep-alive connections"):
  the client's pooling, not the endpoint's answer, so not errors; the attempt counts once, by how it ended.
- `good` counts successful attempts that met the run's per-request SLO (goodput; 0 when the run has none).
- `usage_rejected` counts attempts whose server usage held a count that was not sane (negative, fractional, absurdly
  large, not a number) or counts impossible together (cached above prompt...): those were replaced by our estimate.
- Open-loop latency from the intended send time (E2E or TTFT plus schedule lag) takes successful attempts with an
  intended send time; schedule lag itself takes every such attempt, since it is the client's lateness.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from loadlib.errors import ErrorClass
from loadlib.histogram import Histogram, record_many_into
from loadlib.records.build import DEVIATION_LIMIT_PCT, deviation_pct
from loadlib.records.record import TIMING_FIELDS, RequestRecord

HISTOGRAMS = (
    *TIMING_FIELDS,
    "itl_ms",
    "decode_tps",
    "prompt_tokens",
    "completion_tokens",
    "prompt_dev_pct",
    "completion_dev_pct",
    "prompt_usage_ratio",
    "completion_usage_ratio",
    "schedule_lag_ms",
    "e2e_from_intended_ms",
    "ttft_from_intended_ms",
)
COUNTERS = (
    "requests",
    "ok",
    "cancelled",
    "cut_off",
    "prompt_tokens_total",
    "completion_tokens_total",
    "cached_prompt_tokens_total",
    "cache_reported_prompt_tokens_total",
    "cache_write_tokens_total",
    "priced",
    "unpriced",
    "prompt_dev_over_10pct",
    "completion_dev_over_10pct",
    "usage_rejected",
    "good",
    "tpot_tokens",
    "tpot_events",
    "stale_connection_retries",
)
TOTAL_KEY = ("", "")
_FORMAT = 1


class LLMStatsEntry:
    """Statistics of one (scenario, endpoint) key, or of all keys (the total entry)."""

    __slots__ = (
        "cache_reported_prompt_tokens_total",
        "cache_write_tokens_total",
        "cached_prompt_tokens_total",
        "cancelled",
        "completion_dev_over_10pct",
        "completion_dev_pct",
        "completion_tokens",
        "completion_tokens_total",
        "completion_usage_ratio",
        "cost_usd",
        "cut_off",
        "decode_tps",
        "e2e_from_intended_ms",
        "e2e_ms",
        "endpoint",
        "errors",
        "first_event_ms",
        "first_start_unix_ns",
        "good",
        "itl_ms",
        "last_end_unix_ns",
        "ok",
        "priced",
        "prompt_dev_over_10pct",
        "prompt_dev_pct",
        "prompt_tokens",
        "prompt_tokens_total",
        "prompt_usage_ratio",
        "requests",
        "scenario",
        "schedule_lag_ms",
        "stale_connection_retries",
        "stream_tail_ms",
        "stream_tpot_ms",
        "tpot_events",
        "tpot_ms",
        "tpot_tokens",
        "ttfb_ms",
        "ttfo_ms",
        "ttft_from_intended_ms",
        "ttft_ms",
        "unpriced",
        "usage_rejected",
    )
    # every counter and histogram by name (COUNTERS, HISTOGRAMS), so a type checker sees what reset() sets
    requests: int
    ok: int
    cancelled: int
    cut_off: int
    prompt_tokens_total: int
    completion_tokens_total: int
    cached_prompt_tokens_total: int
    cache_reported_prompt_tokens_total: int  # whole prompts (cached included) of attempts that reported a cached count
    cache_write_tokens_total: int  # prompt tokens written to the cache (Anthropic's cache_creation_input_tokens)
    priced: int
    unpriced: int
    prompt_dev_over_10pct: int
    completion_dev_over_10pct: int
    usage_rejected: int
    good: int
    tpot_tokens: int
    tpot_events: int
    stale_connection_retries: int
    ttfb_ms: Histogram
    first_event_ms: Histogram
    ttft_ms: Histogram
    ttfo_ms: Histogram
    e2e_ms: Histogram
    tpot_ms: Histogram
    stream_tpot_ms: Histogram
    stream_tail_ms: Histogram
    itl_ms: Histogram
    decode_tps: Histogram
    prompt_tokens: Histogram
    completion_tokens: Histogram
    prompt_dev_pct: Histogram
    completion_dev_pct: Histogram
    prompt_usage_ratio: Histogram
    completion_usage_ratio: Histogram
    schedule_lag_ms: Histogram
    e2e_from_intended_ms: Histogram
    ttft_from_intended_ms: Histogram

    def __init__(self, scenario: str, endpoint: str) -> None:
        self.scenario = scenario
        self.endpoint = endpoint
        self.reset()

    def reset(self) -> None:
        for name in COUNTERS:
            setattr(self, name, 0)
        for name in HISTOGRAMS:
            setattr(self, name, Histogram())
        self.errors: dict[str, int] = {}
        self.cost_usd = 0.0
        self.first_start_unix_ns: int | None = None
        self.last_end_unix_ns: int | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.scenario, self.endpoint)

    @property
    def failed(self) -> int:
        """Attempts that went wrong: neither ok, nor a hedge's cancelled loser (its user got the winner's answer), nor
        cut off by the end of the run (not the server's doing)."""
        return self.requests - self.ok - self.cancelled - self.cut_off

    def histograms(self) -> Iterator[tuple[str, Histogram]]:
        for name in HISTOGRAMS:
            yield name, getattr(self, name)

    def add(self, r: RequestRecord, good: bool = False) -> None:
        """Account one attempt. Cheap per request; only the ITL list costs per token."""
        add_record((self,), r, good)

    def merge(self, other: LLMStatsEntry) -> None:
        for name in COUNTERS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in HISTOGRAMS:
            getattr(self, name).merge(getattr(other, name))
        errors = self.errors
        for cls, n in other.errors.items():
            errors[cls] = errors.get(cls, 0) + n
        self.cost_usd += other.cost_usd
        self.first_start_unix_ns = _min_opt(self.first_start_unix_ns, other.first_start_unix_ns)
        self.last_end_unix_ns = _max_opt(self.last_end_unix_ns, other.last_end_unix_ns)

    def to_dict(self) -> dict[str, Any]:
        """msgpack-safe: str keys, ints, floats, None, lists and nested dicts only."""
        d: dict[str, Any] = {"scenario": self.scenario, "endpoint": self.endpoint}
        for name in COUNTERS:
            d[name] = getattr(self, name)
        d["errors"] = dict(self.errors)
        d["cost_usd"] = self.cost_usd
        d["first_start_unix_ns"] = self.first_start_unix_ns
        d["last_end_unix_ns"] = self.last_end_unix_ns
        d["hist"] = {name: getattr(self, name).to_dict() for name in HISTOGRAMS if getattr(self, name).count}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LLMStatsEntry:
        e = cls(d["scenario"], d["endpoint"])
        for name in COUNTERS:
            setattr(e, name, int(d.get(name, 0)))
        e.errors = {str(k): int(v) for k, v in d.get("errors", {}).items()}
        e.cost_usd = float(d.get("cost_usd", 0.0))
        e.first_start_unix_ns = d.get("first_start_unix_ns")
        e.last_end_unix_ns = d.get("last_end_unix_ns")
        for name, hd in d.get("hist", {}).items():
            if name in HISTOGRAMS:
                setattr(e, name, Histogram.from_dict(hd))
        return e

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LLMStatsEntry) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LLMStatsEntry({self.scenario!r}, {self.endpoint!r}, requests={self.requests}, ok={self.ok})"


class LLMStats:
    """All keys plus a total merged at add time. One per worker (and one on the master, fed by merge_serialized)."""

    def __init__(self) -> None:
        self.entries: dict[tuple[str, str], LLMStatsEntry] = {}
        self.total = LLMStatsEntry(*TOTAL_KEY)

    def entry(self, scenario: str, endpoint: str) -> LLMStatsEntry:
        key = (scenario, endpoint)
        e = self.entries.get(key)
        if e is None:
            e = self.entries[key] = LLMStatsEntry(scenario, endpoint)
        return e

    def add(self, record: RequestRecord, good: bool = False) -> None:
        """`good`: the attempt met the run's per-request SLO (loadlib.verdicts.goodput), judged by the caller."""
        add_record((self.entry(record.scenario, record.endpoint), self.total), record, good)

    def serialize(self) -> dict[str, Any]:
        """The worker's report payload (msgpack-safe). Does not reset: the caller resets after shipping."""
        return {
            "v": _FORMAT,
            "entries": [e.to_dict() for e in self.entries.values()],
            "total": self.total.to_dict(),
        }

    def merge_serialized(self, data: dict[str, Any]) -> None:
        """Master side: add one worker's report."""
        if data.get("v") != _FORMAT:
            raise ValueError(f"unsupported LLM stats format {data.get('v')!r} (expected {_FORMAT})")
        for d in data["entries"]:
            self.entry(d["scenario"], d["endpoint"]).merge(LLMStatsEntry.from_dict(d))
        self.total.merge(LLMStatsEntry.from_dict(data["total"]))

    def reset(self) -> None:
        self.entries.clear()
        self.total.reset()


def add_record(entries: tuple[LLMStatsEntry, ...], r: RequestRecord, good: bool = False) -> None:
    """Account one attempt in several entries (its key and the total), deriving each value once."""
    ok = r.status is ErrorClass.OK
    devs = (
        deviation_pct(r.prompt_tokens, r.prompt_tokens_est),
        deviation_pct(r.completion_tokens, r.completion_tokens_est),
    )
    timings = _timings(r, ok, devs)
    start = r.start_unix_ns or None  # 0 means unknown
    end = None if start is None else start + (int(r.e2e_ms * 1e6) if r.e2e_ms is not None else 0)
    completion = r.output_tokens
    tpot_pair = (completion - 1, r.output_events - 1) if ok and r.tpot_ms is not None and completion else (0, 0)
    for e in entries:
        _count_outcome(e, r.status, good)
        for name, v in timings:
            getattr(e, name).record(v)
        _add_totals(e, r, devs, tpot_pair)
        if start is not None and end is not None:
            _widen_span(e, start, end)
    if ok:
        _add_itl(entries, r)


def _timings(r: RequestRecord, ok: bool, devs: tuple[float | None, float | None]) -> list[tuple[str, float]]:
    """The histogram values of one attempt: latencies and sizes of a successful one only; the schedule lag of any
    attempt but one the run's end cut off (it has no timings at all); the usage deviations of any."""
    cut = r.status is ErrorClass.CUT_OFF
    lag = r.schedule_lag_ms if r.intended_send_ms is not None and not cut else None
    timings = _success_timings(r, lag) if ok else []
    if lag is not None:
        timings.append(("schedule_lag_ms", lag))
    for name, dev in zip(("prompt", "completion"), devs, strict=True):
        if dev is not None:
            timings.append((f"{name}_dev_pct", abs(dev)))
            if dev > -100.0:  # an estimate of 0 has no ratio
                timings.append((f"{name}_usage_ratio", 100.0 / (100.0 + dev)))
    return timings


def _success_timings(r: RequestRecord, lag: float | None) -> list[tuple[str, float]]:
    timings = [(name, v) for name in TIMING_FIELDS if (v := getattr(r, name)) is not None]
    for name, v in (("decode_tps", r.decode_tokens_per_s), ("prompt_tokens", r.input_tokens)):
        if v is not None:
            timings.append((name, float(v)))
    if r.output_tokens is not None:
        timings.append(("completion_tokens", float(r.output_tokens)))
    if lag is not None:
        if r.e2e_ms is not None:
            timings.append(("e2e_from_intended_ms", r.e2e_ms + lag))
        if r.ttft_ms is not None:
            timings.append(("ttft_from_intended_ms", r.ttft_ms + lag))
    return timings


def _count_outcome(e: LLMStatsEntry, status: ErrorClass, good: bool) -> None:
    """One attempt by how it ended: ok, a hedge's loser, cut off by the run's end, or an error of its class."""
    e.requests += 1
    if status is ErrorClass.OK:
        e.ok += 1
        e.good += good
    elif status is ErrorClass.CANCELLED:
        e.cancelled += 1
    elif status is ErrorClass.CUT_OFF:
        e.cut_off += 1
    else:
        e.errors[status.value] = e.errors.get(status.value, 0) + 1


def _add_totals(
    e: LLMStatsEntry, r: RequestRecord, devs: tuple[float | None, float | None], tpot_pair: tuple[int, int]
) -> None:
    """Token and cost totals, usage counters and the TPOT pair of one attempt."""
    prompt, completion, cached, cost = r.input_tokens, r.output_tokens, r.cached_prompt_tokens, r.cost_usd
    if prompt is not None:
        e.prompt_tokens_total += prompt
    if completion is not None:
        e.completion_tokens_total += completion
    if cached is not None:
        e.cached_prompt_tokens_total += cached
        e.cache_reported_prompt_tokens_total += r.cache_reported_prompt_tokens or 0
    e.cache_write_tokens_total += r.cache_write_tokens or 0
    if cost is not None:
        e.cost_usd += cost
        e.priced += 1
    elif completion is not None:
        e.unpriced += 1
    e.prompt_dev_over_10pct += devs[0] is not None and abs(devs[0]) > DEVIATION_LIMIT_PCT
    e.completion_dev_over_10pct += devs[1] is not None and abs(devs[1]) > DEVIATION_LIMIT_PCT
    e.usage_rejected += r.usage_rejected is not None
    e.stale_connection_retries += r.stale_retry_ms is not None
    e.tpot_tokens += tpot_pair[0]
    e.tpot_events += tpot_pair[1]


def _widen_span(e: LLMStatsEntry, start: int, end: int) -> None:
    if e.first_start_unix_ns is None or start < e.first_start_unix_ns:
        e.first_start_unix_ns = start
    if e.last_end_unix_ns is None or end > e.last_end_unix_ns:
        e.last_end_unix_ns = end


def _add_itl(entries: tuple[LLMStatsEntry, ...], r: RequestRecord) -> None:
    """Every gap of a successful attempt: those the record lists, and those only its `itl_rest` histogram holds
    (a long stream's record lists the first 4,096: docs/metrics.md, "Memory"), so the ITL percentiles stay exact."""
    if r.itl_ms:
        record_many_into([e.itl_ms for e in entries], r.itl_ms)
    if r.itl_rest:
        rest = Histogram.from_dict(r.itl_rest)
        for e in entries:
            e.itl_ms.merge(rest)


def _min_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else min(a, b)


def _max_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else max(a, b)
