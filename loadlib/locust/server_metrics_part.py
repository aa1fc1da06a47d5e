"""`--llm-server-metrics URL`: the server's own account of the run, scraped from its Prometheus endpoint by the master
(or a local runner) once an interval, beside the client's measurements (docs/capacity.md, "Server-side metrics").

One node scrapes, not every worker: the server's gauges are server-wide, so N scrapers would only read the same
numbers N times and add N times the load on the endpoint. Each scrape is bounded by the interval (its timeout), runs
in its own greenlet, and never fails the run: a scrape that fails (refused, timed out, not Prometheus's format) is
counted, its last error kept, and the summary says how many failed. The greenlet shares the event loop that reads
the streams (on a local runner), so a scrape must not stall it: the fetch is cooperative (urllib over gevent's
patched sockets) and the parse reads only the families it needs (`server_metrics.kept`: under a millisecond for
vLLM's 54 KB, where the whole body took 9-15 ms; bench/scrape_lag.py). Each scrape is an `llm_server` InfluxDB point;
the summary's `server_metrics` holds the run's figures and, in a capacity search, each step's (its measuring window's
scrapes) beside the step's own row."""

from __future__ import annotations

import gevent

import time
import urllib.request
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from loadlib.locust.locust_bounds import HistoryThinner
from loadlib.locust.parts import Node, NodePart
from loadlib.metrics import server_metrics as sm
from loadlib.metrics.summary_types import Summary

MAX_BODY = 16 * 1024 * 1024  # a server's whole /metrics is a few hundred kB; more is not a metrics endpoint
MAX_SAMPLES = 3_600  # scrapes kept for the capacity steps' windows: an hour at 1 s, then evenly thinned
MEASURE, HOLD = "measure", "hold"  # the capacity part's phases that open and close a step's window


def shown_url(url: str) -> str:
    """The URL without credentials or query (a token may ride in either): what outputs show."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def check_url(url: str) -> None:
    """A clear one-line error before any load for a URL that cannot be scraped."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--llm-server-metrics {shown_url(url)!r}: give an http(s) URL, e.g. http://vllm:8000/metrics")


def fetch(url: str, timeout_s: float) -> str:
    request = urllib.request.Request(url, headers={"Accept": "text/plain"})
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        body: bytes = response.read(MAX_BODY + 1)
    if len(body) > MAX_BODY:
        raise ValueError(f"the body is over {MAX_BODY} bytes")
    return body.decode("utf-8", errors="replace")


