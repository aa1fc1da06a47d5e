"""The server's Prometheus endpoint read for each server's names (loadlib.metrics.server_metrics): gauges summed over
label sets, the TTFT histogram differenced between scrapes, percentiles as Prometheus's histogram_quantile."""

from __future__ import annotations

import math

import pytest

from loadlib.metrics import server_metrics as sm
from loadlib.mock.engine.metrics import EngineMetrics

SGLANG = """# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m",tp_rank="0"} 12.0
sglang:num_running_reqs{model_name="m",tp_rank="1"} 4.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m"} 7.0
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m",tp_rank="0"} 0.2
sglang:token_usage{model_name="m",tp_rank="1"} 0.4
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 2.0
sglang:time_to_first_token_seconds_bucket{le="0.5",model_name="m"} 6.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 8.0
sglang:time_to_first_token_seconds_sum{model_name="m"} 2.4
sglang:time_to_first_token_seconds_count{model_name="m"} 8.0
"""
TGI = """# TYPE tgi_queue_size gauge
tgi_queue_size 3
# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 9
"""
LITELLM = """# TYPE litellm_llm_api_time_to_first_token_metric histogram
litellm_llm_api_time_to_first_token_metric_bucket{le="0.25",model="gpt"} 1.0
litellm_llm_api_time_to_first_token_metric_bucket{le="1.0",model="gpt"} 3.0
litellm_llm_api_time_to_first_token_metric_bucket{le="+Inf",model="gpt"} 3.0
litellm_llm_api_time_to_first_token_metric_sum{model="gpt"} 1.5
litellm_llm_api_time_to_first_token_metric_count{model="gpt"} 3.0
"""


def test_the_mocks_vllm_names() -> None:
    metrics = EngineMetrics()
    for seconds in (0.03, 0.07, 0.3):
        metrics.ttft.observe(seconds)
    sample = sm.parse(metrics.render("mock-llm", 5, 11, 0.625).decode())
    assert (sample.source, sample.waiting, sample.running, sample.kv_cache) == ("vllm", 11.0, 5.0, 0.625)
    assert sample.ttft is not None and sample.ttft.count == 3 and sample.ttft.total_s == pytest.approx(0.4)


def test_sglang_sums_running_over_ranks_and_averages_the_kv_cache_share() -> None:
    sample = sm.parse(SGLANG)
    assert (sample.source, sample.waiting, sample.running) == ("sglang", 7.0, 16.0)
    assert sample.kv_cache == pytest.approx(0.3)
    assert sample.ttft is not None and sample.ttft.bounds == (0.1, 0.5, math.inf) and sample.ttft.count == 8


def test_tgi_has_a_queue_and_a_batch_but_no_kv_cache_nor_ttft() -> None:
    sample = sm.parse(TGI)
    assert (sample.source, sample.waiting, sample.running, sample.kv_cache, sample.ttft) == ("tgi", 3, 9, None, None)


def test_litellm_has_only_its_upstream_ttft() -> None:
    sample = sm.parse(LITELLM)
    assert (sample.source, sample.waiting, sample.running) == ("litellm", None, None)
    figures = sm.ttft_figures(sample.ttft)
    assert (figures["count"], figures["mean_ms"]) == (3, 500.0)
    # rank 1.5 and 2.85 of 3, in the bucket (0.25, 1.0] that holds 2 of them
    assert figures["p50_ms"] == pytest.approx(250 + 750 * 0.5 / 2)
    assert figures["p95_ms"] == pytest.approx(250 + 750 * 1.85 / 2)


def test_unknown_names_and_bad_text() -> None:
    assert sm.parse("# TYPE up gauge\nup 1\n").source is None
    with pytest.raises(ValueError):
        sm.parse("vllm:num_requests_waiting this is { not prometheus")


def test_quantiles_interpolate_within_the_bucket_as_histogram_quantile() -> None:
    hist = sm.TTFTHistogram((0.1, 0.5, math.inf), (2.0, 6.0, 8.0), 2.4)
    assert sm.quantile(hist, 0.25) == pytest.approx(0.1)  # rank 2: the top of the first bucket
    assert sm.quantile(hist, 0.5) == pytest.approx(0.3)  # rank 4: half-way through (0.1, 0.5]
    assert sm.quantile(hist, 0.95) == pytest.approx(0.5)  # in +Inf: the highest finite bound
    assert sm.quantile(sm.TTFTHistogram((0.1, math.inf), (0.0, 0.0), 0.0), 0.5) is None


def test_the_ttft_of_a_window_is_the_difference_of_the_histograms() -> None:
    metrics = EngineMetrics()
    metrics.ttft.observe(5.0)  # before the window: left out
    before = sm.parse(metrics.render("m", 1, 0, 0.1).decode())
    for seconds in (0.03, 0.03, 0.03, 0.09):
        metrics.ttft.observe(seconds)
    inside = sm.parse(metrics.render("m", 4, 2, 0.5).decode())
    later = sm.parse(metrics.render("m", 9, 8, 0.9).decode())
    samples = [(10.0, before), (11.0, inside), (12.0, later)]
    figures = sm.window(samples, 10.5, 12.0)
    assert figures["scrapes"] == 1 and figures["waiting"] == {"mean": 2.0, "max": 2.0}
    assert figures["ttft"]["count"] == 4 and figures["ttft"]["mean_ms"] == pytest.approx(45.0)
    whole = sm.whole(samples)
    assert whole["running"] == {"mean": pytest.approx(14 / 3), "max": 9.0} and whole["ttft"]["count"] == 4
    assert sm.window(samples, 0.0, 10.5)["ttft"]["count"] is None, "no scrape before the window: no difference"


def test_a_server_restart_counts_from_zero() -> None:
    earlier = sm.TTFTHistogram((0.1, math.inf), (5.0, 9.0), 3.0)
    now = sm.TTFTHistogram((0.1, math.inf), (1.0, 2.0), 0.5)
    assert now.minus(earlier) == now
