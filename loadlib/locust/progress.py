"""The progress display of a headless run (docs/outputs.md, "Progress during a run"), on the master or a local runner.

Locust reprints its request table every 2 s, E2E only, and on a long run it buries everything else. In its place
(--llm-progress, default auto) loadlib shows where the run is and what it will be judged on: a live panel redrawn in
place once a second on a terminal, or one line every 10 s (--llm-progress lines:SECONDS) when stdout is not a
terminal, as in CI. Both go to stdout, where the summary and the verdict line go, and end before them.

Cost: the counters (requests, tokens, errors, TTFT percentiles) are read from the merged statistics at each refresh;
the thresholds and the client verdict need the whole summary (a few milliseconds), built at most every
JUDGE_EVERY_S on a terminal and once per line in a pipe. Locust's own table is turned off at `init` (--only-summary,
its own switch) unless --llm-progress locust or --print-stats asks for it.
"""

from __future__ import annotations

import gevent
from locust.runners import STATE_RUNNING, STATE_SPAWNING

import atexit
import logging
import sys
import time
import weakref
from collections.abc import Callable
from dataclasses import replace
from importlib import import_module
from typing import Any

from loadlib.capacity import answer
from loadlib.outputs import progress as view_of

log = logging.getLogger("loadlib")
BAR_EVERY_S = 1.0
JUDGE_EVERY_S = 2.0
Judged = tuple[view_of.Thresholds | None, view_of.Client, str | None]  # thresholds, client, a capacity search's state
_DISPLAYS: weakref.WeakKeyDictionary[Any, Display] = weakref.WeakKeyDictionary()


def prepare(ctx: Any) -> None:
    """At `init`, before Locust spawns its stats printer: turn Locust's periodic table off when ours replaces it."""
    opts, locust = ctx.options, ctx.options.locust
    mode, _ = view_of.parse_mode(opts.llm_progress)
    headless, worker = bool(locust.headless), bool(locust.worker)
    if view_of.quiets_locust(mode, headless, worker, bool(locust.print_stats)):
        ctx.amend(only_summary=True)
    if view_of.display_kind(mode, headless, worker, sys.stdout.isatty()) == "bar":
        import_module("loadlib.outputs.progress_panel")  # rich takes ~70 ms to import: now, not as the load starts


def start(ctx: Any) -> None:
    """At test start: show the display this node should show, if any."""
    opts = ctx.options
    if not opts.locust.headless or ctx in _DISPLAYS:
        return
    mode, every_s = view_of.parse_mode(opts.llm_progress)
    terminal = sys.stdout.isatty()
    kind = view_of.display_kind(mode, True, ctx.is_worker, terminal)
    if kind is None:
        return
    out = LiveOut(ctx, force=not terminal) if kind == "bar" else LinesOut()
    display = _DISPLAYS[ctx] = Display(ctx, out, BAR_EVERY_S if kind == "bar" else every_s)
    display.start()


def stop(ctx: Any) -> None:
    """At test stop: the last figures, then the display ends (before any summary is printed)."""
    display = _DISPLAYS.pop(ctx, None)
    if display is not None:
        display.stop()


class LinesOut:
    """A pipe or a file: one line per refresh, flushed at once (a CI log shows it as it comes)."""

    judge_every_s = 0.0  # every line says where the thresholds stand

    def show(self, view: view_of.View) -> None:
        print(view_of.line(view), flush=True)

    def close(self) -> None:
        pass


class LiveOut:
    """A terminal: rich's live panel, redrawn in place; what is printed or logged meanwhile appears above it."""

    judge_every_s = JUDGE_EVERY_S

    def __init__(self, ctx: Any, force: bool = False) -> None:
        from rich.console import Console
        from rich.live import Live

        from loadlib.outputs.progress_panel import panel

        self.title = f"loadlib run {ctx.options.run_id or ''}".strip()
        self.panel = panel
        console = Console(file=sys.stdout, force_terminal=True if force else None)
        # stderr joins the panel's terminal only when it is that terminal: `2> file` keeps the logs in the file
        self.live = Live(console=console, auto_refresh=False, redirect_stderr=sys.stderr.isatty())
        self.restore: Callable[[], None] = lambda: None

    def show(self, view: view_of.View) -> None:
        if not self.live.is_started:
            self.live.start()
            self.restore = route_logs(sys.__stdout__, sys.__stderr__)
            atexit.register(self.live.stop)  # a process that ends without a test stop still gets its cursor back
        self.live.update(self.panel(view, self.title), refresh=True)

    def close(self) -> None:
        self.restore()
        self.live.stop()


def route_logs(stdout: Any, stderr: Any) -> Callable[[], None]:
    """Point every log handler that writes to the real stdout or stderr at the current sys.stdout / sys.stderr (rich's
    proxies while the panel is live: each line then prints above the panel instead of through it). Locust configures
    its handlers before any listener runs, so they hold the real streams. Returns the undo."""
    moved = []
    for handler in _stream_handlers():
        stream = getattr(handler, "stream", None)
        target = sys.stdout if stream is stdout else sys.stderr if stream is stderr else None
        if target is not None and target is not stream:
            moved.append((handler, stream))
            handler.setStream(target)

    def undo() -> None:
        for handler, stream in moved:
            handler.setStream(stream)

    return undo


