"""Abort on a lost threshold during the run, like k6's `abortOnFail` with `delayAbortEval` (docs/thresholds.md,
"Abort on fail").

With --llm-abort-on-fail the master (or local runner) evaluates the thresholds on the merged statistics once a
second, from --llm-abort-delay seconds after the test started (percentiles need their samples first). The first time
one is already lost (loadlib.verdicts.verdict.lost) the run stops: every worker is told to quit, and the outputs are
written as at any end, with the abort and its reason in the verdict.
"""

from __future__ import annotations

import gevent

import logging
import time
from collections.abc import Callable
from typing import Any

from loadlib.verdicts.verdict import lost

log = logging.getLogger("loadlib")
INTERVAL_S = 1.0


class AbortWatch:
    """One watch per test start; `end_run()` stops the run (quit headless, stop in the web UI)."""

    def __init__(self, ctx: Any, delay_s: float, end_run: Callable[[], None], interval_s: float = INTERVAL_S) -> None:
        self.ctx = ctx
        self.delay_s = delay_s
        self.end_run = end_run
        self.interval_s = interval_s
        self._greenlet: gevent.Greenlet | None = None

    def start(self) -> None:
        self._greenlet = gevent.spawn(self._run)

    def stop(self) -> None:
        if self._greenlet is not None and self._greenlet is not gevent.getcurrent():
            self._greenlet.kill(block=False)
        self._greenlet = None

    def _run(self) -> None:
        gevent.sleep(self.delay_s)
        while not self.check():
            gevent.sleep(self.interval_s)

    def check(self) -> bool:
        """Evaluate now; on a lost threshold record the abort, stop the run and say so (True)."""
        started = self.ctx.started_at or time.time()
        failed = lost(self.ctx.summary().get("thresholds") or [])
        if not failed:
            return False
        after_s = round(time.time() - started, 3)
        self.ctx.verdicts.aborted = {
            "after_s": after_s,
            "thresholds": [r["expression"] for r in failed],
            "reasons": [f"{r['expression']}: {r['reason']}" for r in failed],
        }
        log.warning("loadlib: aborting after %.1f s: %s (--llm-abort-on-fail)", after_s, failed[0]["reason"])
        self.end_run()
        return True
