"""The LLM tab of the Locust web UI, in a real browser (Debian's Chromium driven by Playwright, no download)."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.parse
import urllib.request
from contextlib import closing
from pathlib import Path

import pytest

from tests.integration.locust_runs import ROOT, env, locust_cmd

pytestmark = pytest.mark.integration
CHROMIUM = Path("/usr/bin/chromium")
SECRET = "sk-this-key-must-never-reach-the-ui-0123456789"


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


@pytest.fixture
def locust_ui():
    port = free_port()
    proc = subprocess.Popen(
        locust_cmd("--web-host", "127.0.0.1", "--web-port", str(port), "--llm-api-key-env", "LOADTEST_SECRET_KEY"),
        cwd=ROOT,
        env=env(LOADTEST_SECRET_KEY=SECRET),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(base + "/")
        yield base
    finally:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        assert SECRET not in out, "the API key must never reach the logs"


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium not installed (scripts/test.sh installs it)")
def test_llm_tab_shows_live_metrics_without_secrets(locust_ui, tmp_path):
    from playwright.sync_api import sync_playwright

    data = urllib.parse.urlencode({"user_count": 4, "spawn_rate": 4}).encode()
    with urllib.request.urlopen(locust_ui + "/swarm", data=data, timeout=10) as r:
        assert r.status == 200
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 900})
            page.goto(locust_ui + "/", timeout=20_000)
            page.get_by_role("tab", name="LLM").click(timeout=20_000)
            row = page.get_by_role("row").filter(has_text="chat @ mock")
            row.wait_for(timeout=30_000)
            deadline = time.monotonic() + 30
            cells: list[str] = []
            while time.monotonic() < deadline:
                cells = row.get_by_role("cell").all_inner_texts()
                if len(cells) > 4 and cells[3] not in ("-", "", "0"):
                    break
                time.sleep(0.5)
            page.screenshot(path=str(tmp_path / "llm-tab.png"), full_page=True)
            html = page.content()
        finally:
            browser.close()
    assert float(cells[3]) > 0, f"TTFT p50 shows a number: {cells}"
    headers = [h.lower() for h in page_headers(html)]
    assert any("ttft p50" in h for h in headers)
    assert SECRET not in html
    with urllib.request.urlopen(locust_ui + "/stats/requests", timeout=10) as r:
        assert SECRET not in r.read().decode()


def page_headers(html: str) -> list[str]:
    import re

    return re.findall(r"<th[^>]*>(.*?)</th>", html)
