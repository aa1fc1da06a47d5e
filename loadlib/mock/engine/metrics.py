"""`GET /metrics`: the engine's state and history in Prometheus text format under vLLM's metric names (V1), so a
dashboard or autoscaler built for vLLM can scrape the mock. Histograms hold the model's times (what the writes
follow), from each request's arrival.

The body is vLLM's whole set, not only the families loadlib reads: every family vLLM's engine exposes that the mock
can fill truthfully, each counter's and histogram's `_created` gauge, and the process, platform and GC families of
prometheus_client's default collectors (a real vLLM body's neighbours), rendered by prometheus_client itself. So a
scraper pays a real server's cost here (about 35 KB and 430 lines; vLLM's own carries the API server's `http_*`
families too, about 54 KB and 630 lines)."""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterable, Mapping
from itertools import accumulate

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

# vLLM's bucket bounds (seconds)
TTFT_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
ITL_BUCKETS = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
)
LATENCY_BUCKETS = (
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    120.0,
    240.0,
    480.0,
    960.0,
    1920.0,
    7680.0,
)


MAX_MODEL_LEN = 32_768  # the token-count histograms' top bucket follows it, as vLLM's build_1_2_5_buckets does
TOKEN_BUCKETS = tuple(m * 10**e for e in range(5) for m in (1, 2, 5) if m * 10**e <= MAX_MODEL_LEN)
ITERATION_BUCKETS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
N_BUCKETS = (1, 2, 5, 10, 20)
PREEMPTION_BUCKETS = (1, 2, 3, 4, 5, 10, 20)
LABELS = ("engine", "model_name")  # vLLM V1's labels of every engine family; the mock is engine 0


class Histogram:
    """Counts per bucket (not cumulative until rendered), their sum and count."""

    __slots__ = ("bounds", "counts", "help", "name", "total")

    def __init__(self, name: str, help_: str, bounds: tuple[float, ...]) -> None:
        self.name = name
        self.help = help_
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value

    def family(self, values: list[str], created: float) -> Metric:
        """As prometheus_client's own histogram exposes itself: cumulative buckets, count, sum, `_created`."""
        family = HistogramMetricFamily(self.name, self.help, labels=LABELS)
        bounds = (*map(float, self.bounds), float("inf"))
        buckets = [(floatToGoString(b), float(n)) for b, n in zip(bounds, accumulate(self.counts), strict=True)]
        family.add_metric(values, buckets, self.total)
        family.samples.append(Sample(self.name + "_created", dict(zip(LABELS, values, strict=True)), created))
        return family


