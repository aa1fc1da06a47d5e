"""What every scenario user shares: the ScenarioUser base (think time, its scenario's data and results) and the pure
helpers of `loadlib.scenarios.common`, re-exported here.

A scenario module declares a `ScenarioSpec` (loadlib.locust.scenario_part) and sets it as its user class's `spec`: the
run prepares the data of the scenarios it runs before any request is timed (at `init` on a local runner, at test start
on workers, in a thread), and only checks the user's data files on the master. Users read the prepared data through
`self.data()` and record what they find through `self.found`.
"""

from __future__ import annotations

import itertools
from typing import Any

from loadlib.locust.scenario_part import ScenarioSpec
from loadlib.locust.user import LLMUser, Reply
from loadlib.metrics.scenarios import ScenarioResults
from loadlib.scenarios.common import message_tokens, parse_ints, parse_range, positive, prompt_tokens

__all__ = [
    "Reply",
    "ScenarioSpec",
    "ScenarioUser",
    "message_tokens",
    "parse_ints",
    "parse_range",
    "positive",
    "prompt_tokens",
]


class ScenarioUser(LLMUser):
    """A scenario user: closed loop with the scenario's think time (skipped in an open-loop run)."""

    abstract = True
    scenario = "scenario"

    _seq = itertools.count()

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        self.user_index = next(ScenarioUser._seq)

    def wait_time(self) -> float:
        return self.think_time()

    def think_time(self) -> float:
        return 0.0

    @property
    def found(self) -> ScenarioResults:
        """Where this node's scenario results are counted (loadlib.metrics.scenarios records into it)."""
        return self.run_context.scenarios.results
