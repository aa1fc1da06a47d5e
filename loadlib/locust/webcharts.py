"""The web UI's LLM charts page: the run over time (loadlib.metrics.timeline), everything the run decides, and the
scenario tables of the run report (loadlib.reports.run_scenarios).

Locust's React UI extends only with tables (extended tabs), so the charts are a page of their own, linked from every
Locust page by a button, drawn with uPlot (vendored in static/uplot, v1.6.32, MIT): nothing is fetched from the
network at view time. Every route is behind Locust's --web-login when it is on (docs/webui.md).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from flask import Response, abort, request, send_from_directory

from loadlib.capacity.answer import answer_line, so_far
from loadlib.reports.run_scenarios import scenario_sections, tabled_lines

STATIC = Path(__file__).parent / "static"
LINK = (
    b'<a id="llm-charts-link" href="/llm/charts" style="position:fixed;left:16px;bottom:16px;z-index:2000;'
    b"padding:8px 14px;border-radius:4px;background:#178038;color:#fff;font:500 14px Roboto,Arial,sans-serif;"
    b'text-decoration:none;box-shadow:0 2px 6px rgba(0,0,0,.4)">LLM charts</a>'
)
_ASSETS = {"uplot/uPlot.iife.min.js", "uplot/uPlot.min.css", "charts.js", "charts.css", "form.js"}


def grafana_link(base: str, run_id: str) -> str | None:
    """The overview dashboard filtered to this run, when a Grafana URL is configured."""
    if not base:
        return None
    return f"{base.rstrip('/')}/d/llm-overview/llm-load-test-overview?var-run_id={run_id}&from=now-1h&to=now"


def feed(ctx: Any, environment: Any) -> dict[str, Any]:
    """The chart series, the summary lines and verdicts as they stand, the scenario tables (HTML, every value
    escaped: the report's own), and where the run is: one consistent read. The notes leave out the lines the tables
    show."""
    timeline = ctx.stats.timeline
    summary = ctx.summary()
    tabled = tabled_lines(summary)
    opts = ctx.options
    return {
        "now": time.time(),
        "run_id": opts.run_id,
        "state": str(getattr(environment.runner, "state", "")),
        "users": ctx.user_count(),
        "grafana": grafana_link(str(opts.llm_grafana_url or ""), opts.run_id),
        "timeline": timeline.feed() if timeline is not None else {"step_s": None, "series": {}},
        "verdict": summary.get("verdict"),
        "thresholds": summary.get("thresholds") or [],
        "clients": summary.get("clients") or {},
        "tables": scenario_sections(summary),
        "lines": [line for line in ctx.lines(summary) if line and line not in tabled],
        "capacity": capacity_feed(summary.get("capacity"), _running(environment)),
    }


def capacity_feed(capacity: dict[str, Any] | None, running: bool) -> dict[str, Any] | None:
    """The capacity search's finished steps as they stand, for the live step chart, with its answer line; while the
    test runs, the search's answer so far (its published answer says "the run ended" until the search ends)."""
    if not capacity:
        return None
    return {**capacity, "answer": so_far(capacity) if running else answer_line(capacity)}


def _running(environment: Any) -> bool:
    return str(getattr(environment.runner, "state", "")) in ("spawning", "running", "cleanup")


def install_charts(web_ui: Any, ctx: Any) -> None:
    """The page, its JSON feed and assets (each behind the login when on), and the button on Locust's pages."""
    app, protect = web_ui.app, web_ui.auth_required_if_enabled

    @app.route("/llm/charts")
    @protect
    def _charts_page() -> Response:
        return send_from_directory(STATIC, "charts.html")

    @app.route("/llm/charts.json")
    @protect
    def _charts_feed() -> Response:
        body = ctx.redact(json.dumps(feed(ctx, web_ui.environment), default=str))
        return Response(body, mimetype="application/json", headers={"Cache-Control": "no-store"})

    @app.route("/llm/static/<path:name>")
    @protect
    def _charts_asset(name: str) -> Response:
        if name not in _ASSETS:
            abort(404)
        return send_from_directory(STATIC, name, max_age=3600)

    @app.after_request
    def _link_from_locust(response: Response) -> Response:
        if request.path == "/" and response.status_code == 200 and response.mimetype == "text/html":
            response.direct_passthrough = False
            response.set_data(response.get_data().replace(b"</body>", LINK + b"</body>", 1))
        return response
