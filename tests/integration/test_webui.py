"""The web UI in a real browser (Debian's Chromium driven by Playwright, no download): log in, set options in the
start form, watch the LLM charts and the LLM tab, read the scenario results, stop, download the CSV (docs/webui.md).
A screenshot of the charts is kept in test-artifacts/ (git-ignored)."""

from __future__ import annotations

import csv
import io
import json
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from contextlib import closing
from pathlib import Path

import pytest

from tests.integration.locust_runs import ROOT, env, locust_cmd

pytestmark = pytest.mark.integration
CHROMIUM = Path("/usr/bin/chromium")
SECRET = "sk-this-key-must-never-reach-the-ui-0123456789"
USER, PASSWORD = "operator", "correct horse battery staple"
ARTIFACTS = ROOT / "test-artifacts"
ADDED_ROUTES = (
    "/llm/charts",
    "/llm/charts.json",
    "/llm/summary.json",
    "/llm/csv",
    "/llm/static/charts.js",
    "/llm/static/uplot/uPlot.iife.min.js",
)
BROWSER_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer within {timeout}s")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def status_without_login(url: str) -> tuple[int, str]:
    try:
        with urllib.request.build_opener(NoRedirect()).open(url, timeout=10) as r:
            return r.status, ""
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("location") or ""


@pytest.fixture
def locust_ui():
    """support_chat in the web UI with --web-login; the key and the password come from the environment."""
    port = free_port()
    proc = subprocess.Popen(
        locust_cmd(
            "--web-host",
            "127.0.0.1",
            "--web-port",
            str(port),
            "--web-login",
            "--llm-api-key-env",
            "LOADTEST_SECRET_KEY",
            "--llm-mock",
            "ttft_ms=20,itl_ms=2",
            "--chat-think-time",
            "0-0.2",
            "--llm-grafana-url",
            "http://grafana.example:3000",
            locustfile="locustfiles/support_chat.py",
        ),
        cwd=ROOT,
        env=env(LOADTEST_SECRET_KEY=SECRET, LLM_WEB_USERNAME=USER, LLM_WEB_PASSWORD=PASSWORD),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(base + "/login")
        yield base
    finally:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        assert SECRET not in out and PASSWORD not in out, "neither the API key nor the password reaches the logs"


def wait_for(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"{what} within {timeout} s")


def log_in(page, base: str, password: str) -> None:
    page.goto(base + "/", timeout=20_000)
    page.fill("input[name=username]", USER)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_load_state()


def start_swarm(page) -> None:
    """The start form: 4 users, and from the custom parameters max_tokens 24 and a threshold (both for this run)."""
    page.fill("input[name=userCount]", "4")
    page.fill("input[name=spawnRate]", "4")
    page.get_by_text("Custom parameters").click()
    page.fill("input[name=llmMaxTokens]", "24")
    page.fill("input[name=llmThreshold]", "ttft p99 < 1ms")
    page.get_by_role("button", name="Start").click()


def chart_feed(page) -> dict:
    return page.evaluate("window.llmCharts.feed")


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium not installed (scripts/test.sh installs it)")
def test_login_form_charts_tab_and_csv_in_a_real_browser(locust_ui: str) -> None:
    from playwright.sync_api import sync_playwright

    for route in ("/", "/stats/requests", *ADDED_ROUTES):
        code, where = status_without_login(locust_ui + route)
        assert code in (302, 401) and (code == 401 or "/login" in where), f"{route} without login: {code} {where}"
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1200}, accept_downloads=True).new_page()
            log_in(page, locust_ui, "wrong password")
            assert "/login" in page.url
            page.get_by_text("Wrong username or password").wait_for(timeout=10_000)
            log_in(page, locust_ui, PASSWORD)
            assert "/login" not in page.url
            assert page.locator("#llm-charts-link").get_attribute("href") == "/llm/charts"
            start_swarm(page)
            page.get_by_role("tab", name="LLM").click(timeout=20_000)
            row = page.get_by_role("row").filter(has_text="support_chat @ mock")
            counts = []
            for _ in range(2):  # the table's request count grows
                counts.append(wait_for(lambda: _count(row, counts), 30, "the LLM tab's count to grow"))
            charts = page.context.new_page()
            charts.goto(locust_ui + "/llm/charts", timeout=20_000)
            wait_for(lambda: charts.evaluate("window.llmCharts.points") >= 3, 30, "three chart points")
            feed = chart_feed(charts)
            assert feed["grafana"].startswith("http://grafana.example:3000/d/llm-overview/")
            assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", feed["run_id"]), "a run id even though the form sent none"
            assert f"var-run_id={feed['run_id']}&" in feed["grafana"]
            assert charts.locator("#chart-ttft canvas").count() == 1
            page.get_by_role("button", name="Stop").click()
            wait_for(lambda: chart_feed(charts)["state"] == "stopped", 20, "the run to stop")
            time.sleep(2.5)  # one more poll of the page after the last report
            feed = chart_feed(charts)
            notes = charts.locator("#lines").inner_text()
            charts.screenshot(path=str(ARTIFACTS / "llm-charts.png"), full_page=True)
            page.get_by_role("tab", name="Download Data").click()
            with page.expect_download() as download:
                page.get_by_text("Download LLM statistics CSV").click()
            csv_text = Path(download.value.path()).read_text()
            html = charts.content() + page.content()
            summary = json.loads(page.context.request.get(locust_ui + "/llm/summary.json").text())
        finally:
            browser.close()
    assert SECRET not in html and SECRET not in csv_text
    assert "support_chat:" in notes and "turn 1:" in notes, "the scenario results are on the page"
    check_feed_against_summary(feed, summary)
    check_csv(csv_text, summary)


