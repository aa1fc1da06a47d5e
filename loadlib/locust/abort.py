"""Abort on a lost threshold during the run, like k6's `abortOnFail` with `delayAbortEval` (docs/thresholds.md,
"Abort on fail").

Which thresholds may abort, and from when, is per threshold (`abort_rules`): a threshold file's object form gives a
threshold its own abortOnFail and delayAbortEval; --llm-abort-on-fail and --llm-abort-delay are the default of every
threshold that says nothing. The master (or local runner) evaluates the thresholds on the merged statistics once a
second, from the shortest delay on (percentiles need their samples first). The first time a threshold whose delay has
passed is already lost (loadlib.verdicts.verdict.lost) the run stops: every worker is told to quit, and the outputs
are written as at any end, with the abort and its reason in the verdict.
"""

from __future__ import annotations

import gevent

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from loadlib.verdicts.thresholds import Threshold
from loadlib.verdicts.verdict import lost

log = logging.getLogger("loadlib")
INTERVAL_S = 1.0
_EARLY_S = 0.05  # a timer may fire a hair before its delay: not a reason to wait one more interval


def abort_rules(thresholds: Sequence[Threshold], on_fail: bool, delay_s: float) -> dict[str, float]:
    """Expression -> seconds after the start from which its loss stops the run, for every threshold that may: its
    own abortOnFail, else `on_fail` (--llm-abort-on-fail); its own delayAbortEval, else `delay_s`. Pure. Results are
    matched by expression; one written twice aborts if either copy does, from the shorter delay."""
    rules: dict[str, float] = {}
    for t in thresholds:
        if not (on_fail if t.abort_on_fail is None else t.abort_on_fail):
            continue
        delay = delay_s if t.abort_delay_s is None else t.abort_delay_s
        rules[t.expression] = min(delay, rules.get(t.expression, delay))
    return rules


class AbortWatch:
    """One watch per test start over the run's thresholds (`ctx.verdicts.thresholds`); `end_run()` stops the run
    (quit headless, stop in the web UI). `delay_s` and `on_fail` are the defaults of thresholds without their own
    (--llm-abort-delay, --llm-abort-on-fail); `rules` (`abort_rules`) is empty when no threshold may abort: then
    there is nothing to start."""

    def __init__(
        self,
        ctx: Any,
        delay_s: float,
        end_run: Callable[[], None],
        interval_s: float = INTERVAL_S,
        on_fail: bool = True,
    ) -> None:
        self.ctx = ctx
        self.rules = abort_rules(ctx.verdicts.thresholds, on_fail, delay_s)
        self.end_run = end_run
        self.interval_s = interval_s
        self._t0 = time.monotonic()
        self._greenlet: gevent.Greenlet | None = None

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._greenlet = gevent.spawn(self._run)

    def stop(self) -> None:
        if self._greenlet is not None and self._greenlet is not gevent.getcurrent():
            self._greenlet.kill(block=False)
        self._greenlet = None

    def _run(self) -> None:
        gevent.sleep(min(self.rules.values(), default=0.0))
        while not self.check():
            gevent.sleep(self.interval_s)

    def due(self, results: list[dict[str, Any]]) -> list[Mapping[str, Any]]:
        """The lost results whose threshold may abort by now."""
        elapsed = time.monotonic() - self._t0 + _EARLY_S
        return [r for r in lost(results) if self.rules.get(r["expression"], float("inf")) <= elapsed]

    def check(self) -> bool:
        """Evaluate now; on a lost threshold that may abort, record the abort, stop the run and say so (True)."""
        started = self.ctx.started_at or time.time()
        failed = self.due(self.ctx.summary().get("thresholds") or [])
        if not failed:
            return False
        after_s = round(time.time() - started, 3)
        self.ctx.verdicts.aborted = {
            "after_s": after_s,
            "thresholds": [r["expression"] for r in failed],
            "reasons": [f"{r['expression']}: {r['reason']}" for r in failed],
        }
        log.warning("loadlib: aborting after %.1f s on a lost threshold: %s", after_s, failed[0]["reason"])
        self.end_run()
        return True
