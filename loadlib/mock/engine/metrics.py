"""`GET /metrics`: the engine's state and history in Prometheus text format under vLLM's metric names (V1), so a
dashboard or autoscaler built for vLLM can scrape the mock. Histograms hold the model's times (what the writes
follow), from each request's arrival."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from itertools import accumulate

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

    def lines(self, labels: str) -> list[str]:
        out = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        cumulative = list(accumulate(self.counts))
        for bound, n in zip((*map(repr, self.bounds), "+Inf"), cumulative, strict=True):
            out.append(f'{self.name}_bucket{{{labels},le="{bound}"}} {n}')
        out.append(f"{self.name}_sum{{{labels}}} {self.total!r}")
        out.append(f"{self.name}_count{{{labels}}} {cumulative[-1]}")
        return out


class EngineMetrics:
    """What `/metrics` reports. Counters and histograms grow until `POST /mock/reset`."""

    def __init__(self) -> None:
        self.ttft = Histogram(
            "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", TTFT_BUCKETS
        )
        self.itl = Histogram(
            "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", ITL_BUCKETS
        )
        self.queue = Histogram(
            "vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", LATENCY_BUCKETS
        )
        self.e2e = Histogram(
            "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", LATENCY_BUCKETS
        )
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.success: dict[str, int] = {}
        self.preemptions = 0

    def histograms(self) -> tuple[Histogram, ...]:
        return (self.ttft, self.itl, self.queue, self.e2e)

    def render(self, model: str, running: int, waiting: int, kv_usage: float) -> bytes:
        labels = f'model_name="{model}"'
        lines = [
            *_gauge("vllm:num_requests_running", "Number of requests in model execution batches.", labels, running),
            *_gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", labels, waiting),
            *_gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", labels, kv_usage),
            *_counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.", labels, self.prompt_tokens),
            *_counter(
                "vllm:generation_tokens_total", "Number of generation tokens processed.", labels, self.generation_tokens
            ),
            *_counter(
                "vllm:num_preemptions_total",
                "Cumulative number of preemption from the engine.",
                labels,
                self.preemptions,
            ),
            *self._success(labels),
        ]
        for hist in self.histograms():
            lines += hist.lines(labels)
        return ("\n".join(lines) + "\n").encode()

    def _success(self, labels: str) -> Iterable[str]:
        name = "vllm:request_success_total"
        yield f"# HELP {name} Count of successfully processed requests."
        yield f"# TYPE {name} counter"
        for reason in sorted(self.success) or ["stop"]:
            yield f'{name}{{{labels},finished_reason="{reason}"}} {self.success.get(reason, 0)}'


def _gauge(name: str, help_: str, labels: str, value: float) -> list[str]:
    return [f"# HELP {name} {help_}", f"# TYPE {name} gauge", f"{name}{{{labels}}} {float(value)!r}"]


def _counter(name: str, help_: str, labels: str, value: float) -> list[str]:
    return [f"# HELP {name} {help_}", f"# TYPE {name} counter", f"{name}{{{labels}}} {float(value)!r}"]
