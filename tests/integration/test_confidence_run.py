"""Percentile confidence intervals through a real run (docs/statistics.md): a master and 2 workers against the
embedded mock with jittered TTFT. The master's intervals, from the workers' merged histograms, equal those of all
the records pooled into one histogram; the console, the summary JSON, the HTML report and the web UI's LLM table show
the same intervals (the report's, from the records' exact order statistics, within the histograms' precision). The
load is steady (evenly spaced arrivals), so the same run checks the web UI's charts on a master: each complete 2 s
bucket holds what the workers' records say ended in it, and tokens/s is flat, whatever the phase of their 3 s reports
(docs/webui.md)."""

from __future__ import annotations

import json
import math
import re
import statistics
import time
import urllib.request
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from loadlib.histogram import RELATIVE_ERROR, Histogram
from loadlib.metrics.confidence import quantile_interval
from loadlib.metrics.summary import with_interval
from tests.integration.locust_runs import free_port, load, run_distributed

pytestmark = pytest.mark.integration
MOCK = "ttft_ms=40,ttft_jitter_ms=30,itl_ms=2,output_tokens=8"
METRICS = ("ttft", "e2e")
RUN_S, RATE = 12, 50  # requests/s, evenly spaced: 8 output tokens each, 400 tokens/s


def web_get(web: int, path: str) -> Any:
    """A JSON route of the web UI, None while it does not answer."""
    with suppress(OSError, ValueError), urllib.request.urlopen(f"http://127.0.0.1:{web}{path}", timeout=5) as r:
        return json.load(r)
    return None


def web_llm_rows(web: int) -> tuple[str, list[dict[str, Any]]]:
    """(the runner's state, the LLM tab's rows) from the web UI's poll, ("", []) while it does not answer."""
    payload = web_get(web, "/stats/requests")
    if payload is None:
        return "", []
    tabs = {t["key"]: t["data"] for t in payload.get("extended_stats") or []}
    return str(payload.get("state")), list(tabs.get("llm") or [])


def watch_web_ui(web: int, seen: dict[str, Any]) -> None:
    """Keep the LLM table and the charts' feed the web UI shows once the run has stopped (the workers' last reports
    merged), polling until the master has quit (its web UI stops answering); the charts' feed is read every 1.2 s
    while the test runs too, as the charts page does."""
    deadline = time.monotonic() + 60
    silent = polls = 0
    while time.monotonic() < deadline and silent < 3:
        state, rows = web_llm_rows(web)
        silent = silent + 1 if not rows and "rows" in seen else 0
        if (state == "stopped" and rows) or polls % 4 == 0:
            seen["charts"] = web_get(web, "/llm/charts.json") or seen.get("charts")
        if state == "stopped" and rows:
            seen["rows"] = rows
        polls += 1
        time.sleep(0.3)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("confidence")
    web = free_port()
    seen: dict[str, Any] = {}
    out: list[str] = []
    rc, err, _ = run_distributed(
        *("-u", "10", "-r", "10", "-t", f"{RUN_S}s", "--llm-mock", MOCK, "--run-id", "ci-run"),
        *("--arrival-rate", str(RATE), "--arrival-process", "constant"),
        *("--llm-summary", str(tmp / "s.json"), "--llm-records", str(tmp / "records-{worker}.jsonl")),
        *("--llm-report", str(tmp / "report.html")),
        *("--llm-confidence", "0.9", "--llm-threshold-ci", "--llm-threshold", "ttft p95 < 10s"),
        timeout=120,
        during=lambda: watch_web_ui(web, seen),
        mode=("--autostart", "--autoquit", "2", "--web-host", "127.0.0.1", "--web-port", str(web)),
        stdout=out,
    )
    assert rc == 0 and (tmp / "s.json").exists(), err[-3000:]
    yield {"summary": load(tmp / "s.json"), "out": "".join(out), "web": seen.get("rows") or [], "tmp": tmp, **seen}


def pooled(tmp: Path) -> dict[tuple[str, str], dict[str, Histogram]]:
    """Every worker's records pooled into one histogram per (scenario, endpoint) and metric, and the total."""
    out: dict[tuple[str, str], dict[str, Histogram]] = {}
    files = sorted(tmp.glob("records-*.jsonl"))
    assert len(files) == 2, files
    for line in (ln for f in files for ln in f.read_text().splitlines() if ln.strip()):
        r = json.loads(line)
        if r.get("status") != "ok":
            continue
        for key in ((r["scenario"], r["endpoint"]), ("", "")):
            for metric in METRICS:
                out.setdefault(key, {}).setdefault(metric, Histogram()).record(r[f"{metric}_ms"])
    return out


