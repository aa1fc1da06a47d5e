"""The master's scraper of --llm-server-metrics (loadlib.locust.server_metrics_part): a scrape that fails is counted
and never raised, a scrape is written to InfluxDB, and the summary puts each capacity step's server figures (its
measuring window's scrapes) beside the step's row."""

from __future__ import annotations

import time
from itertools import pairwise
from types import SimpleNamespace
from typing import Any

import pytest

from loadlib.locust import server_metrics_part as part_module
from loadlib.locust.server_metrics_part import ServerMetricsPart, check_url, server_lines, shown_url
from loadlib.metrics import server_metrics as sm
from loadlib.mock.engine.metrics import EngineMetrics


class Sinks:
    def __init__(self) -> None:
        self.scrapes: list[tuple[Any, ...]] = []

    def server_scrape(self, *args: Any) -> None:
        self.scrapes.append(args)


def ctx(capacity: Any = None) -> Any:
    parts = {"capacity": capacity} if capacity is not None else {}

    def named(name: str) -> Any:
        return parts[name]

    options = SimpleNamespace(llm_server_metrics="http://user:pw@127.0.0.1:1/metrics?token=x")
    return SimpleNamespace(options=options, is_worker=False, sinks=Sinks(), named=named)


def scraper(context: Any) -> ServerMetricsPart:
    part = ServerMetricsPart()
    part.ctx, part.url, part.interval_s = context, context.options.llm_server_metrics, 0.2
    return part


def test_a_refused_scrape_is_counted_and_the_run_goes_on() -> None:
    part = scraper(ctx())
    part.scrape()
    assert part.failed == 1 and part.samples == [] and "URLError" in (part.last_error or "")


def test_a_scrape_that_drips_is_cut_at_the_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    import gevent

    monkeypatch.setattr(part_module, "fetch", lambda url, timeout: gevent.sleep(5) or "")
    part = scraper(ctx())
    began = time.monotonic()
    part.scrape()
    assert time.monotonic() - began < 1 and part.failed == 1 and "within 0.2 s" in (part.last_error or "")


def test_a_body_without_known_names_is_counted_as_unrecognised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(part_module, "fetch", lambda url, timeout: "# TYPE up gauge\nup 1\n")
    part = scraper(ctx())
    part.scrape()
    assert (part.failed, part.unknown, part.samples) == (0, 1, [])


def test_each_step_gets_the_scrapes_of_its_window(monkeypatch: pytest.MonkeyPatch) -> None:
    metrics = EngineMetrics()
    bodies = iter([metrics.render("m", 2, 0, 0.1), metrics.render("m", 8, 5, 0.7), metrics.render("m", 8, 9, 0.9)])
    monkeypatch.setattr(part_module, "fetch", lambda url, timeout: next(bodies).decode())
    capacity = SimpleNamespace(marks={1: {"measure": 0.0, "hold": 1.5}, 2: {"measure": 1.5, "hold": 9e12}})
    context = ctx(capacity)
    part = scraper(context)
    clock = iter([1.0, 2.0, 3.0])
    monkeypatch.setattr(part_module.time, "time", lambda: next(clock))
    for _ in range(3):
        part.scrape()
    assert [s[0] for s in context.sinks.scrapes] == ["vllm"] * 3 and context.sinks.scrapes[1][1]["waiting"] == 5
    steps = [{"step": 1, "users": 4}, {"step": 2, "users": 16}, {"step": 3, "users": 8}]
    summary: dict[str, Any] = {"capacity": {"max_users": 4, "steps": steps}, "total": {"latency_ms": {}}}
    part.summarize(summary)  # type: ignore[arg-type]
    rows = summary["capacity"]["steps"]
    assert rows[0]["server"]["waiting"] == {"mean": 0.0, "max": 0.0}
    assert rows[1]["server"]["waiting"] == {"mean": 7.0, "max": 9.0} and rows[1]["server"]["scrapes"] == 2
    assert rows[2]["server"] is None, "a step without marks (not measured) has no server figures"
    assert "server" not in steps[0], "the search's own rows are not changed"
    server = summary["server_metrics"]
    assert server["url"] == "http://127.0.0.1:1/metrics" and server["scrapes"] == 3 and server["source"] == "vllm"
    assert "3 scrapes, 0 failed" in server_lines(server)[0]


def test_urls() -> None:
    assert shown_url("https://u:secret@host:9000/m?key=k") == "https://host:9000/m"
    with pytest.raises(ValueError, match="give an http"):
        check_url("vllm:8000/metrics")


def test_a_long_run_keeps_its_figures_exact_and_its_scrapes_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three times MAX_SAMPLES scrapes (3 hours at 1 s, here 100 for speed): the run's gauges and TTFT are those of
    every scrape, the scrapes kept for the steps' windows at most MAX_SAMPLES, evenly spaced from the first."""
    monkeypatch.setattr(part_module, "MAX_SAMPLES", 100)
    searching = SimpleNamespace(marks={1: {"warmup": 0.0}})  # a capacity search has begun
    metrics, part, scrapes = EngineMetrics(), scraper(ctx(searching)), []
    for at in range(3 * part_module.MAX_SAMPLES):
        metrics.ttft.observe(0.05 + (at % 7) / 100)
        sample = sm.parse(metrics.render("m", at % 5, at % 3, (at % 10) / 10).decode())
        scrapes.append((float(at), sample))
        part.keep(float(at), sample)
    assert part.run.figures() == sm.whole(scrapes)
    assert part.run.figures()["waiting"] == {"mean": 1.0, "max": 2.0} and part.run.scrapes == len(scrapes)
    kept = [at for at, _ in part.samples]
    assert len(kept) <= part_module.MAX_SAMPLES and kept[0] == 0.0
    assert {b - a for a, b in pairwise(kept)} == {4.0}, "every 4th scrape after two thinnings"
    plain = scraper(ctx(SimpleNamespace(marks={})))  # a run without a capacity search (its part, no step yet)
    for at, sample in scrapes:
        plain.keep(at, sample)
    assert plain.samples == [] and plain.run.figures() == part.run.figures()
