"""CapacityShape: the largest load (users, or an open-loop arrival rate) that still holds the run's SLOs, found in one
run (docs/capacity.md).

A Locust load shape, so it runs on the master (or a local runner) and every worker follows. Each step sets a user
count (a rate search: an arrival rate, and users enough to send on it), waits out a warm-up (its requests are left
out), then measures until the window's time is up or every threshold's percentile is known within the precision;
every node's window of the step is merged exactly (loadlib.locust.capacity_part) and judged with the run's
thresholds (--llm-threshold, the scenarios' SLOs). The search brackets (doubling until a step fails) then bisects
(loadlib.capacity.search). It stops early, and says its answer is only a lower bound, when the client saturates or
the maximum holds. With --llm-capacity-confirm-s it then holds the answer for that long and says whether it held.
A rate step that follows a failed one first drains the queue the failed step left (loadlib.capacity.drain): nothing
is sent until the requests in flight fall to what the new rate keeps in flight, bounded by --llm-capacity-drain-s."""

from __future__ import annotations

from locust import LoadTestShape

import math
from typing import Any

from loadlib.capacity import answer, drain
from loadlib.capacity.drain import Drain
from loadlib.capacity.search import RATE, Search
from loadlib.capacity.step import Limits, judge, saturated, settled
from loadlib.locust.capacity_part import DRAIN, HOLD, MEASURE, WARMUP, CapacityPart
from loadlib.locust.context import context
from loadlib.locust.server_metrics_part import ServerMetricsPart
from loadlib.settings import Options, options_of
from loadlib.verdicts.verdict import users_text

MIN_USERS = 10  # a rate search's fewest users: a few on every worker
MIN_WINDOW_S = 3.0  # a window never ends before a worker's report (every 3 s) could have reached the master
HOLD_TIMEOUT_S = 5.0  # the longest wait for every worker's closed window before deciding on what came
UNFINISHED = "the run ended before the search did (-t, a stop, a signal)"
NO_THRESHOLDS = "no threshold to judge a step by: give --llm-threshold or keep the scenarios' SLOs (--scenario-slo on)"