def test_the_masters_merged_intervals_equal_the_pooled_records(ran: dict[str, Any]) -> None:
    s = ran["summary"]
    hists = pooled(ran["tmp"])
    rows = [((r["scenario"], r["endpoint"]), r) for r in s["rows"]] + [(("", ""), s["total"])]
    assert s["total"]["latency_ms"]["ttft"]["count"] >= 60  # enough for a p95 bounded on both sides
    for key, row in rows:
        for metric in METRICS:
            block = row["latency_ms"][metric]
            assert block["count"] == hists[key][metric].count
            for p in (50, 95, 99):
                mine = quantile_interval(hists[key][metric], p, s["confidence"]["level"])
                assert mine is not None and block[f"p{p}_ci"] == mine.as_list(), (key, metric, p)
                low, high = block[f"p{p}_ci"]
                assert (low is None or low <= block[f"p{p}"]) and (high is None or block[f"p{p}"] <= high)


def test_the_level_and_the_interval_judgement_reach_the_master(ran: dict[str, Any]) -> None:
    s = ran["summary"]
    assert s["confidence"]["level"] == 0.9 and "90 % confidence interval" in ran["out"]
    (result,) = s["thresholds"]
    assert result["passed"] is True and result["interval"] == s["total"]["latency_ms"]["ttft"]["p95_ci"]
    assert "its 90 % interval" in result["reason"] and s["verdict"]["exit_code"] == 0


def test_console_json_report_and_web_ui_show_the_same_intervals(ran: dict[str, Any]) -> None:
    s, out, web = ran["summary"], ran["out"], ran["web"]
    report = (ran["tmp"] / "report.html").read_text()
    web_rows = {r["row"]: r for r in web}
    assert set(web_rows) == {r["name"] for r in [*s["rows"], s["total"]]}, web
    for row in [*s["rows"], s["total"]]:
        shown = {m: with_interval(row["latency_ms"][m], "p95") for m in METRICS}  # e.g. "48.1 [46.9–49.5]"
        line = next(ln for ln in out.splitlines() if ln.startswith(row["name"] + " "))
        assert shown["ttft"] in line and shown["e2e"] in line, (line, shown)
        assert web_rows[row["name"]]["ttft"].split(" / ")[1] == shown["ttft"]
        assert web_rows[row["name"]]["e2e"].split(" / ")[1] == shown["e2e"]
        cells = report_cells(report)[row["name"]]
        for metric, cell in (("ttft", cells[3]), ("e2e", cells[6])):
            low, high = (float(v) for v in re.findall(r"\[([\d.]+)–([\d.]+)\]", cell)[0])
            want_low, want_high = row["latency_ms"][metric]["p95_ci"]
            assert abs(low - want_low) <= 2 * RELATIVE_ERROR * want_low + 0.05, (metric, cell, want_low)
            assert abs(high - want_high) <= 2 * RELATIVE_ERROR * want_high + 0.05, (metric, cell, want_high)
    assert "p95 interval" not in report, "the report found no interval that disagrees with the summary's"


def report_cells(html: str) -> dict[str, list[str]]:
    start = html.index("<th>scenario @ endpoint</th>")
    body = html[start : html.index("</table>", start)]
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body)]
    return {c[0]: c[1:] for c in cells}


def record_ends(tmp: Path) -> list[tuple[float, int]]:
    """Ground truth: when each of the workers' records ended, with its output tokens."""
    out = []
    for line in (ln for f in sorted(tmp.glob("records-*.jsonl")) for ln in f.read_text().splitlines() if ln.strip()):
        r = json.loads(line)
        end = r["start_unix_ns"] / 1e9 + (r.get("e2e_ms") or 0.0) / 1000
        out.append((end, r.get("completion_tokens") or r.get("completion_tokens_est") or 0))
    return out


def test_the_charts_on_a_master_hold_what_ended_in_each_bucket_and_a_steady_load_is_flat(ran: dict[str, Any]) -> None:
    """Merged by the time each worker's report arrived (every 3 s into 2 s buckets) the tokens/s zigzagged: a bucket
    in three got no report from a worker, the others 1.5 times its rate. The steady part: the complete buckets
    wholly inside the records' span (from the first request's end to the stop, where the last requests end)."""
    feed = (ran.get("charts") or {}).get("timeline")
    assert feed, "the charts' feed was read once the run had stopped"
    total, step = feed["series"]["Aggregated"], feed["step_s"]
    ends = record_ends(ran["tmp"])
    truth: dict[float, int] = {}
    for end, tokens in ends:
        truth[math.floor(end / step) * step] = truth.get(math.floor(end / step) * step, 0) + tokens
    first, last = min(e for e, _ in ends), max(e for e, _ in ends)
    points = zip(total["t"], total["completion_tokens"], total["tokens_per_s"], total["complete"], strict=True)
    steady = [(t, n, rate) for t, n, rate, done in points if done and first <= t and t + step <= last]
    assert len(steady) >= 3, total
    median = statistics.median(rate for _, _, rate in steady)
    assert median == pytest.approx(RATE * 8, rel=0.1), "8 output tokens a request"
    assert all(abs(rate - median) <= 0.25 * median for _, _, rate in steady), steady
    for t, tokens, _ in steady:
        assert abs(tokens - truth.get(t, 0)) <= 0.05 * truth.get(t, 0) + 3 * 8, (t, tokens, truth)
    assert sum(total["completion_tokens"]) == ran["summary"]["total"]["completion_tokens"]
    assert sum(total["requests"]) == ran["summary"]["total"]["count"]
