"""Load shapes: a linear ramp and a staircase of users, selectable in the web UI with `--class-picker`.

Both use Locust's common options (users, spawn rate, run time from the command line or the UI's start form), so
they need no code to configure: the target is the user count, the run time is the test length, and the
shape options (--shape-*, in loadlib.options) set the ramp length and the number and length of steps. A locustfile
offers the shapes by importing the classes (`locustfiles/shapes.py`).
"""

from __future__ import annotations

from locust import LoadTestShape

from loadlib.pacing import ramp_users, step_users
from loadlib.settings import Options, options_of, resolve

_DEFAULTS = resolve(None)  # the registry's defaults, typed
DEFAULT_STEP_S = float(_DEFAULTS.shape_step_s)  # also for 0 or an empty field
DEFAULT_STEPS = int(_DEFAULTS.shape_steps)


class _CommonShape(LoadTestShape):
    abstract = True
    use_common_options = True

    def _options(self) -> Options:
        """Resolved at each tick: the first comes before test start, when the run context reads a form's edits."""
        return options_of(self.runner.environment if self.runner is not None else None)

    def _common(self) -> tuple[int, float, float | None]:
        opts = self._options().locust
        users = int(opts.num_users or 1)
        rate = float(opts.spawn_rate or users)
        run_time = opts.run_time
        return users, rate, float(run_time) if run_time else None


class RampShape(_CommonShape):
    """Linear ramp to the user count over --shape-ramp-s seconds (default: half the run time), then hold until
    the run time ends."""

    def tick(self) -> tuple[int, float] | None:
        users, rate, run_time = self._common()
        elapsed = self.get_run_time()
        if run_time is not None and elapsed >= run_time:
            return None
        ramp_s = float(self._options().shape_ramp_s or 0.0)
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
        steps = int(opts.shape_steps or DEFAULT_STEPS)
        step_s = float(opts.shape_step_s or DEFAULT_STEP_S)
        return step_users(elapsed, users, steps, step_s), max(rate, 1.0)
