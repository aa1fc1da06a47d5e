"""Load shapes: a linear ramp and a staircase of users, selectable in the web UI with `--class-picker`.

Both use Locust's common options (users, spawn rate, run time from the command line or the UI's start form), so
they need no code to configure: the target is the user count, the run time is the test length, and the
shape options (--shape-*, in loadlib.options) set the ramp length and the number and length of steps. A locustfile
offers the shapes by importing the classes (`locustfiles/shapes.py`).
"""

from __future__ import annotations

from locust import LoadTestShape

from typing import Any

from loadlib.pacing import ramp_users, step_users

DEFAULT_STEP_S = 30.0
DEFAULT_STEPS = 5


class _CommonShape(LoadTestShape):
    abstract = True
    use_common_options = True

    def _options(self) -> Any:
        return self.runner.environment.parsed_options if self.runner is not None else None

    def _common(self) -> tuple[int, float, float | None]:
        opts = self._options()
        users = int(getattr(opts, "num_users", None) or 1)
        rate = float(getattr(opts, "spawn_rate", None) or users)
        run_time = getattr(opts, "run_time", None)
        return users, rate, float(run_time) if run_time else None


class RampShape(_CommonShape):
    """Linear ramp to the user count over --shape-ramp-s seconds (default: half the run time), then hold until
    the run time ends."""

    def tick(self) -> tuple[int, float] | None:
        users, rate, run_time = self._common()
        elapsed = self.get_run_time()
        if run_time is not None and elapsed >= run_time:
            return None
        ramp_s = float(getattr(self._options(), "shape_ramp_s", 0.0) or 0.0)
        if ramp_s <= 0:
            ramp_s = run_time / 2 if run_time else 60.0
        return ramp_users(elapsed, users, ramp_s), max(rate, 1.0)


class StepShape(_CommonShape):
    """--shape-steps equal steps up to the user count, each --shape-step-s seconds long, then hold until the run
    time ends: the usual way to find the load at which latency breaks."""

    def tick(self) -> tuple[int, float] | None:
        users, rate, run_time = self._common()
        elapsed = self.get_run_time()
        if run_time is not None and elapsed >= run_time:
            return None
        opts = self._options()
        steps = int(getattr(opts, "shape_steps", DEFAULT_STEPS) or DEFAULT_STEPS)
        step_s = float(getattr(opts, "shape_step_s", DEFAULT_STEP_S) or DEFAULT_STEP_S)
        return step_users(elapsed, users, steps, step_s), max(rate, 1.0)