class CapacityShape(LoadTestShape):
    """The capacity search over closed-loop users or an open-loop arrival rate (options: --llm-capacity-*)."""

    def __init__(self) -> None:
        super().__init__()
        self.search: Search | None = None
        self.limits: Limits | None = None
        self.steps: list[dict[str, Any]] = []
        self.index = 0
        self.users = 0
        self.rate: float | None = None  # a rate search: the step's arrival rate, requests/s of the whole run
        self.confirming = False  # the step holds the answer to confirm it
        self.confirmed: bool | None = None
        self.stop: str | None = None  # why the search ended early, kept while the hold confirms its answer
        self.remeasured: set[float] = set()  # the rates measured again after their arrivals went late
        self.drain: Drain | None = None  # the drain before the step, when it follows a failed one
        self.phase = ""
        self.phase_at = 0.0
        self.window_s = 0.0

    def reset_time(self) -> None:
        """A new test (Locust calls this when a shape test starts): a new search."""
        super().reset_time()
        self.search, self.limits, self.index = None, None, 0
        self.confirming, self.confirmed, self.stop, self.rate = False, None, None, None
        self.remeasured, self.drain = set(), None

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
        if self.phase == DRAIN and self._drained(elapsed):
            self._enter(WARMUP)
        elif self.phase == WARMUP and elapsed >= float(self._options().llm_capacity_warmup_s):
            self._enter(MEASURE)
            if self.limits is not None and not self.limits.thresholds:
                self._publish(NO_THRESHOLDS)
                return None
        elif self.phase == MEASURE and self._window_done(elapsed):
            self.window_s = elapsed
            self._enter(HOLD)
        elif self.phase == HOLD and (self._part().closed(self.index) or elapsed >= HOLD_TIMEOUT_S):
            return self._decide()
        return self._load()

    def _load(self) -> tuple[int, float]:
        return self.users, float(max(self.users, 10))

    def _begin_search(self) -> None:
        opts = self._options()
        self.search = Search(
            start=float(opts.llm_capacity_start),
            maximum=float(opts.llm_capacity_max),
            precision=float(opts.llm_capacity_precision),
            control=str(opts.llm_capacity_control),
        )
        self.steps, self.users = [], 0
        self._part().windows.clear()
        self._part().closed_by.clear()
        self._part().in_flight_of.clear()
        self._step(self.search.first())

    def _step(self, load: float) -> None:
        """A new step at `load`: users, or a rate with users enough to send on it (never fewer than before, so no
        user is stopped mid-request)."""
        assert self.search is not None
        self.index = self.index + 1
        if self.search.control == RATE:
            self.rate = load
            needed = math.ceil(load * float(self._options().llm_capacity_inflight_s))
            self.users = max(self.users, MIN_USERS, needed)
        else:
            self.users = int(load)
        self.drain = self._drain_for(load)
        self._enter(WARMUP if self.drain is None else DRAIN)
        self._publish(UNFINISHED)

    def _drain_for(self, load: float) -> Drain | None:
        """A rate step after a failed one drains first (unless --llm-capacity-drain-s is 0): to the requests its
        rate keeps in flight at the E2E of the largest rate that held."""
        assert self.search is not None
        previous = self.steps[-1] if self.steps else None
        if self.search.control != RATE or not self._options().llm_capacity_drain_s or not drain.needed(previous):
            return None
        return Drain(drain.target(load, drain.held_e2e_ms(self.steps, self.search.held)))

    def _drained(self, elapsed: float) -> bool:
        """Whether the drain is over: drained, or its time is up (the step is then measured anyway, marked so)."""
        assert self.drain is not None
        began = self._part().marks.get(self.index, {}).get(DRAIN, 0.0)
        done = self.drain.see(self._part().in_flight(self.index), *self._server_since(began))
        if done or elapsed >= float(self._options().llm_capacity_drain_s):
            self.drain.end(elapsed, done)
            return True
        return False

    def _server_since(self, began: float) -> tuple[float | None, float | None]:
        """The server's queue and running requests at its last scrape taken since `began` (--llm-server-metrics),
        (None, None) without one."""
        assert self.runner is not None
        part = context(self.runner.environment).named("server_metrics")
        if not isinstance(part, ServerMetricsPart) or not part.samples or part.samples[-1][0] < began:
            return None, None
        sample = part.samples[-1][1]
        return sample.waiting, sample.running

    def _enter(self, phase: str) -> None:
        self.phase, self.phase_at = phase, self.get_run_time()
        if phase == MEASURE and self.limits is None:
            self.limits = self._limits()
        self._part().tell(self.index, phase, self.rate if phase == WARMUP else None)

    def _limits(self) -> Limits:
        """The run's thresholds (the user's and the scenarios' SLOs), known once the test has started."""
        assert self.runner is not None
        ctx = context(self.runner.environment)
        health = ctx.health.thresholds
        precision = float(self._options().llm_capacity_precision)
        slo = ctx.stats.slo.text if ctx.stats.slo is not None else ""
        thresholds = tuple(ctx.verdicts.thresholds)
        return Limits(thresholds, health.loop_lag_p99_ms, health.cpu_percent, precision, slo, ctx.verdicts.confidence)

    def _window_done(self, elapsed: float) -> bool:
        if self.confirming:  # the hold runs its whole time: it is the answer's longer look
            return elapsed >= float(self._options().llm_capacity_confirm_s)
        if elapsed >= float(self._options().llm_capacity_window_s):
            return True
        limits = self.limits
        return elapsed >= MIN_WINDOW_S and limits is not None and settled(self._part().window(self.index), limits)

    def _decide(self) -> tuple[int, float] | None:
        """Judge the step that just closed; start the next one, or end the search (None: the run stops)."""
        assert self.search is not None and self.limits is not None
        row = self._row()
        load = self.rate if self.rate is not None else self.users
        text = f"{load:g} req/s" if self.search.control == RATE else users_text(self.users)
        if self.confirming:
            self.confirmed = row["passed"]
            self._publish(self.stop)
            return None
        if row["client_reason"] is not None:
            self._publish(f"the client saturated at {text} ({row['client_reason']})")
            return None
        row["remeasured"] = answer.slipped(row, self.limits.lag_ms) if load not in self.remeasured else None
        if row["remeasured"] is not None:  # the step measured a burst, not its rate: once more
            self.remeasured.add(load)
            self._step(load)
            return self._load()
        self.search.record(load, row["passed"])
        following = self.search.next()
        if following is not None:
            self._step(following)
            return self._load()
        self.stop = f"the maximum of {text} held" if self.search.max_reached else None
        if float(self._options().llm_capacity_confirm_s) > 0 and self.search.held > 0:
            self.confirming = True
            self._step(self.search.held)
            return self._load()
        self._publish(self.stop)
        return None

    def _row(self) -> dict[str, Any]:
        """The step that just closed, judged, as a row of the table (and an annotation)."""
        assert self.limits is not None
        window = self._part().window(self.index)
        results = judge(window, self.window_s, self.limits)
        client = saturated(window, self.limits)
        limits = self.limits
        row = answer.step_row(
            self.index, self.users, window, self.window_s, results, client, limits.request_slo, self.rate
        )
        row["confirm"] = self.confirming
        row.update(drain.fields(self.drain))
        self.steps.append(row)
        self._annotate(row)
        return row

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
        minimum = float(self._options().llm_capacity_min) or None
        self._part().answer = answer.section(self.search, self.steps, stop, minimum, self.confirmed)