class EngineMetrics:
    """What `/metrics` reports. Counters and histograms grow until `POST /mock/reset` (their `_created`)."""

    def __init__(self) -> None:
        self.created = time.time()
        self.ttft = Histogram(
            "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", TTFT_BUCKETS
        )
        self.itl = Histogram(
            "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", ITL_BUCKETS
        )
        self.queue = _latency("vllm:request_queue_time_seconds", "WAITING")
        self.e2e = Histogram(
            "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", LATENCY_BUCKETS
        )
        self.inference = _latency("vllm:request_inference_time_seconds", "RUNNING")
        self.prefill = _latency("vllm:request_prefill_time_seconds", "PREFILL")
        self.decode = _latency("vllm:request_decode_time_seconds", "DECODE")
        self.prompt_len = Histogram("vllm:request_prompt_tokens", "Number of prefill tokens processed.", TOKEN_BUCKETS)
        self.output_len = Histogram(
            "vllm:request_generation_tokens", "Number of generation tokens processed.", TOKEN_BUCKETS
        )
        self.iteration = Histogram(
            "vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", ITERATION_BUCKETS
        )
        self.params_n = Histogram("vllm:request_params_n", "Histogram of the n request parameter.", N_BUCKETS)
        self.tpot = Histogram(
            "vllm:request_time_per_output_token_seconds",
            "Histogram of time_per_output_token_seconds per request.",
            ITL_BUCKETS,
        )
        self.request_preemptions = Histogram(
            "vllm:request_num_preemptions",
            "Histogram of the number of times a request was preempted.",
            PREEMPTION_BUCKETS,
        )
        self.prefill_computed = Histogram(
            "vllm:request_prefill_kv_computed_tokens",
            "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
            TOKEN_BUCKETS,
        )
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.prefix_queries = 0
        self.prefix_hits = 0
        self.success: dict[str, int] = {}
        self.preemptions = 0

    def histograms(self) -> tuple[Histogram, ...]:
        return (
            self.prompt_len,
            self.output_len,
            self.iteration,
            self.params_n,
            self.ttft,
            self.itl,
            self.tpot,
            self.e2e,
            self.queue,
            self.inference,
            self.prefill,
            self.decode,
            self.request_preemptions,
            self.prefill_computed,
        )

    def render(
        self, model: str, running: int, waiting: int, kv_usage: float, cache: Mapping[str, str] | None = None
    ) -> bytes:
        """The whole body: the process's families, then the engine's (`cache`: vllm:cache_config_info's labels)."""
        values = ["0", model]
        families = [*self._gauges(values, running, waiting, kv_usage), *self._counters(values)]
        families += [h.family(values, self.created) for h in self.histograms()]
        if cache is not None:
            doc = "Information of the LLMEngine CacheConfig"
            info = GaugeMetricFamily("vllm:cache_config_info", doc, labels=list(cache))
            info.add_metric(list(cache.values()), 1.0)
            families.append(info)
        return generate_latest(_PROCESS) + generate_latest(_Families(families))

    def _gauges(self, values: list[str], running: int, waiting: int, kv_usage: float) -> Iterable[Metric]:
        yield _gauge("vllm:num_requests_running", "Number of requests in model execution batches.", values, running)
        yield _gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", values, waiting)
        yield _gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", values, kv_usage)

    def _counters(self, values: list[str]) -> Iterable[Metric]:
        created = self.created
        yield _counter(
            "vllm:prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens.",
            values,
            self.prefix_queries,
            created,
        )
        yield _counter(
            "vllm:prefix_cache_hits",
            "Prefix cache hits, in terms of number of cached tokens.",
            values,
            self.prefix_hits,
            created,
        )
        yield _counter(
            "vllm:num_preemptions",
            "Cumulative number of preemption from the engine.",
            values,
            self.preemptions,
            created,
        )
        yield _counter("vllm:prompt_tokens", "Number of prefill tokens processed.", values, self.prompt_tokens, created)
        yield _counter(
            "vllm:generation_tokens", "Number of generation tokens processed.", values, self.generation_tokens, created
        )
        success = CounterMetricFamily(
            "vllm:request_success", "Count of successfully processed requests.", labels=(*LABELS, "finished_reason")
        )
        for reason in sorted(self.success) or ["stop"]:
            success.add_metric([*values, reason], self.success.get(reason, 0), created=created)
        yield success


class _Families(Collector):
    """A fixed list of families, for generate_latest."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families


# the process's own families (memory, CPU, open files, Python's GC), as any prometheus_client server exposes them
_PROCESS = CollectorRegistry(auto_describe=False)
ProcessCollector(registry=_PROCESS)
PlatformCollector(registry=_PROCESS)
GCCollector(registry=_PROCESS)


def _latency(name: str, phase: str) -> Histogram:
    return Histogram(name, f"Histogram of time spent in {phase} phase for request.", LATENCY_BUCKETS)


def _gauge(name: str, help_: str, values: list[str], value: float) -> Metric:
    family = GaugeMetricFamily(name, help_, labels=LABELS)
    family.add_metric(values, float(value))
    return family


def _counter(name: str, help_: str, values: list[str], value: float, created: float) -> Metric:
    family = CounterMetricFamily(name, help_, labels=LABELS)
    family.add_metric(values, float(value), created=created)
    return family