def _count(row, seen: list[int]) -> int | None:
    cells = row.get_by_role("cell").all_inner_texts()
    if len(cells) < 2 or not cells[1].isdigit():
        return None
    n = int(cells[1])
    return n if n > (seen[-1] if seen else 0) else None


def check_feed_against_summary(feed: dict, summary: dict) -> None:
    """The charts' points add up to the LLM statistics; the form's threshold and max_tokens took effect."""
    series = feed["timeline"]["series"]
    assert summary["meta"]["run_id"] == feed["run_id"]
    for r in [*summary["rows"], summary["total"]]:
        name = r["name"]
        assert sum(series[name]["requests"]) == r["count"], name
        assert sum(series[name]["completion_tokens"]) == r["completion_tokens"], name
        assert {k: sum(v) for k, v in series[name]["errors"].items()} == r["errors"], name
    assert max(series["Aggregated"]["users"]) == 4
    assert [t["expression"] for t in feed["thresholds"] if not t["origin"]] == ["ttft p99 < 1ms"], feed["thresholds"]
    assert summary["total"]["completion_tokens"] <= 24 * summary["total"]["count"], "max_tokens 24 from the form"
    assert feed["verdict"]["status"] in ("fail", "invalid"), feed["verdict"]


def check_csv(text: str, summary: dict) -> None:
    rows = list(csv.DictReader(io.StringIO(text)))
    by_name = {r["Scenario @ endpoint"]: r for r in rows}
    assert set(by_name) == {r["name"] for r in summary["rows"]} | {"Aggregated"}
    for r in summary["rows"]:
        assert int(by_name[r["name"]]["Requests"]) == r["count"]


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium not installed (scripts/test.sh installs it)")
def test_the_cache_probes_table_on_the_charts_page() -> None:
    """A 2 s cache probe against the mock's response cache, started by itself: once the run has stopped, the charts
    page shows "what busts the cache" as a table whose cells are the summary's, and the notes do not repeat it."""
    from playwright.sync_api import sync_playwright

    port = free_port()
    mock = "ttft_ms=20,itl_ms=2,response_cache=model+messages+temperature"
    args = ("--web-host", "127.0.0.1", "--web-port", str(port), "--autostart", "-u", "1", "-r", "1", "-t", "2s")
    cmd = locust_cmd(
        *args, "--llm-mock", mock, "--cache-probe-doc-tokens", "256", locustfile="locustfiles/cache_probe.py"
    )
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(base + "/llm/charts.json")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(base + "/llm/charts", timeout=20_000)
                wait_for(lambda: (chart_feed(page) or {}).get("state") == "stopped", 30, "the run to stop")
                summary = json.loads(page.context.request.get(base + "/llm/summary.json").text())
                found = summary["scenarios"]["cache_probe"]
                cells = wait_for(lambda: probe_table(page, found), 10, "the table as the summary has it")
                notes = page.locator("#lines").inner_text()
                page.screenshot(path=str(ARTIFACTS / "llm-charts-cache-probe.png"), full_page=True)
            finally:
                browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert found["busts"]["response_cache"] == ["temperature", "temperature_float", "prefix_whitespace", "prefix_order"]
    none, temperature = (str(v["requests"]) for v in found["variations"][:2])
    assert cells[1][:3] == ["none", none, f"{none} kept"] and cells[2][:3] == ["temperature", temperature, "0 BUSTS"]
    assert "what busts the cache" not in notes and "LLM summary of run" in notes


def probe_table(page, found: dict) -> list[list[str]] | None:
    """The charts page's "what busts the cache" table, once its cells are those of the summary's section."""
    from loadlib.metrics import cache_probe_results as probe

    table = page.locator("#scenario-tables table")
    cells = [r.locator("th, td").all_inner_texts() for r in table.locator("tr").all()] if table.count() else []
    return cells if cells == [probe.TABLE_HEADER, *probe.table_rows(found)] else None
