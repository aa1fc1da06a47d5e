"""The LLM tabs of the Locust web UI: live TTFT / TTFO / TPOT / ITL / E2E percentiles, tokens and cost per
scenario and endpoint, plus the client-saturation verdict; every node part's lines of the summary (scenario results,
user-visible requests, breaker states, drill figures, sink counts, warnings); and the failover events (breaker
transitions, failover, failback, hedges, drills), newest first. Data rides on the UI's own `/stats/requests` poll."""

from __future__ import annotations

import csv
import io
import json
import time
from typing import Any

from flask import Response, request

from loadlib.locust.webcharts import install_charts
from loadlib.locust.webform import install_form
from loadlib.locust.weblogin import install_login
from loadlib.metrics.summary import row_name, with_interval

TAB_KEY = "llm"
NOTES_KEY = "llm_notes"
EVENTS_KEY = "llm_events"
EVENT_COLUMNS = [
    ("time", "Time (UTC)"),
    ("worker", "Node"),
    ("kind", "Event"),
    ("endpoint", "Endpoint"),
    ("message", ""),
]
MAX_EVENT_ROWS = 200
COLUMNS = [
    ("name", "Scenario @ endpoint"),
    ("requests", "Requests"),
    ("errors", "Errors"),
    ("ttft_p50", "TTFT p50 (ms)"),
    ("ttft_p95", "TTFT p95 (ms)"),
    ("ttft_p95_low", "TTFT p95 interval low (ms)"),
    ("ttft_p95_high", "TTFT p95 interval high (ms)"),
    ("ttft_p99", "TTFT p99 (ms)"),
    ("ttfo_p95", "TTFO p95 (ms)"),
    ("tpot_p50", "TPOT p50 (ms)"),
    ("stream_tpot_p50", "Stream TPOT p50 (ms)"),
    ("stream_tail_p50", "Stream tail p50 (ms)"),
    ("itl_p95", "ITL p95 (ms)"),
    ("e2e_p50", "E2E p50 (ms)"),
    ("e2e_p95", "E2E p95 (ms)"),
    ("e2e_p95_low", "E2E p95 interval low (ms)"),
    ("e2e_p95_high", "E2E p95 interval high (ms)"),
    ("e2e_p99", "E2E p99 (ms)"),
    ("tokens_per_s", "Output tok/s"),
    ("prompt_tokens", "Prompt tokens"),
    ("completion_tokens", "Completion tokens"),
    ("cost_usd", "Cost (USD)"),
    ("client", "Client"),
]  # the CSV's columns: one number per column
TAB_COLUMNS = [
    ("row", "Scenario @ endpoint"),
    ("requests", "Requests"),
    ("errors", "Errors"),
    ("ttft", "TTFT p50 / p95 [interval] / p99 (ms)"),
    ("ttfo_p95", "TTFO p95 (ms)"),
    ("tpot_p50", "TPOT p50 (ms)"),
    ("stream", "Stream TPOT / tail p50 (ms)"),
    ("itl_p95", "ITL p95 (ms)"),
    ("e2e", "E2E p50 / p95 [interval] / p99 (ms)"),
    ("tokens_per_s", "Output tok/s"),
    ("tokens", "Tokens in / out"),
    ("cost_usd", "Cost (USD)"),
    ("client", "Client"),
]  # the tab's: a metric's percentiles share a cell, so the table fits a 1,400 px window
JOINED = {
    "ttft": ("ttft_p50", "ttft_p95_interval", "ttft_p99"),
    "stream": ("stream_tpot_p50", "stream_tail_p50"),
    "e2e": ("e2e_p50", "e2e_p95_interval", "e2e_p99"),
    "tokens": ("prompt_tokens", "completion_tokens"),
}


def _fmt(value: Any, digits: int = 1) -> Any:
    if value is None:
        return "-"
    if isinstance(value, float):
        return round(value, digits)
    return value


