"""The capacity search's live step chart in a real browser (Debian's Chromium driven by Playwright): a search started
by the web UI (--autostart) against the batching mock, whose capacity (about 10 users) lies between the steps, with
--llm-server-metrics scraping the mock. The charts page draws every finished step by load, marks the failing one, and
lists each with the server's queue beside it (docs/webui.md, docs/capacity.md). A screenshot is kept in
test-artifacts/ (git-ignored)."""

from __future__ import annotations

import subprocess

import pytest
from test_webui import ARTIFACTS, BROWSER_ARGS, CHROMIUM, free_port, wait_for, wait_http

from loadlib.mock import MockConfig, start_subprocess
from tests.integration.locust_runs import ROOT, env, locust_cmd, stop
from tests.integration.test_capacity_run import ENGINE

pytestmark = pytest.mark.integration

# 8 users hold, 16 fail (the answer key says 10 at this setting); precision 1: the search ends there
SEARCH = ("--llm-capacity-start", "8", "--llm-capacity-max", "16", "--llm-capacity-precision", "1")
FAST = ("--llm-capacity-warmup-s", "1", "--llm-capacity-window-s", "3", "--llm-threshold", "ttft p95 < 300ms")


@pytest.fixture
def searching_ui():
    """A local web UI run of locustfiles/capacity.py that starts its search by itself."""
    port = free_port()
    with start_subprocess(MockConfig(engine="batching", prefill_ms_per_1k=1000.0, **ENGINE)) as mock:
        args = ("--web-host", "127.0.0.1", "--web-port", str(port), "--autostart", "--host", mock.url + "/v1")
        args += ("--llm-api-key-env", "none", "--llm-server-metrics", mock.url + "/metrics", *SEARCH, *FAST)
        proc = subprocess.Popen(
            locust_cmd(*args, locustfile="locustfiles/capacity.py"),
            cwd=ROOT,
            env=env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_http(base + "/llm/charts")
            yield base
        finally:
            stop(proc)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium not installed (scripts/test.sh installs it)")
def test_the_step_chart_draws_every_finished_step_and_marks_the_failing_one(searching_ui: str) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1400}).new_page()
            page.goto(searching_ui + "/llm/charts", timeout=20_000)
            live = wait_for(lambda: (c := drawn(page))["steps"] >= 1 and c, 60, "a first finished step on the chart")
            under_way = page.locator("#capacity-answer").inner_text()
            assert page.locator("#capacity").is_visible()
            wait_for(lambda: page.evaluate("window.llmCharts.feed.state") == "stopped", 90, "the search to end")
            page.wait_for_timeout(2500)  # one more poll after the search's last step
            chart, feed = drawn(page), page.evaluate("window.llmCharts.feed")
            rows = page.locator("#capacity-steps tbody tr").all_inner_texts()
            answer = page.locator("#capacity-answer").inner_text()
            page.locator("#capacity").screenshot(path=str(ARTIFACTS / "capacity-steps.png"))
        finally:
            browser.close()
    steps = feed["capacity"]["steps"]
    assert live["steps"] <= len(steps) and under_way.startswith("search under way: 8 held so far"), under_way
    assert [s["users"] for s in steps] == [8, 16], steps
    assert chart["steps"] == len(steps) and chart["loads"] == sorted(s["users"] for s in steps)
    assert chart["failed"] == [s["users"] for s in steps if not s["passed"]] == [16]
    assert chart["canvas"] == 1
    assert len(rows) == len(steps) and "held" in rows[0] and "FAIL" in rows[1]
    assert answer.startswith("max_users 8"), answer
    waiting = [s["server"]["waiting"]["max"] for s in steps]
    assert waiting[1] > waiting[0], f"the server's queue is longer at 16 users than at 8: {waiting}"


def drawn(page) -> dict:
    """What the step chart drew (window.llmCharts.capacity) and how many canvases it has."""
    chart = page.evaluate("window.llmCharts.capacity") or {"steps": 0, "loads": [], "failed": []}
    return {**chart, "canvas": page.locator("#chart-capacity canvas").count()}
