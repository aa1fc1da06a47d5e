"""The run report from a real run (docs/reports.md, "Run report"): a short headless Locust run against the embedded
mock writes its records and summary, `python -m loadlib report` builds the page, its TTFT and E2E percentiles (exact,
from the records) agree with the summary's histograms within their 0.1 %, and Debian's Chromium, with every request
but the file itself refused, draws every plot. A screenshot lands in test-artifacts/ (git-ignored)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.integration.locust_runs import ROOT, headless, load, locust_cmd, run

pytestmark = pytest.mark.integration
CHROMIUM = Path("/usr/bin/chromium")
PLOTS = 9
REL, ABS_MS = 1e-3, 1e-3  # the histograms' precision, and the summary's rounding to 3 decimals


def report_rows(html: str) -> dict[str, list[str]]:
    """The report's table per scenario and endpoint, as {name: cells after the name}."""
    start = html.index("<th>scenario @ endpoint</th>")
    body = html[start : html.index("</table>", start)]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)]
    return {c[0]: c[1:] for c in cells}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, dict]:
    """A 4-user, 4-second run with fast mock answers (a few hundred requests), then its report."""
    tmp = tmp_path_factory.mktemp("report-run")
    summary, records, out = tmp / "summary.json", tmp / "records.jsonl", tmp / "report.html"
    at_end = tmp / "at-end.html"
    p = run(
        locust_cmd(
            *headless(4, 4),
            *("--llm-summary", str(summary), "--llm-records", str(records), "--llm-report", str(at_end)),
            "--llm-mock",
            "ttft_ms=10,itl_ms=2,output_tokens=16",
        )
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert f"run report written to {at_end}" in p.stdout
    r = run([sys.executable, "-m", "loadlib", "report", str(records), str(summary), "-o", str(out)], timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert report_rows(at_end.read_text()) == report_rows(out.read_text()), "--llm-report: the same table"
    assert at_end.read_text().count("<svg") == PLOTS
    return out, load(summary)


def test_report_percentiles_agree_with_the_runs_summary(built) -> None:
    out, summary = built
    rows = report_rows(out.read_text())
    theirs = [*summary["rows"], summary["total"]]
    assert set(rows) == {r["name"] for r in theirs}
    for row in theirs:
        cells = rows[row["name"]]
        assert int(cells[0]) == row["count"] > 20 and int(cells[1]) == row["errors_total"]
        lat = row["latency_ms"]
        ours = {
            ("ttft", "p50"): cells[2],
            ("ttft", "p95"): cells[3],
            ("e2e", "p50"): cells[5],
            ("e2e", "p95"): cells[6],
        }
        for (metric, p), text in ours.items():
            given = lat[metric][p]
            assert abs(float(text.split()[0]) - given) <= REL * given + ABS_MS, (row["name"], metric, p, text, given)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium not installed (scripts/test.sh installs it)")
def test_every_plot_shows_in_chromium_with_the_network_refused(built) -> None:
    from playwright.sync_api import sync_playwright

    out, _ = built
    url = out.resolve().as_uri()
    refused: list[str] = []

    def only_the_file(route) -> None:
        if route.request.url == url:
            route.continue_()
        else:
            refused.append(route.request.url)
            route.abort()

    artifacts = ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            context = browser.new_context(viewport={"width": 1300, "height": 1000})
            context.route("**/*", only_the_file)
            page = context.new_page()
            page.goto(url, timeout=20_000)
            plots = page.locator("figure > svg")
            assert plots.count() == PLOTS
            for i in range(PLOTS):
                box = plots.nth(i).bounding_box()
                assert plots.nth(i).is_visible() and box and box["width"] > 300 and box["height"] > 150, i
            assert page.locator("figcaption").count() == PLOTS
            page.screenshot(path=str(artifacts / "run-report.png"), full_page=True)
        finally:
            browser.close()
    assert refused == [], "the page asked for nothing but itself"
