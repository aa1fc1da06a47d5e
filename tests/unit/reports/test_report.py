"""The run report from a small hand-built run whose counts, percentiles, tokens and cost are known exactly: the
table's numbers, every plot with its caption, nothing that needs the network, and the verdict, thresholds and client
health from the summary (docs/reports.md, "Run report").

The helpers here (records as RequestRecords written by the real `--llm-records` writer, a summary built by the real
statistics) are shared by the other test_report_* files."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from loadlib.errors import ErrorClass
from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary
from loadlib.outputs.records import record_line
from loadlib.records.record import RequestRecord
from loadlib.reports.records_in import read_records
from loadlib.reports.report import build_report
from loadlib.reports.run_table import table_rows

ROOT = Path(__file__).resolve().parents[3]
T0_NS = 1_796_000_000_000_000_000
DURATION_S = 10.0
PLOTS = 9
SVG_NAMESPACES = {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"}


def attempt(i: int, scenario: str = "chat", endpoint: str = "a", **kw: Any) -> RequestRecord:
    """A successful streamed attempt i, started i × 0.5 s after T0: TTFT 10·(i+1) ms, E2E TTFT + 100 ms, 10 output
    tokens, 100 prompt tokens, $0.001; any field overridden by `kw`."""
    ttft = 10.0 * (i + 1)
    fields: dict[str, Any] = {
        "run_id": "run-1",
        "scenario": scenario,
        "endpoint": endpoint,
        "provider": "openai",
        "model": "m",
        "worker_id": f"w{i % 2}",
        "request_id": f"w{i % 2}-{i}",
        "start_unix_ns": T0_NS + i * 500_000_000,
        "ttft_ms": ttft,
        "e2e_ms": ttft + 100.0,
        "itl_ms": (10.0,) * 9,
        "tpot_ms": 100.0 / 9,
        "stream_tpot_ms": 10.0,
        "output_events": 10,
        "prompt_tokens": 100,
        "completion_tokens": 10,
        "cost_usd": 0.001,
    }
    fields.update(kw)
    return RequestRecord(**fields)


def failed(i: int, status: ErrorClass, **kw: Any) -> RequestRecord:
    """A failed attempt: no TTFT, no output, no cost unless given."""
    base = {"ttft_ms": None, "e2e_ms": 5.0, "itl_ms": (), "tpot_ms": None, "stream_tpot_ms": None}
    base |= {"output_events": 0, "completion_tokens": None, "prompt_tokens": None, "cost_usd": None, "status": status}
    return attempt(i, **(base | kw))


def known_run() -> list[RequestRecord]:
    """chat @ a: 10 successes (TTFT 10..100 ms), a rate-limited attempt and a broken stream billed $0.0005 with 7
    estimated output tokens; long_document @ b: 4 successes (TTFT 1000..4000 ms, 5,000 prompt tokens)."""
    chat = [attempt(i) for i in range(10)]
    chat.append(failed(10, ErrorClass.RATE_LIMITED))
    chat.append(failed(11, ErrorClass.STREAM_BROKEN, completion_tokens_est=7, cost_usd=0.0005, itl_ms=(1.0, 2.0)))
    docs = [doc(12 + k, ttft_ms=1000.0 * (k + 1), e2e_ms=1000.0 * (k + 1) + 500) for k in range(4)]
    return chat + docs


def doc(i: int, **kw: Any) -> RequestRecord:
    return attempt(i, "long_document", "b", **({"prompt_tokens": 5000} | kw))


def write_jsonl(path: Path, records: Iterable[RequestRecord]) -> Path:
    """Lines exactly as `--llm-records` writes them."""
    path.write_bytes(b"".join(orjson.dumps(record_line(r)) + b"\n" for r in records))
    return path


def summary_of(records: Iterable[RequestRecord], duration_s: float = DURATION_S, **extra: Any) -> dict[str, Any]:
    """The summary loadlib's own statistics build from these records (JSON round trip included)."""
    stats = LLMStats()
    for r in records:
        stats.add(r)
    meta = {"run_id": "run-1", "host": "http://mock/v1", "provider": "openai", "model": "m"}
    meta |= {"started_at": T0_NS / 1e9, "stopped_at": T0_NS / 1e9 + duration_s, "duration_s": duration_s}
    summary = build_summary(stats, duration_s, None, meta)
    summary.update(extra)
    return orjson.loads(orjson.dumps(summary))


