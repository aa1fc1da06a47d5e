"""What an inference server says about itself on its Prometheus endpoint (`--llm-server-metrics`), read with
prometheus_client's text parser: its queue depth, running requests, KV-cache use and its own TTFT histogram, under
the names vLLM, SGLang, TGI and LiteLLM give them (docs/capacity.md, "Server-side metrics").

Pure: text in, a `ServerSample` out; two samples' TTFT histograms give the TTFT of the requests that got their first
token between them (their difference), as mean and percentiles interpolated within the buckets (Prometheus's
`histogram_quantile`).

Only the lines of the families read here reach the parser (`kept`), by measurement: the scrape runs on the load
generator's event loop, and a server's body is mostly other families (a real vLLM's, tests/fixtures/metrics: 54 KB,
629 lines, every histogram with its `_created`, the process's and the API server's `http_*`). Parsing all of it took
9-15 ms on one core, a stall of the loop that reads the streams; the line filter takes 0.15 ms and keeps 32 lines,
which parse in 0.5 ms, whatever the body's size. In a thread (gevent's threadpool) the whole parse still stalled the
loop 5-8 ms at a time, as the GIL changes hands every 5 ms; a separate process would spare the loop the last
0.7 ms a scrape, at the price of a process and a pipe for the run."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

# quantity -> the names each server gives it (the family name prometheus_client reports: no _bucket/_total suffix).
# vLLM V1 says kv_cache_usage_perc, V0 gpu_cache_usage_perc; both (and SGLang's token_usage) are fractions 0..1.
NAMES: dict[str, dict[str, tuple[str, ...]]] = {
    "vllm": {
        "waiting": ("vllm:num_requests_waiting",),
        "running": ("vllm:num_requests_running",),
        "kv_cache": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
        "ttft": ("vllm:time_to_first_token_seconds",),
    },
    "sglang": {
        "waiting": ("sglang:num_queue_reqs",),
        "running": ("sglang:num_running_reqs",),
        "kv_cache": ("sglang:token_usage",),
        "ttft": ("sglang:time_to_first_token_seconds",),
    },
    "tgi": {
        "waiting": ("tgi_queue_size",),
        "running": ("tgi_batch_current_size",),
        "kv_cache": (),
        "ttft": (),
    },
    "litellm": {
        "waiting": (),
        "running": (),
        "kv_cache": (),
        "ttft": ("litellm_llm_api_time_to_first_token_metric",),
    },
}
QUANTITIES = ("waiting", "running", "kv_cache")
_READ = tuple(sorted({n for names in NAMES.values() for ns in names.values() for n in ns}))
_PREFIXES = _READ + tuple(f"# TYPE {n} " for n in _READ)  # a cheap first test of every line
_SAMPLE_NAMES = frozenset(n + suffix for n in _READ for suffix in ("", "_bucket", "_sum", "_count", "_total"))


@dataclass(frozen=True)
class TTFTHistogram:
    """A cumulative histogram in seconds: upper bounds (the last +Inf) with the count at or below each, and the
    sum; summed over every label set (each model, each rank)."""

    bounds: tuple[float, ...] = ()
    counts: tuple[float, ...] = ()
    total_s: float = 0.0

    @property
    def count(self) -> float:
        return self.counts[-1] if self.counts else 0.0

    def minus(self, earlier: TTFTHistogram) -> TTFTHistogram:
        """The requests observed since `earlier` (a server restart, whose counters fall, gives what is now)."""
        if earlier.bounds != self.bounds or earlier.count > self.count:
            return self
        counts = tuple(a - b for a, b in zip(self.counts, earlier.counts, strict=True))
        return TTFTHistogram(self.bounds, counts, self.total_s - earlier.total_s)


@dataclass(frozen=True)
class ServerSample:
    """One scrape: which server's names it matched (`source`), the gauges summed over label sets (None: the server
    has no such metric), and its TTFT histogram (None: none)."""

    source: str | None
    waiting: float | None = None
    running: float | None = None
    kv_cache: float | None = None
    ttft: TTFTHistogram | None = None


def kept(text: str) -> str:
    """The lines of `text` that `parse` reads: the samples of the known names (a histogram's _bucket, _sum and
    _count, a counter's _total) and their TYPE lines (which group a histogram's samples). The rest (HELP lines, other
    families, names that merely begin with a known one, _created) is never parsed."""
    return "\n".join(line for line in text.splitlines() if line.startswith(_PREFIXES) and _read(line)) + "\n"


def _read(line: str) -> bool:
    if line.startswith("#"):
        return True  # "# TYPE name " with the space: the name itself
    return line.partition("{")[0].partition(" ")[0] in _SAMPLE_NAMES


def parse(text: str) -> ServerSample:
    """The sample of one scrape, from its kept lines only; a body with none of the known names gives source None.
    Raises ValueError when those lines are not Prometheus's format."""
    return sample_of(text_string_to_metric_families(kept(text)))


def sample_of(parsed: Iterable[Any]) -> ServerSample:
    """The sample of parsed metric families (prometheus_client's), whatever else they hold."""
    families = {f.name: f for f in parsed}
    source = next((s for s, names in NAMES.items() if any(n in families for ns in names.values() for n in ns)), None)
    if source is None:
        return ServerSample(None)
    names = NAMES[source]
    gauges = {q: _gauge(families, names[q]) for q in QUANTITIES}
    hist = next((_histogram(families[n].samples) for n in names["ttft"] if n in families), None)
    return ServerSample(source, gauges["waiting"], gauges["running"], gauges["kv_cache"], hist)


