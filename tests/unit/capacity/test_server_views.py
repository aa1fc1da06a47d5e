"""The server's view of each capacity step (--llm-server-metrics) where the answer is shown: a summary with it is
valid against the schema, Markdown, the HTML report and the console carry the queue, batch, KV-cache and server TTFT
beside the client's, and the web UI's feed carries the steps with the answer as it stands."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from loadlib.locust.server_metrics_part import ServerMetricsPart
from loadlib.locust.webcharts import capacity_feed
from loadlib.metrics import server_metrics as sm
from loadlib.mock.engine.metrics import EngineMetrics
from loadlib.outputs.markdown import markdown_summary
from loadlib.reports.capacity_curve import capacity_html
from tests.unit.capacity.test_outputs import VALIDATOR, summary


def with_server() -> dict[str, Any]:
    """A search's summary after the scraper summarized it: 8 users hardly queued, 16 did."""
    metrics = EngineMetrics()
    scrapes = []
    for at, (running, waiting, ttfts) in enumerate([(2, 0, ()), (8, 1, (0.05,) * 4), (8, 9, (0.4,) * 4)]):
        for t in ttfts:
            metrics.ttft.observe(t)
        scrapes.append((float(at), sm.parse(metrics.render("m", running, waiting, 0.25).decode())))
    part = ServerMetricsPart()
    marks = {1: {"measure": 0.5, "hold": 1.5}, 2: {"measure": 1.5, "hold": 2.5}}
    part.ctx = SimpleNamespace(is_worker=False, named=lambda name: SimpleNamespace(marks=marks))
    part.url = "http://127.0.0.1:8000/metrics"
    for at, sample in scrapes:
        part.keep(at, sample)
    result = summary(None)
    part.summarize(result)  # type: ignore[arg-type]
    return result


def test_the_summary_with_the_servers_view_is_valid_against_the_schema() -> None:
    result = with_server()
    assert [e.message for e in VALIDATOR.iter_errors(result)] == []
    first, second = result["capacity"]["steps"]
    assert first["server"]["waiting"] == {"mean": 1.0, "max": 1.0} and second["server"]["waiting"]["max"] == 9.0
    assert second["server"]["ttft"]["count"] == 4 and 250 < second["server"]["ttft"]["p95_ms"] <= 500


def test_markdown_html_and_console_show_the_server_beside_each_step() -> None:
    result = with_server()
    text = markdown_summary(result)
    assert "server waiting mean / max" in text and "| 9.00 / 9 |" in text and "25.0 %" in text
    html = "".join(capacity_html(result["capacity"]))
    assert "TTFT p95 server / client" in html and "9.00 / 9" in html
    part = ServerMetricsPart()
    lines = part.lines(result)
    assert lines[0].startswith("Server metrics (vllm) from http://127.0.0.1:8000/metrics: 3 scrapes, 0 failed")
    assert "client" in lines[2] and lines[3].startswith("  Per capacity step") and len(lines) == 6


def test_the_web_uis_feed_says_the_search_is_under_way_until_it_ends() -> None:
    capacity = with_server()["capacity"]
    live = capacity_feed(capacity, running=True)
    assert live is not None and live["answer"] == "search under way: 8 held so far, 16 failed"
    done = capacity_feed(capacity, running=False)
    assert done is not None and done["answer"].startswith("max_users 8") and len(done["steps"]) == 2
    assert capacity_feed(None, running=True) is None