def report_of(tmp_path: Path, records: list[RequestRecord], summary: dict[str, Any] | None) -> str:
    rec = read_records([write_jsonl(tmp_path / "records.jsonl", records)])
    return build_report(rec, summary, ["records.jsonl"])


def table_cells(html: str) -> dict[str, list[str]]:
    """The first table whose header starts with "scenario @ endpoint", as {row name: cells}."""
    start = html.index("<th>scenario @ endpoint</th>")
    body = html[start : html.index("</table>", start)]
    rows = re.findall(r"<tr>(.*?)</tr>", body)
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in rows]
    return {c[0]: c[1:] for c in cells}


# -- the table ---------------------------------------------------------------------------------------------------------


def test_table_holds_the_known_counts_percentiles_tokens_and_cost(tmp_path):
    rec = read_records([write_jsonl(tmp_path / "r.jsonl", known_run())])
    rows = {r.name: r for r in table_rows(rec, DURATION_S)}
    chat, docs, total = rows["chat @ a"], rows["long_document @ b"], rows["Aggregated"]
    assert (chat.requests, chat.errors, chat.errors_by_class) == (12, 2, {"rate_limited": 1, "stream_broken": 1})
    assert chat.ttft == (50.0, 100.0, 100.0)  # nearest rank of 10..100: ceil(5) = 5th, ceil(9.5) = 10th
    assert chat.e2e == (150.0, 200.0)  # successes only: the failures' 5 ms E2E is not in it
    assert chat.tpot_p50 == 100.0 / 9 and chat.stream_tpot_p50 == 10.0
    assert chat.output_tokens == 107  # 10 × 10 from the server, 7 estimated for the broken stream
    assert chat.tokens_per_s == 10.7
    assert abs(chat.cost_usd - 0.0105) < 1e-12  # the broken stream was billed
    assert docs.ttft == (2000.0, 4000.0, 4000.0) and docs.e2e == (2500.0, 4500.0)
    assert (total.requests, total.errors) == (16, 2)
    assert total.ttft == (70.0, 4000.0, 4000.0)  # 14 successes: ranks ceil(7) = 7 and ceil(13.3) = 14
    assert abs(total.cost_usd - 0.0145) < 1e-12


def test_html_table_shows_the_same_numbers(tmp_path):
    cells = table_cells(report_of(tmp_path, known_run(), None))
    # 10 successes: the p95's 95 % interval starts at the 8th smallest and has no upper bound
    assert cells["chat @ a"][:7] == ["12", "2", "50.000", "100.000 [80.0–?]", "100.000", "150.000", "200.000 [180–?]"]
    assert cells["long_document @ b"][2:4] == ["2000.00", "4000.00 [3000–?]"]
    assert cells["chat @ a"][-1] == "0.010500"


# -- the page ----------------------------------------------------------------------------------------------------------


def judged_summary(records: list[RequestRecord]) -> dict[str, Any]:
    """A summary with a failed verdict, three thresholds (pass, FAIL, not judged) and a saturated worker."""
    client = {"saturated": False, "reasons": [], "loop_lag_p99_ms": 4.25, "cpu_p90_percent": 31.0, "warnings": []}
    hot = {"saturated": True, "reasons": ["loop lag p99 81.2 ms > 50 ms"], "loop_lag_p99_ms": 81.2}
    hot |= {"cpu_p90_percent": 97.5, "warnings": []}
    thresholds = [
        threshold("ttft p95 < 5s", "<", 5000.0, "s", 4000.0, True),
        threshold("error_rate < 1%", "<", 0.01, "%", 0.125, False),
        threshold("tpot p99 < 50ms", "<", 50.0, "ms", None, None, reason="too few samples (10 < 100)"),
    ]
    verdict = {"status": "fail", "exit_code": 99, "reasons": ["error_rate < 1% failed: 12.5 %"]}
    return summary_of(records, client=client, clients={"w1": hot}, thresholds=thresholds, verdict=verdict)