def _gauge(families: Mapping[str, Any], names: Sequence[str]) -> float | None:
    """The first of `names` the server has, summed over its label sets (a kv-cache fraction is averaged: each
    label set is one engine's share)."""
    for name in names:
        if name in families:
            values = [s.value for s in families[name].samples if s.name == name]
            if not values:
                return None
            total = float(sum(values))
            return total / len(values) if "cache" in name or "usage" in name else total
    return None


def _histogram(samples: Iterable[Any]) -> TTFTHistogram:
    by_bound: dict[float, float] = {}
    total = 0.0
    for s in samples:
        if s.name.endswith("_bucket"):
            bound = float(s.labels["le"])
            by_bound[bound] = by_bound.get(bound, 0.0) + float(s.value)
        elif s.name.endswith("_sum"):
            total += float(s.value)
    bounds = tuple(sorted(by_bound))
    return TTFTHistogram(bounds, tuple(by_bound[b] for b in bounds), total)


def quantile(hist: TTFTHistogram, q: float) -> float | None:
    """The q-quantile (0..1) in seconds, linear within its bucket as Prometheus's histogram_quantile: None without
    observations; in the +Inf bucket, the highest finite bound."""
    n = hist.count
    if n <= 0:
        return None
    rank = q * n
    below, lower = 0.0, 0.0
    for bound, cumulative in zip(hist.bounds, hist.counts, strict=True):
        if cumulative >= rank:
            if math.isinf(bound):
                return lower
            inside = cumulative - below
            return lower + (bound - lower) * ((rank - below) / inside if inside > 0 else 1.0)
        below, lower = cumulative, bound
    return lower


def ttft_figures(hist: TTFTHistogram | None) -> dict[str, float | None]:
    """Mean, p50 and p95 in ms of the requests a (differenced) histogram holds, and their count."""
    if hist is None or hist.count <= 0:
        return {"count": 0 if hist is not None else None, "mean_ms": None, "p50_ms": None, "p95_ms": None}
    p50, p95 = quantile(hist, 0.5), quantile(hist, 0.95)
    return {
        "count": int(hist.count),
        "mean_ms": hist.total_s / hist.count * 1000.0,
        "p50_ms": None if p50 is None else p50 * 1000.0,
        "p95_ms": None if p95 is None else p95 * 1000.0,
    }


def window(samples: Sequence[tuple[float, ServerSample]], start: float, end: float) -> dict[str, Any]:
    """The scrapes taken in [start, end) (unix seconds): each gauge's mean and maximum over them, and the server's
    TTFT of the requests whose first token came between the last scrape before the window and its last scrape."""
    inside = [s for t, s in samples if start <= t < end]
    before = [s for t, s in samples if t < start]
    return {**gauges(inside), "ttft": ttft_between(before[-1] if before else None, inside)}


def whole(samples: Sequence[tuple[float, ServerSample]]) -> dict[str, Any]:
    """Every scrape of the run: the gauges over all of them, the TTFT between the first and the last."""
    run = RunFigures()
    for _, sample in samples:
        run.add(sample)
    return run.figures()


@dataclass
class RunFigures:
    """`whole` kept as the scrapes come, in constant memory: a run's scrapes need not all be kept for it."""

    scrapes: int = 0
    sums: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    maxes: dict[str, float] = field(default_factory=dict)
    first: ServerSample | None = None
    last: ServerSample | None = None  # the latest after the first with a TTFT histogram

    def add(self, sample: ServerSample) -> None:
        self.scrapes += 1
        for q in QUANTITIES:
            v = getattr(sample, q)
            if v is not None:
                self.sums[q] = self.sums.get(q, 0.0) + v
                self.counts[q] = self.counts.get(q, 0) + 1
                self.maxes[q] = max(self.maxes.get(q, v), v)
        if self.first is None:
            self.first = sample
        elif sample.ttft is not None:
            self.last = sample

    def figures(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scrapes": self.scrapes}
        for q in QUANTITIES:
            n = self.counts.get(q, 0)
            out[q] = {"mean": self.sums[q] / n, "max": self.maxes[q]} if n else None
        return {**out, "ttft": ttft_between(self.first, [self.last] if self.last is not None else [])}


def gauges(scraped: Sequence[ServerSample]) -> dict[str, Any]:
    out: dict[str, Any] = {"scrapes": len(scraped)}
    for q in QUANTITIES:
        values = [v for v in (getattr(s, q) for s in scraped) if v is not None]
        out[q] = {"mean": sum(values) / len(values), "max": max(values)} if values else None
    return out


def ttft_between(before: ServerSample | None, inside: Sequence[ServerSample]) -> dict[str, Any]:
    """The server's TTFT figures of the requests counted after `before` up to the last of `inside` (None figures
    when either has no histogram)."""
    last = next((s.ttft for s in reversed(inside) if s.ttft is not None), None)
    if before is None or before.ttft is None or last is None:
        return ttft_figures(None)
    return ttft_figures(last.minus(before.ttft))


STEP_HEADERS = ("server waiting mean / max", "server running mean", "KV-cache mean", "TTFT p95 server / client")


def step_cells(step: Mapping[str, Any]) -> list[str]:
    """A capacity step's server figures as table cells (with --llm-server-metrics): its queue, its batch, its
    KV-cache use, and its own TTFT p95 beside the client's; "-" where the server has no such metric."""
    server = step.get("server") or {}
    waiting, running, kv = server.get("waiting"), server.get("running"), server.get("kv_cache")
    ttft = (server.get("ttft") or {}).get("p95_ms")
    client = (step.get("ttft_ms") or {}).get("p95")
    return [
        f"{waiting['mean']:.2f} / {waiting['max']:g}" if waiting else "-",
        f"{running['mean']:.2f}" if running else "-",
        f"{kv['mean'] * 100:.1f} %" if kv else "-",
        f"{_ms(ttft)} / {_ms(client)} ms",
    ]


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.1f}"
