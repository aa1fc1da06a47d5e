"""The run's warm-up (`--llm-warmup`, docs/metrics.md#warm-up): the first part of a run, left out of its statistics,
thresholds and client-saturation verdict. Pure: the clock is given times, it reads none.

`10s` (or `90`, `2m`) is that long from the test's start on each node; `spawned` lasts until all users have spawned
(Locust's spawning complete), `spawned+10s` that and 10 s more. A request is left out when it *started* before the
warm-up ended: one that saw the warm-up's load does not count however late it ends."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from loadlib.option import checked_by

SPAWNED = "spawned"
_SECONDS = re.compile(r"^(\d+(?:\.\d+)?)(s|m)?$")
SYNTAX = "10s, 2m, spawned or spawned+10s"


@dataclass(frozen=True)
class Warmup:
    """How long the warm-up lasts: `seconds` from the test's start, or from all users spawned (`after_spawn`)."""

    seconds: float = 0.0
    after_spawn: bool = False

    @property
    def active(self) -> bool:
        return self.seconds > 0 or self.after_spawn


def parse_warmup(text: str) -> Warmup:
    """`10s` -> Warmup(10.0); `spawned+5s` -> Warmup(5.0, True); "" or "0" -> none; else a one-line ValueError."""
    raw = text.strip().lower()
    after = raw == SPAWNED or raw.startswith(SPAWNED + "+")
    rest = raw.removeprefix(SPAWNED).removeprefix("+") if after else raw
    if not rest:
        return Warmup(0.0, after)
    found = _SECONDS.match(rest)
    if found is None:
        raise ValueError(f"--llm-warmup {text!r}: expected {SYNTAX}")
    return Warmup(float(found.group(1)) * (60.0 if found.group(2) == "m" else 1.0), after)


checked_warmup = checked_by(parse_warmup, "--llm-warmup")  # argparse type of --llm-warmup


class WarmupClock:
    """One node's warm-up: when it ends (unknown until the users have spawned, for `spawned`), and how many requests
    it left out. Times are wall-clock nanoseconds, as a record's `start_unix_ns`."""

    def __init__(self) -> None:
        self.begin(Warmup(), 0, "")

    def begin(self, warmup: Warmup, now_ns: int, text: str) -> None:
        """A test starts at `now_ns` with this warm-up (`text` as the user wrote it)."""
        self.warmup, self.text, self.started_ns, self.excluded = warmup, text, now_ns, 0
        self.end_ns: int | None = None if warmup.after_spawn else now_ns + int(warmup.seconds * 1e9)

    def spawned(self, now_ns: int) -> None:
        """All users have spawned (the first time only: a shape's later spawns are load the user asked for)."""
        if self.end_ns is None:
            self.end_ns = now_ns + int(self.warmup.seconds * 1e9)

    def warming(self, now_ns: int) -> bool:
        """Whether the warm-up is still under way at `now_ns`."""
        return self.warmup.active and (self.end_ns is None or now_ns < self.end_ns)

    def excludes(self, start_ns: int) -> bool:
        """Whether a request that started at `start_ns` is left out (and counts it when it is)."""
        left_out = self.warming(start_ns)
        self.excluded += left_out
        return left_out

    def seconds(self, now_ns: int) -> float:
        """How long the warm-up lasted (so far, when it has not ended by `now_ns`)."""
        end = now_ns if self.end_ns is None else min(self.end_ns, now_ns)
        return max(0.0, (end - self.started_ns) / 1e9)

    def section(self, now_ns: int, excluded: int) -> dict[str, Any] | None:
        """The summary's `warmup` (None without one): `excluded` the requests left out on every node."""
        if not self.warmup.active:
            return None
        ended = self.end_ns is not None and self.end_ns <= now_ns
        return {
            "spec": self.text,
            "seconds": round(self.seconds(now_ns), 3),
            "ended": ended,
            "excluded_requests": excluded,
        }