def threshold(expr: str, op: str, limit: float, unit: str, value: float | None, passed: bool | None, **kw: Any):
    return {
        "expression": expr,
        "metric": expr.split()[0],
        "aggregate": None,
        "tags": {},
        "op": op,
        "limit": limit,
        "unit": unit,
        "value": value,
        "passed": passed,
        "samples": 16,
        "reason": kw.get("reason", ""),
    }


def test_every_plot_is_inline_svg_with_a_caption_and_nothing_needs_the_network(tmp_path):
    records = known_run()
    html = report_of(tmp_path, records, judged_summary(records))
    assert html.count("<svg") == html.count("</svg>") == PLOTS
    assert html.count("<figure>") == html.count("<figcaption>") == PLOTS
    assert "<script" not in html.lower() and "<link" not in html.lower() and "@import" not in html
    assert set(re.findall(r"https?://[^\s\"'<>)]*", html)) <= SVG_NAMESPACES
    assert 'src="http' not in html and 'href="http' not in html
    for title in (
        "TTFT CDF",
        "E2E CDF",
        "Inter-token latency",
        "TTFT over time",
        "Output tokens per second",
        "Requests in flight",
        "Errors by class over time",
        "Prompt tokens against TTFT",
        "Cumulative cost",
    ):
        assert title in html, title


def test_verdict_thresholds_and_client_health_come_from_the_summary(tmp_path):
    records = known_run()
    html = report_of(tmp_path, records, judged_summary(records))
    assert '<strong class="fail">Verdict: FAIL (exit code 99)</strong>' in html
    assert "<li>error_rate &lt; 1% failed: 12.5 %</li>" in html
    assert re.search(
        r"<td>ttft p95 &lt; 5s</td><td class=\"num\">4.0 s</td><td class=\"num\">&lt; 5 s</td>"
        r"<td class=\"pass\">pass</td>",
        html,
    )
    assert re.search(r"<td>error_rate &lt; 1%</td><td class=\"num\">12.5 %</td>.*?<td class=\"fail\">FAIL</td>", html)
    assert '<td class="muted">not judged</td><td class="num">16</td><td>too few samples (10 &lt; 100)</td>' in html
    assert re.search(
        r"<td>run</td><td class=\"pass\">no</td><td class=\"num\">4.2</td><td class=\"num\">31.0</td>", html
    )
    assert re.search(
        r"<td>w1</td><td class=\"fail\">yes</td><td class=\"num\">81.2</td><td class=\"num\">97.5</td>"
        r"<td>loop lag p99 81.2 ms &gt; 50 ms</td>",
        html,
    )
    assert "run-1" in html and "openai m at mock/v1" in html


def test_the_table_agrees_with_the_summary_built_from_the_same_records(tmp_path):
    records = known_run()
    summary = summary_of(records)
    html = report_of(tmp_path, records, summary)
    assert "Counts equal the summary&#x27;s" in html
    summary["rows"][0]["count"] += 1
    summary["total"]["latency_ms"]["ttft"]["p50"] = 75.0
    html = report_of(tmp_path, records, summary)
    assert "chat @ a: 12 requests in the records, 13 in the summary" in html
    assert "Aggregated: TTFT p50 70.000 ms here, 75.0 ms in the summary" in html


def test_without_a_summary_the_page_says_what_is_missing_and_still_draws_everything(tmp_path):
    html = report_of(tmp_path, known_run(), None)
    assert "No summary was given (--llm-summary)" in html
    assert "client health is only in the summary" in html
    assert html.count("<svg") == PLOTS
    assert "output tokens / the records&#x27; span" in html
    assert "Verdict:" not in html


def test_a_summary_without_verdict_says_no_verdict_was_recorded(tmp_path):
    records = known_run()
    html = report_of(tmp_path, records, summary_of(records))
    assert "The run recorded no verdict" in html
    assert "output tokens / the summary&#x27;s duration (10.0 s)" in html


def test_a_run_where_nothing_succeeded_still_builds_every_plot(tmp_path):
    records = [failed(i, ErrorClass.HTTP_5XX) for i in range(5)]
    html = report_of(tmp_path, records, None)
    assert html.count("<svg") == PLOTS
    assert "no successful attempts" in html and "nothing was priced" in html
    assert table_cells(html)["Aggregated"][:3] == ["5", "5", "-"]
