"""A node's closed-loop users: each one's phase and think time (docs/scenarios.md, "What a user models").

Locust starts every user of a spawn batch at once, so with no think time their first requests leave within
milliseconds of each other, and a batching server keeps them together for the rest of the run (docs/metrics.md,
"Users in lockstep"). Here each user draws, from a random stream of its own, a phase and, with `--llm-think-time`,
its think times. The streams are seeded by `--data-seed`, the node's index and the user's number on the node, so a
run's phases and think times repeat when its users spawn in the same order.

The phase (`--llm-user-phase`): the first request waits a uniform offset over a window, after the user's connection
is opened. With `auto` the window is the larger of 1 s and the mean think time, and the user spreads itself once
more after its first answer: its first wait is longer by a uniform share of its first cycle (from its first request
to the end of that think time). Independent users are spread over their whole cycle, and with no think time the cycle
is the answer's time, unknown until one has come back; a window shorter than the cycle crowds the first requests
into part of it, and a batching server that ends answers of one length together keeps them so.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable
from typing import Any

from loadlib.errors import ConfigError
from loadlib.pacing import Phase, ThinkTime, mean_wait_s, parse_phase, parse_think
from loadlib.settings import Options


class UserPacing:
    """One user's phase (`phase_s`) and whether its first wait is longer by a uniform share of its first cycle
    (`respread`); `begin()` as its first request is about to go, `wrap(wait_time)` gives the wait_time that adds it."""

    def __init__(self, phase_s: float, respread: bool, rng: random.Random) -> None:
        self.phase_s = phase_s
        self.respread = respread
        self.rng = rng
        self.began: float | None = None

    def begin(self) -> None:
        self.began = time.perf_counter()

    def wrap(self, wait_time: Callable[[], float]) -> Callable[[], float]:
        """`wait_time`, its first call longer by a uniform share of the cycle so far (when `respread`)."""

        def paced() -> float:
            think = float(wait_time())
            if not self.respread or self.began is None:
                return think
            self.respread = False
            return think + self.rng.uniform(0.0, time.perf_counter() - self.began + think)

        return paced


class ClosedLoop:
    """Made at test start on a load node of a closed-loop run; `attach(user)` as each user is made."""

    def __init__(self, options: Options, node_index: int) -> None:
        """ConfigError (one line) on a bad value (the web UI's form sends text the command line would have refused)."""
        try:
            self.phase: Phase = parse_phase(options.llm_user_phase)
            self.think: ThinkTime | None = parse_think(options.llm_think_time)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self.seed = int(options.data_seed or 1)
        self.node_index = node_index
        self._users = itertools.count()

    def window_s(self, user_class: type) -> float:
        """The phase window of a user class: the option's, or for `auto` the larger of 1 s and the users' mean think
        time (--llm-think-time's, else the class's own when it is one of Locust's, else unknown)."""
        think = self.think
        mean = think.mean_s if think is not None else mean_wait_s(getattr(user_class, "wait_time", None))
        return self.phase.window(mean)

    def attach(self, user: Any) -> UserPacing:
        """Give `user` its random stream, its phase and its think time (--llm-think-time's when given, replacing its
        class's), and with `auto` the longer first wait."""
        rng = random.Random(f"{self.seed}:{self.node_index}:{next(self._users)}")
        pacing = UserPacing(rng.uniform(0.0, self.window_s(type(user))), self.phase.window_s is None, rng)
        think = self.think
        if think is not None or pacing.respread:
            user.wait_time = pacing.wrap(user.wait_time if think is None else (lambda: think.draw(rng)))
        return pacing