class ServerMetricsPart(NodePart):
    """The master's scraper: the run's figures over every scrape, the scrapes themselves (unix time, sample) for the
    capacity steps' windows when the run has a capacity search, at most MAX_SAMPLES of them evenly spaced (every
    other one goes when full, and the interval between those kept doubles), counts of scrapes that failed and why."""

    def __init__(self) -> None:
        self.url = ""
        self.interval_s = 1.0
        self.samples: list[tuple[float, sm.ServerSample]] = []
        self.run = sm.RunFigures()
        self.thinner = HistoryThinner(MAX_SAMPLES)
        self.last: sm.ServerSample | None = None
        self.failed = 0
        self.unknown = 0
        self.last_error: str | None = None
        self.greenlet: gevent.Greenlet | None = None
        self.ctx: Any = None

    def start(self, ctx: Node) -> None:
        self.close()
        self.ctx, self.url = ctx, str(ctx.options.llm_server_metrics or "")
        self.samples, self.failed, self.unknown, self.last_error = [], 0, 0, None
        self.run, self.thinner, self.last = sm.RunFigures(), HistoryThinner(MAX_SAMPLES), None
        if not self.url or ctx.is_worker:
            return
        self.interval_s = max(0.1, float(ctx.options.llm_server_metrics_interval))
        self.greenlet = gevent.spawn(self._loop)

    def _loop(self) -> None:
        while True:
            began = time.monotonic()
            self.scrape()
            gevent.sleep(max(0.0, self.interval_s - (time.monotonic() - began)))

    def scrape(self) -> None:
        """One bounded scrape: its sample kept and written, or its failure counted."""
        at = time.time()
        limit = TimeoutError(f"no whole answer within {self.interval_s:g} s")
        try:
            with gevent.Timeout(self.interval_s, limit):  # the whole scrape, not each socket read
                sample = sm.parse(fetch(self.url, self.interval_s))
        except Exception as exc:  # the endpoint's trouble is reported, never the run's end
            self.failed += 1
            self.last_error = f"{type(exc).__name__}: {exc}"[:300]
            return
        if sample.source is None:
            self.unknown += 1
            self.last_error = "no metric of vLLM, SGLang, TGI or LiteLLM in the response"
            return
        previous = self.last
        self.keep(at, sample)
        gauges = {q: getattr(sample, q) for q in sm.QUANTITIES}
        self.ctx.sinks.server_scrape(sample.source, gauges, sm.ttft_between(previous, [sample]), int(at * 1e9))

    def keep(self, at: float, sample: sm.ServerSample) -> None:
        """A recognised scrape: into the run's figures, and kept (or thinned away) for the steps' windows."""
        self.run.add(sample)
        self.last = sample
        if getattr(self._capacity(), "marks", None):  # a capacity search has begun: its steps read the scrapes
            self.samples.append((at, sample))
            self.thinner.thin(self.samples)

    def stop(self, ctx: Node) -> None:
        self.close()

    def close(self) -> None:
        greenlet, self.greenlet = self.greenlet, None
        if greenlet is not None:
            greenlet.kill(block=True, timeout=2)

    def summarize(self, summary: Summary) -> None:
        if not self.url or (self.ctx is not None and self.ctx.is_worker):
            return
        figures = self.run.figures()
        total = (summary.get("total") or {}).get("latency_ms", {}).get("ttft") or {}
        summary["server_metrics"] = {
            "url": shown_url(self.url),
            "source": self.last.source if self.last is not None else None,
            "interval_s": self.interval_s,
            "scrapes_failed": self.failed,
            "scrapes_unrecognised": self.unknown,
            "last_error": self.last_error,
            **figures,
            "client_ttft": {"p50_ms": total.get("p50"), "p95_ms": total.get("p95")},
        }
        self._steps(summary)

    def _steps(self, summary: Summary) -> None:
        """Each capacity step's server figures over its measuring window, in the step's row (`server`)."""
        capacity = summary.get("capacity")
        marks = getattr(self._capacity(), "marks", {})
        if not capacity or not marks:
            return
        steps = []
        for row in capacity["steps"]:
            mark = marks.get(row["step"], {})
            start, end = mark.get(MEASURE), mark.get(HOLD)
            known = start is not None and end is not None
            server = {**sm.window(self.samples, start, end), "from_unix": start, "to_unix": end} if known else None
            steps.append({**row, "server": server})
        summary["capacity"] = {**capacity, "steps": steps}

    def _capacity(self) -> Any:
        try:
            return self.ctx.named("capacity") if self.ctx is not None else None
        except KeyError:  # the run has no capacity search
            return None

    def lines(self, summary: dict[str, Any]) -> list[str]:
        steps = (summary.get("capacity") or {}).get("steps") or []
        return server_lines(summary.get("server_metrics")) + step_lines(steps)


def server_lines(s: dict[str, Any] | None) -> list[str]:
    """The console's server block: what was scraped and how often it failed, the gauges, server TTFT beside
    client TTFT."""
    if not s:
        return []
    failed = f"{s['scrapes_failed']} failed" + (f" ({s['last_error']})" if s["last_error"] else "")
    head = f"Server metrics ({s['source'] or 'unrecognised'}) from {s['url']}: {s['scrapes']} scrapes, {failed}"
    kv = s.get("kv_cache")
    gauges = f"waiting mean/max {_pair(s.get('waiting'))}; running mean/max {_pair(s.get('running'))}; KV-cache " + (
        f"mean/max {kv['mean'] * 100:.1f}/{kv['max'] * 100:.1f} %" if kv else "-"
    )
    ttft, client = s["ttft"], s["client_ttft"]
    return [
        head,
        f"  {gauges}",
        f"  TTFT p50/p95: server {_ms(ttft['p50_ms'])}/{_ms(ttft['p95_ms'])} ms, client {_ms(client['p50_ms'])}/"
        f"{_ms(client['p95_ms'])} ms (the difference is network, gateway and client)",
    ]


def step_lines(steps: list[dict[str, Any]]) -> list[str]:
    """Each capacity step as the server saw it: its queue, its batch, its KV-cache use, its TTFT p95 and the
    client's."""
    rows = [(s, sm.step_cells(s)) for s in steps if s.get("server")]
    if not rows:
        return []
    head = ", ".join(sm.STEP_HEADERS)
    return [f"  Per capacity step ({head}):"] + [
        f"    step {s['step']:>2} {s.get('users')!s:>5}: " + "  |  ".join(cells) for s, cells in rows
    ]


def _pair(figure: dict[str, float] | None) -> str:
    return "-" if not figure else f"{figure['mean']:.2f}/{figure['max']:.2f}"


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.1f}"
