"""The start form, the LLM tab and the charts page of chat.py in a real browser (docs/webui.md): the form offers only
the options that apply, labelled and explained; a start from it works with the hidden fields left alone; the tab lists
Aggregated last and fits 1,400 px; at a steady 10 ms TPOT the charts' value axes are not clipped, do not turn a
0.01 ms wobble into dips, and the legends show the latest values without hovering. Screenshots go to test-artifacts/
(start-form.png, charts.png). About 25 s."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from urllib.parse import parse_qs

import pytest

from tests.integration.locust_runs import ROOT, env, locust_cmd, stop
from tests.integration.test_webui import ARTIFACTS, BROWSER_ARGS, CHROMIUM, free_port, wait_for, wait_http

pytestmark = pytest.mark.integration
CHAT_FIELDS = [  # chat.py: run-wide options only, most used first (loadlib/locust/webform.py)
    "llmModel",
    "llmMaxTokens",
    "llmThreshold",
    "llmRequestSlo",
    "scenarioSlo",
    "llmAbortOnFail",
    "llmAbortDelay",
    "llmProvider",
    "arrivalRate",
    "arrivalProcess",
    "llmUserPhase",
    "llmThinkTime",
    "llmWarmup",
    "llmApiKeyEnv",
    "llmEndpointName",
    "runId",
    "llmColdConnect",
    "llmKeepaliveIdleS",
    "llmEstimateEvery",
    "llmConfidence",
    "llmThresholdCi",
    "llmLagThresholdMs",
    "llmCpuThreshold",
]
FIELDS_JS = """() => {
  const head = [...document.querySelectorAll('.MuiAccordionSummary-root')]
    .find((e) => e.textContent.includes('Custom parameters'));
  const firstText = (node) => node ? [...node.childNodes].find((c) => c.nodeType === 3 && c.nodeValue.trim()) : null;
  return [...head.closest('.MuiAccordion-root').querySelectorAll('input[name], select[name]')].map((input) => {
    const box = input.closest('.MuiFormControl-root') || input.closest('.MuiFormControlLabel-root');
    const label = box.querySelector('label.MuiInputLabel-root') || box.querySelector('.MuiFormControlLabel-label');
    const help = box.querySelector('.llm-help');
    return { name: input.name, label: (firstText(label) || {}).nodeValue || '', help: help ? help.textContent : '' };
  });
}"""


@pytest.fixture
def chat_ui() -> Iterator[str]:
    """chat.py in the web UI against the embedded mock at a steady 10 ms per token, no login."""
    port = free_port()
    cmd = locust_cmd("--web-host", "127.0.0.1", "--web-port", str(port), "--llm-mock", "ttft_ms=20,itl_ms=10")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_http(base + "/")
        yield base
    finally:
        stop(proc)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium not installed (scripts/test.sh installs it)")
def test_start_form_llm_tab_and_charts_of_chat(chat_ui: str) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1200}).new_page()
            page.goto(chat_ui + "/", timeout=20_000)
            page.get_by_text("Custom parameters").click()
            wait_for(lambda: page.locator(".llm-help").count() == len(CHAT_FIELDS), 10, "every field's help")
            check_form(page.evaluate(FIELDS_JS))
            page.locator(".MuiCollapse-entered input[name=llmCpuThreshold]").wait_for(timeout=5_000)  # opened fully
            page.screenshot(path=str(ARTIFACTS / "start-form.png"), full_page=True)
            page.fill("input[name=userCount]", "4")
            page.fill("input[name=spawnRate]", "4")
            with page.expect_request("**/swarm") as swarm:
                page.get_by_role("button", name="Start").click()
            check_sent(swarm.value.post_data or "")
            page.get_by_role("tab", name="LLM").click(timeout=20_000)
            check_llm_tab(page)
            charts = page.context.new_page()
            charts.set_viewport_size({"width": 900, "height": 1200})
            charts.goto(chat_ui + "/llm/charts", timeout=20_000)
            wait_for(lambda: charts.evaluate("window.llmCharts.points") >= 4, 30, "four chart points")
            check_charts(charts)
            charts.screenshot(path=str(ARTIFACTS / "charts.png"), full_page=True)
            page.get_by_role("button", name="Stop").click()
        finally:
            browser.close()


def check_form(fields: list[dict]) -> None:
    """Only chat.py's options, in order; short labels, none '%%' nor generated ('Llm ...'); each with its help."""
    assert [f["name"] for f in fields] == CHAT_FIELDS, [f["name"] for f in fields]
    for f in fields:
        assert f["label"] and len(f["label"]) <= 40 and not f["label"].startswith("Llm "), f
        assert "%%" not in f["label"] + f["help"] and f["help"], f
    by_name = {f["name"]: f for f in fields}
    assert by_name["llmMaxTokens"]["label"] == "Max tokens"
    assert "CPU % above" in by_name["llmCpuThreshold"]["help"]


def check_sent(body: str) -> None:
    """The start sends the fields shown and nothing hidden: a hidden option keeps its command-line value."""
    sent = set(parse_qs(body, keep_blank_values=True))
    assert {"llm_model", "llm_max_tokens", "llm_cpu_threshold"} <= sent, sent
    assert not sent & {"llm_mock", "influx_url", "chat_turns", "llm_timeout_ttft", "data_seed"}, sent


def check_llm_tab(page) -> None:
    """The start from the form worked (requests without errors against the mock), Aggregated is the last row, and
    the last column (Client) is inside the 1,400 px window."""

    def names() -> list[str] | None:
        rows = page.locator("tbody tr").all()
        cells = [r.locator("td").all_inner_texts() for r in rows]
        ready = len(cells) == 2 and all(len(c) > 2 and c[1].isdigit() and int(c[1]) > 0 for c in cells)
        return [c[0] for c in cells] if ready else None

    assert wait_for(names, 30, "the LLM tab's rows") == ["chat @ mock", "Aggregated"]
    assert page.locator("tbody tr").last.locator("td").nth(2).inner_text() == "0", "no errors"
    header = page.get_by_role("columnheader", name="Client").bounding_box()
    assert header and header["x"] + header["width"] <= 1400, header


def check_charts(charts) -> None:
    """TPOT's value axis: from 0, round top above 10, every tick label fits the axis; legends show numbers."""
    axis = charts.evaluate("window.llmCharts.yAxis('chart-tpot')")
    assert axis["min"] == 0 and 10 < axis["max"] <= 15, axis
    assert axis["widest"] <= axis["room"] and max(float(v) for v in axis["labels"]) >= 10, axis
    legend = charts.evaluate(
        "[...document.querySelectorAll('.chart .u-legend')].map((l) => [...l.querySelectorAll('.u-value')]"
        ".map((v) => v.textContent))"
    )
    assert all(v not in ("--", "") for values in legend for v in values), legend
    tpot = float(legend[1][1])
    assert 9.5 <= tpot <= 10.5, legend
    notes = charts.evaluate(
        "(() => { const p = document.getElementById('lines'); return [p.scrollWidth, p.clientWidth] })()"
    )
    assert notes[0] <= notes[1] and charts.evaluate("document.documentElement.scrollWidth") <= 900, notes
    assert charts.locator("#clients tbody tr").count() >= 1, "the local node's client verdict"
