"""The capacity search end to end (issue 27): a real mock over HTTP, a real Locust master and 2 workers.

Against the batching mock, whose answer key (`GET /mock/capacity`) knows its capacity for the same SLO, the search's
`max_users` is within 10 % of it, and the arrival-rate search's `max_rate_per_s` (then held to confirm it) within
10 % of its `rate_per_s` (the model's steady state: docs/mock.md); against the fixed-delay
mock (no capacity limit) the search stops at its maximum and says its answer is only a lower bound. The engine is set
so its capacity is small and its requests short (4 output tokens), so a step measures its 100 samples in a few
seconds; bench/capacity_accuracy.py runs three settings three times each. The batching run also scrapes the mock's
/metrics (--llm-server-metrics: the scraped queue against the mock's truth of queueing, step by step) and, where
influxd is installed, writes to InfluxDB (the dashboard's capacity and server panels against the summary); the other
scrapes an endpoint that is down (counted, not fatal)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from loadlib.mock import MockConfig, start_subprocess
from tests.integration import capacity_views as views
from tests.integration.answer_keys import answer_key
from tests.integration.influx_server import InfluxServer, find_influxd
from tests.integration.locust_runs import load, run_distributed

pytestmark = pytest.mark.alone

SLO = "ttft p95 < 300ms; error_rate < 1%"
# prefill-bound: one prompt's worth of tokens a step (chunked prefill), so TTFT is queueing for the prefill and does
# not hang on whether a request catches the step starting as it arrives (the answer key's users turn round in 1 ms);
# no prefix cache: the chat prompts share their system prompt, the answer key's workload shares nothing
ENGINE = {
    "step_base_ms": 6.0,
    "decode_ms_per_seq": 0.5,
    "max_batched_tokens": 64,
    "output_tokens": 4,
    "prefix_caching": "off",
}
FAST_STEPS = ("--llm-capacity-warmup-s", "1", "--llm-capacity-window-s", "3")


def search(host: str, summary: Path, *args: str, timeout: float = 90) -> tuple[int, str, float, dict[str, Any]]:
    """One distributed capacity run (master + 2 workers) against `host`: exit code, stderr, seconds, the summary."""
    code, err, seconds = run_distributed(
        *("--host", host + "/v1", "--llm-api-key-env", "none", "--llm-summary", str(summary)),
        *("--llm-threshold", SLO, *FAST_STEPS, *args),
        locustfile="locustfiles/capacity.py",
        timeout=timeout,
    )
    return code, err, seconds, load(summary) if summary.exists() else {}


def loads(capacity: dict[str, Any]) -> Sequence[int]:
    return [s["users"] for s in capacity["steps"]]


def test_the_search_finds_the_batching_mocks_capacity_within_10_percent(tmp_path: Path) -> None:
    """The same run scrapes the mock's /metrics (--llm-server-metrics) and writes to InfluxDB when influxd is
    installed: the scraped queue is checked against the mock's truth, the dashboard's panels against the summary.
    --llm-abort-on-fail is given and does not cut the search short at its first failing step (a note says so)."""
    config = MockConfig(engine="batching", prefill_ms_per_1k=500.0, **ENGINE)  # 15 users
    with start_subprocess(config) as mock, influx_if_installed(tmp_path / "influxd") as influx:
        args = ["--llm-capacity-start", "8", "--llm-capacity-precision", "0.1", "--llm-abort-on-fail"]
        args += ["--llm-server-metrics", mock.url + "/metrics", "--llm-server-metrics-interval", "0.2"]
        args += ["--llm-records", str(tmp_path / "r-{worker}.jsonl")]
        args += ["--influx-url", influx.url, "--influx-api", "v1", "--influx-db", "locust"] if influx else []
        code, err, seconds, summary = search(mock.url, tmp_path / "s.json", *args)
        truth = answer_key(mock.url, "ttft_p95_ms=300&output_tokens=4")["users"]
        queue = views.truth_queue(mock.url)
        if influx is not None:
            views.check_panels_after_the_run(influx, summary)
    assert code == 0, err[-3000:]
    assert "abort on fail does not apply to a capacity search" in err, err[-3000:]
    table = views.check_server_queue_against_truth(
        summary["capacity"]["steps"], views.read_records(tmp_path.glob("r-*.jsonl")), queue
    )
    print("users, truth queue ms, Little's length, scraped waiting:", [tuple(round(v, 2) for v in r) for r in table])
    capacity = summary["capacity"]
    assert not capacity["lower_bound"], capacity
    assert abs(capacity["max_users"] - truth) <= 0.1 * truth, (capacity["max_users"], truth, loads(capacity))
    assert capacity["first_failed_users"] > capacity["max_users"]
    assert capacity["first_failed_by"][0].startswith("ttft p95 < 300ms")
    for step in capacity["steps"]:
        assert step["requests"] > 0 and step["ttft_ms"]["p95"] is not None and not step["client_saturated"]
    print(f"max_users {capacity['max_users']} against {truth}, steps {loads(capacity)}, {seconds:.1f} s")


def test_the_rate_search_finds_the_batching_mocks_rate_within_10_percent_and_holds_it(tmp_path: Path) -> None:
    """Run to its first failure and back: every step after a failed one starts once the queue the failed one left
    has drained (nothing sent meanwhile), as the client's count of requests in flight and the server's scraped queue
    show; a step after one that held does not wait. A step that starts from a drained queue shows a rate a little over
    the capacity only as its queue grows: windows of 3 s held 68 requests/s (1.10 of the key), so its steps warm up
    for 2 s and measure for up to 6 s (a window clear of the limit still ends after 3 s)."""
    config = MockConfig(engine="batching", prefill_ms_per_1k=250.0, **ENGINE)  # about 62 requests/s
    with start_subprocess(config) as mock:
        args = ("--llm-capacity-control", "rate", "--llm-capacity-start", "40", "--llm-capacity-precision", "0.1")
        args += ("--llm-capacity-max", "80", "--llm-capacity-warmup-s", "2", "--llm-capacity-window-s", "6")
        args += ("--llm-capacity-inflight-s", "2", "--llm-capacity-confirm-s", "4")
        args += ("--llm-server-metrics", mock.url + "/metrics", "--llm-server-metrics-interval", "0.2")
        code, err, seconds, summary = search(mock.url, tmp_path / "s.json", *args, timeout=150)
        key = answer_key(mock.url, "ttft_p95_ms=300&output_tokens=4")
    assert code == 0, err[-3000:]
    capacity = summary["capacity"]
    rates = [s["rate_per_s"] for s in capacity["steps"]]
    assert capacity["mode"] == "rate" and capacity["max_users"] is None and not capacity["lower_bound"], capacity
    truth, found = key["rate_per_s"], capacity["max_rate_per_s"]
    assert abs(found - truth) <= 0.1 * truth, (found, truth, key["workload"], rates)
    assert capacity["first_failed_rate_per_s"] > capacity["max_rate_per_s"]
    hold = capacity["steps"][-1]
    assert hold["confirm"] and hold["rate_per_s"] == capacity["max_rate_per_s"] and hold["window_s"] >= 4
    assert capacity["confirmed"] is hold["passed"]
    for step in capacity["steps"]:  # the pool of users grows with the rate, and what the window achieved is near it
        assert step["users"] >= 2 * step["rate_per_s"] and step["schedule_lag_ms"]["p95"] is not None
        if step["passed"]:
            assert abs(step["requests_per_s"] - step["rate_per_s"]) <= 0.25 * step["rate_per_s"], step
    prompt = key["workload"]["prompt_tokens"]
    print(f"max_rate_per_s {found} against the key's {truth} ({prompt} prompt tokens), steps {rates}, {seconds:.1f} s")
    drains = check_drains(capacity["steps"])
    print("after each failed step, rate: drain s, in flight at its start / end / target:", drains)


def check_drains(steps: Sequence[dict[str, Any]]) -> list[tuple[float, float, int, int, float]]:
    """Each step after a failed one waited for the queue to drain and it did: the requests in flight fell to at most
    what the new rate keeps in flight (Little's law), and a scrape since showed the server's queue empty; a drain
    after a step well past the capacity began with more in flight than that. Each (rate, wait, in flight at its
    start, at its end, target)."""
    drains = []
    for before, step in itertools.pairwise(steps):
        if before["passed"]:
            assert step["drain_s"] is None and step["drained"] is None, step
            continue
        seen = step["drain_in_flight"]
        assert step["drain_s"] > 0 and step["drained"] is True and seen["waiting"] == 0, step
        assert seen["target"] >= seen["end"] and seen["start"] >= seen["end"], step
        drains.append((step["rate_per_s"], step["drain_s"], seen["start"], seen["end"], seen["target"]))
    assert drains, f"the search never stepped back from a failed step: {[s['rate_per_s'] for s in steps]}"
    assert any(start > target for _, _, start, _, target in drains), f"no drain had a queue to wait for: {drains}"
    return drains


@contextlib.contextmanager
def influx_if_installed(root: Path) -> Iterator[InfluxServer | None]:
    """A fresh influxd when one is installed (CI installs it), else None: the annotations are checked where they can
    be, the search everywhere."""
    binary, _ = find_influxd()
    if binary is None:
        yield None
        return
    server = InfluxServer(binary, root)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_without_a_capacity_limit_the_search_stops_at_its_maximum_as_a_lower_bound(tmp_path: Path) -> None:
    mock_config = MockConfig(ttft_ms=10, itl_ms=2, output_tokens=4)
    with start_subprocess(mock_config) as mock, influx_if_installed(tmp_path / "influxd") as influx:
        args = ["--llm-capacity-start", "4", "--llm-capacity-max", "8", "--llm-capacity-min", "10"]
        args += ["--llm-server-metrics", "http://127.0.0.1:9/metrics"]  # nothing listens: counted, never fatal
        args += ["--influx-url", influx.url, "--influx-api", "v1", "--influx-db", "locust"] if influx else []
        code, err, _, summary = search(mock.url, tmp_path / "s.json", "--llm-junit", str(tmp_path / "j.xml"), *args)
        if influx is not None:  # each decided step is an annotation
            where = f"\"kind\" = 'capacity_step' AND \"run_id\" = '{summary['meta']['run_id']}'"
            assert influx.count("locust", "llm_event", "message", where) == 2
    capacity = summary["capacity"]
    assert capacity["lower_bound"] and capacity["max_users"] == 8 and loads(capacity) == [4, 8], capacity
    assert capacity["stopped"] == "the maximum of 8 users held" and capacity["gate_passed"] is False
    assert code == 99, err[-3000:]
    assert summary["verdict"]["reasons"][0] == "capacity max_users 8 (a lower bound) < --llm-capacity-min 10"
    assert 'name="capacity &gt;= 10 users"' in (tmp_path / "j.xml").read_text()
    server = summary["server_metrics"]
    assert server["scrapes"] == 0 and server["scrapes_failed"] >= 10 and "refused" in server["last_error"], server
    assert len(summary["verdict"]["reasons"]) == 1, "the endpoint being down is reported, not a reason to fail"