def _stream_handlers() -> list[logging.StreamHandler]:
    """Every console handler of every logger (files excluded), each once."""
    loggers = [logging.getLogger(), *(v for v in logging.Logger.manager.loggerDict.values() if hasattr(v, "handlers"))]
    found = {id(h): h for lg in loggers for h in lg.handlers if type(h) is logging.StreamHandler}
    return list(found.values())


class Display:
    """The display of one test: a greenlet that reads the run into a View every `every_s` and hands it to `out`."""

    def __init__(self, ctx: Any, out: LinesOut | LiveOut, every_s: float) -> None:
        self.ctx, self.out, self.every_s = ctx, out, every_s
        self.requests: list[tuple[float, int]] = []
        self.tokens: list[tuple[float, int]] = []
        self.judged: Judged = (None, view_of.Client(), None)
        self.judged_at = -float("inf")
        self.users = 0  # as last shown while the test ran: the last view keeps it (the users have stopped by then)
        self.greenlet: gevent.Greenlet | None = None

    def start(self) -> None:
        now, total = time.time(), self.ctx.stats.stats.total
        self.requests, self.tokens = [(now, total.requests)], [(now, total.completion_tokens_total)]
        self.greenlet = gevent.spawn(self._run)

    def stop(self) -> None:
        if self.greenlet is not None:
            self.greenlet.kill(block=True, timeout=2)
            self.greenlet = None
        try:
            self.out.show(self.view(done=True))
        except Exception:
            log.debug("loadlib: the progress display's last refresh failed", exc_info=True)
        self.out.close()

    def _run(self) -> None:
        if isinstance(self.out, LinesOut):
            gevent.sleep(self.every_s)  # a line says something once there is something to say
        while True:
            try:
                self.out.show(self.view())
            except Exception:
                log.warning("loadlib: the progress display failed; the run goes on without it", exc_info=True)
                return
            gevent.sleep(self.every_s)

    def _users(self) -> int:
        """Users now; kept for the last view only while the test runs (a refresh as the run ends sees them stop)."""
        users = self.ctx.user_count()
        runner = self.ctx.environment.runner
        if runner is None or runner.state in (STATE_SPAWNING, STATE_RUNNING):
            self.users = users
        return users

    def view(self, done: bool = False) -> view_of.View:
        """The run as it stands: counters now, thresholds and client as last judged (judged now when due)."""
        ctx, now = self.ctx, time.time()
        total = ctx.stats.stats.total
        self.requests = view_of.trimmed([*self.requests, (now, total.requests)])
        self.tokens = view_of.trimmed([*self.tokens, (now, total.completion_tokens_total)])
        summary = ctx.summary() if done else None
        if done or now - self.judged_at >= self.out.judge_every_s:
            self.judged, self.judged_at = judge(ctx, summary, done), now
        rates = view_of.rate(self.requests), view_of.rate(self.tokens)
        if summary is not None:  # the last view: the run's own rates, as the summary gives them
            rates = _run_rates(summary, rates)
        p50, p95 = total.ttft_ms.percentiles((50, 95))
        return view_of.View(
            elapsed_s=now - (ctx.started_at or now),
            run_time_s=float(ctx.options.locust.run_time or 0) or None,
            users=self.users if done else self._users(),
            target_users=_target_users(ctx),
            workers=ctx.environment.runner.worker_count if ctx.is_master else None,
            requests=total.requests,
            requests_per_s=rates[0],
            output_tokens_per_s=rates[1],
            ttft_p50_ms=p50,
            ttft_p95_ms=p95,
            errors=dict(total.errors),
            thresholds=self.judged[0],
            capacity=self.judged[2],
            client=self.judged[1],
            done=done,
        )


def _run_rates(summary: dict[str, Any], last: tuple[float | None, float | None]) -> tuple[float | None, float | None]:
    """Requests/s and output tokens/s over the run's measured window. The last seconds' would count every attempt
    cut off by the stop at once (2,000 streams cut off read 358 req/s where the run held 190)."""
    total = summary.get("total") or {}
    got = total.get("requests_per_s"), total.get("output_tokens_per_s")
    return (got[0] if got[0] is not None else last[0], got[1] if got[1] is not None else last[1])


def judge(ctx: Any, summary: dict[str, Any] | None = None, done: bool = False) -> Judged:
    """The thresholds, the client verdict and a capacity search's state as they stand: the part that needs the whole
    summary. A capacity search judges the thresholds per step, and overloads on purpose: the whole run's tally would
    show them failing while the search goes well, so its state takes their place."""
    summary = ctx.summary() if summary is None else summary
    capacity = summary.get("capacity")
    search = answer.brief(capacity, running=not done) if capacity else None
    results, expected = summary.get("thresholds") or [], len(ctx.verdicts.thresholds)
    if not results and not expected:
        return None, view_of.client_of(summary), search
    tally = view_of.tally(results, expected)
    failing = tuple(ctx.redact(expression) for expression in tally.failing)  # masked like the summary's lines
    return replace(tally, failing=failing), view_of.client_of(summary), search


def _target_users(ctx: Any) -> int | None:
    """The -u of a run without a load shape (a shape sets its own counts as it goes)."""
    if getattr(ctx.environment, "shape_class", None) is not None:
        return None
    users = ctx.options.locust.num_users
    return int(users) if users is not None else None
