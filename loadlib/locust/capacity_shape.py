"""CapacityShape: the largest load (users) that still holds the run's SLOs, found in one run (docs/capacity.md).

A Locust load shape, so it runs on the master (or a local runner) and every worker follows. Each step sets a user
count, waits out a warm-up (its requests are left out), then measures until the window's time is up or every
threshold's percentile is known within the precision; every node's window of the step is merged exactly
(loadlib.locust.capacity_part) and judged with the run's thresholds (--llm-threshold, the scenarios' SLOs). The
search brackets (doubling until a step fails) then bisects (loadlib.capacity.search). It stops early, and says its
answer is only a lower bound, when the client saturates or the maximum holds."""

from __future__ import annotations

from locust import LoadTestShape

from typing import Any

from loadlib.capacity import answer
from loadlib.capacity.search import Search
from loadlib.capacity.step import Limits, judge, saturated, settled
from loadlib.locust.capacity_part import HOLD, MEASURE, WARMUP, CapacityPart
from loadlib.locust.context import context
from loadlib.settings import Options, options_of

MIN_WINDOW_S = 3.0  # a window never ends before a worker's report (every 3 s) could have reached the master
HOLD_TIMEOUT_S = 5.0  # the longest wait for every worker's closed window before deciding on what came
UNFINISHED = "the run ended before the search did (-t, a stop, a signal)"
NO_THRESHOLDS = "no threshold to judge a step by: give --llm-threshold or keep the scenarios' SLOs (--scenario-slo on)"


class CapacityShape(LoadTestShape):
    """The capacity search over closed-loop users (options: --llm-capacity-*)."""

    def __init__(self) -> None:
        super().__init__()
        self.search: Search | None = None
        self.limits: Limits | None = None
        self.steps: list[dict[str, Any]] = []
        self.index = 0
        self.users = 0
        self.phase = ""
        self.phase_at = 0.0
        self.window_s = 0.0

    def reset_time(self) -> None:
        """A new test (Locust calls this when a shape test starts): a new search."""
        super().reset_time()
        self.search, self.limits, self.index = None, None, 0

    def _options(self) -> Options:
        """The run's typed options (a shape ticks before the test start that resolves the run context's)."""
        return options_of(self.runner.environment if self.runner is not None else None)

    def _part(self) -> CapacityPart:
        assert self.runner is not None
        part: CapacityPart = context(self.runner.environment).named("capacity")
        return part

    def tick(self) -> tuple[int, float] | None:
        if self.search is None:
            self._begin_search()
        run_time = self._options().locust.run_time
        if run_time and self.get_run_time() >= float(run_time):  # Locust leaves -t to a shape
            self._publish(UNFINISHED)
            return None
        elapsed = self.get_run_time() - self.phase_at
        if self.phase == WARMUP and elapsed >= float(self._options().llm_capacity_warmup_s):
            self._enter(MEASURE)
            if self.limits is not None and not self.limits.thresholds:
                self._publish(NO_THRESHOLDS)
                return None
        elif self.phase == MEASURE and self._window_done(elapsed):
            self.window_s = elapsed
            self._enter(HOLD)
        elif self.phase == HOLD and (self._part().closed(self.index) or elapsed >= HOLD_TIMEOUT_S):
            return self._decide()
        return self.users, float(max(self.users, 10))

    def _begin_search(self) -> None:
        self.search = Search(
            start=int(self._options().llm_capacity_start),
            maximum=int(self._options().llm_capacity_max),
            precision=float(self._options().llm_capacity_precision),
        )
        self.steps = []
        self._part().windows.clear()
        self._part().closed_by.clear()
        self._step(self.search.first())

    def _step(self, users: int) -> None:
        self.index, self.users = self.index + 1, users
        self._enter(WARMUP)
        self._publish(UNFINISHED)

    def _enter(self, phase: str) -> None:
        self.phase, self.phase_at = phase, self.get_run_time()
        if phase == MEASURE and self.limits is None:
            self.limits = self._limits()
        self._part().tell(self.index, phase)

    def _limits(self) -> Limits:
        """The run's thresholds (the user's and the scenarios' SLOs), known once the test has started."""
        assert self.runner is not None
        ctx = context(self.runner.environment)
        health = ctx.health.thresholds
        precision = float(self._options().llm_capacity_precision)
        slo = ctx.stats.slo.text if ctx.stats.slo is not None else ""
        return Limits(tuple(ctx.verdicts.thresholds), health.loop_lag_p99_ms, health.cpu_percent, precision, slo)

    def _window_done(self, elapsed: float) -> bool:
        if elapsed >= float(self._options().llm_capacity_window_s):
            return True
        limits = self.limits
        return elapsed >= MIN_WINDOW_S and limits is not None and settled(self._part().window(self.index), limits)

    def _decide(self) -> tuple[int, float] | None:
        """Judge the step that just closed; start the next one, or end the search (None: the run stops)."""
        assert self.search is not None and self.limits is not None
        window = self._part().window(self.index)
        results = judge(window, self.window_s, self.limits)
        client = saturated(window, self.limits)
        row = answer.step_row(self.index, self.users, window, self.window_s, results, client, self.limits.request_slo)
        self.steps.append(row)
        self._annotate(row)
        if client is not None:
            self._publish(f"the client saturated at {self.users} users ({client})")
            return None
        self.search.record(self.users, row["passed"])
        following = self.search.next()
        if following is None:
            self._publish(f"the maximum of {self.users} users held" if self.search.max_reached else None)
            return None
        self._step(following)
        return self.users, float(max(self.users, 10))

    def _annotate(self, row: dict[str, Any]) -> None:
        """The step as an InfluxDB annotation (`llm_event`, kind `capacity_step`) and point (`llm_capacity_step`),
        when the run writes to InfluxDB."""
        assert self.runner is not None
        message = answer.step_line(row).strip()
        sinks = context(self.runner.environment).sinks
        sinks.on_endpoint_event(kind="capacity_step", message=message)
        sinks.capacity_step(row)

    def _publish(self, stop: str | None) -> None:
        """The answer as it stands, for the summary: `stop` says why it is only a lower bound (None: found)."""
        assert self.search is not None
        minimum = int(self._options().llm_capacity_min) or None
        self._part().answer = answer.section(self.search, self.steps, stop, minimum)