def table_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Flatten build_summary()'s rows into the tab's columns (pure, tested without a browser)."""
    verdict = summary.get("client") or {}
    client = "SATURATED" if verdict.get("saturated") else ("ok" if verdict else "-")
    if client == "ok" and verdict.get("warnings"):
        client = "ok (ITL tail blurred)"
    rows = []
    for row in [*summary.get("rows", []), summary.get("total")]:
        if not row:
            continue
        lat = row.get("latency_ms", {})

        def p(metric: str, q: str, lat: dict[str, Any] = lat) -> Any:
            return _fmt((lat.get(metric) or {}).get(q))

        def ci(metric: str, lat: dict[str, Any] = lat) -> dict[str, Any]:
            """The p95 with its interval as the console shows it (`180 [172–191]`), and the interval's ends."""
            block = lat.get(metric) or {}
            low, high = block.get("p95_ci") or (None, None)
            return {
                f"{metric}_p95_interval": with_interval(block, "p95"),
                f"{metric}_p95_low": _fmt(low),
                f"{metric}_p95_high": _fmt(high),
            }

        name = row.get("name") or row_name(row.get("scenario"), row.get("endpoint"))
        rows.append(
            {
                "name": name,
                "safe_name": name,
                "requests": row.get("count", 0),
                "errors": row.get("errors_total", 0),
                "ttft_p50": p("ttft", "p50"),
                "ttft_p95": p("ttft", "p95"),
                "ttft_p99": p("ttft", "p99"),
                "ttfo_p95": p("ttfo", "p95"),
                "tpot_p50": p("tpot", "p50", lat),
                "stream_tpot_p50": p("stream_tpot", "p50"),
                "stream_tail_p50": p("stream_tail", "p50"),
                "itl_p95": p("itl", "p95"),
                "e2e_p50": p("e2e", "p50"),
                "e2e_p95": p("e2e", "p95"),
                "e2e_p99": p("e2e", "p99"),
                "tokens_per_s": _fmt(row.get("output_tokens_per_s")),
                "prompt_tokens": row.get("prompt_tokens", 0),
                "completion_tokens": row.get("completion_tokens", 0),
                "cost_usd": _fmt(row.get("cost_usd"), 6),
                "client": client,
            }
            | ci("ttft")
            | ci("e2e")
        )
    return rows


def tab_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The LLM tab's rows: table_rows() with a metric's percentiles in one cell. Locust's extended tables sort rows
    by their `name` (so "Aggregated" came first): `name` is the row's place here, Aggregated last as in the console,
    and the scenario and endpoint are shown from `row`."""
    rows = []
    for place, full in enumerate(table_rows(summary)):
        row = {key: full.get(key) for key, _ in TAB_COLUMNS}
        row |= {key: " / ".join(str(full[part]) for part in parts) for key, parts in JOINED.items()}
        rows.append({**row, "row": full["name"], "name": f"{place:05d}", "safe_name": full["name"]})
    return rows


def install_tab(environment: Any, ctx: Any) -> None:
    """Add the LLM tab, its CSV and JSON routes to the web UI of `environment`, fed by the run context `ctx`."""
    web_ui = environment.web_ui
    web_ui.template_args["extended_tabs"] = [
        {"title": "LLM", "key": TAB_KEY},
        {"title": "Run notes", "key": NOTES_KEY},
        {"title": "Failover events", "key": EVENTS_KEY},
    ]
    web_ui.template_args["extended_tables"] = [
        {"key": TAB_KEY, "structure": [{"key": k, "title": t} for k, t in TAB_COLUMNS]},
        {"key": NOTES_KEY, "structure": [{"key": "note", "title": "Summary lines"}]},
        {"key": EVENTS_KEY, "structure": [{"key": k, "title": t} for k, t in EVENT_COLUMNS]},
    ]
    web_ui.template_args["extended_csv_files"] = [{"href": "/llm/csv", "title": "Download LLM statistics CSV"}]
    app, protect = web_ui.app, web_ui.auth_required_if_enabled
    install_login(web_ui)
    install_charts(web_ui, ctx)
    install_form(web_ui)

    @app.after_request
    def _add_llm_stats(response: Response) -> Response:
        if request.path != "/stats/requests" or response.status_code != 200:
            return response
        payload = response.get_json(silent=True)
        if not isinstance(payload, dict):
            return response
        summary = ctx.summary()
        notes = [{"note": line, "safe_name": line} for line in ctx.lines(summary) if line]
        payload["extended_stats"] = [
            {"key": TAB_KEY, "data": tab_rows(summary)},
            {"key": NOTES_KEY, "data": notes},
            {"key": EVENTS_KEY, "data": event_rows(summary, ctx.redact)},
        ]
        response.set_data(json.dumps(payload))
        return response

    @app.route("/llm/summary.json")
    @protect
    def _llm_summary() -> Response:
        return Response(ctx.redact(json.dumps(ctx.summary(), default=str)), mimetype="application/json")

    @app.route("/llm/csv")
    @protect
    def _llm_csv() -> Response:
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow([t for _, t in COLUMNS])
        for row in table_rows(ctx.summary()):
            writer.writerow([row[k] for k, _ in COLUMNS])
        return Response(
            buf.getvalue(),
            mimetype="text/csv",
            headers={"Content-Disposition": "attachment;filename=llm_stats.csv"},
        )


def event_rows(summary: dict[str, Any], redact: Any = str) -> list[dict[str, Any]]:
    """The failover events of the summary, newest first (at most MAX_EVENT_ROWS), as rows of the events tab."""
    events = (summary.get("failover") or {}).get("events") or []
    rows = []
    for e in reversed(events[-MAX_EVENT_ROWS:]):
        stamp = time.strftime("%H:%M:%S", time.gmtime(e["at"])) + f".{int(e['at'] % 1 * 1000):03d}"
        row = {"time": stamp, "worker": e["worker"], "kind": e["kind"], "endpoint": e["endpoint"]}
        row["message"] = redact(str(e["message"]))
        row["safe_name"] = f"{stamp} {e['kind']}"
        rows.append(row)
    return rows
