"""The capacity search's options (docs/capacity.md), kept beside the search and added to the registry
(loadlib.options) in its place after the shapes."""

from __future__ import annotations

from loadlib.capacity.search import CONTROLS
from loadlib.option import CAPACITY, Option

CAPACITY_OPTIONS: tuple[Option, ...] = (
    Option(
        "--llm-capacity-control",
        "What the search sets: closed-loop users, or an open-loop arrival rate (requests/s of the whole run).",
        CAPACITY,
        "users",
        choices=CONTROLS,
    ),
    Option("--llm-capacity-start", "Load of the search's first step: users, or requests/s.", CAPACITY, 1.0, float),
    Option(
        "--llm-capacity-max", "Largest load tried; when it holds, the answer is a lower bound.", CAPACITY, 1000.0, float
    ),
    Option(
        "--llm-capacity-precision",
        "Relative precision: the search ends when the smallest failing load is within it of the largest that held, "
        "and a step's window may end early once each threshold's percentile is known within it.",
        CAPACITY,
        0.05,
        float,
    ),
    Option("--llm-capacity-warmup-s", "Seconds of each step left out before its window opens.", CAPACITY, 10.0, float),
    Option("--llm-capacity-window-s", "Longest measuring window of a step, seconds.", CAPACITY, 30.0, float),
    Option(
        "--llm-capacity-min",
        "CI gate: exit code 99 when the capacity found is below this (0: none).",
        CAPACITY,
        0.0,
        float,
    ),
    Option(
        "--llm-capacity-inflight-s",
        "Rate search: users kept per request/s of the rate (a request still waiting after this long holds a user "
        "its successor needed, which then goes late).",
        CAPACITY,
        5.0,
        float,
    ),
    Option(
        "--llm-capacity-drain-s",
        "Rate search: longest wait, sending nothing, for the queue a failed step left to drain before the next step "
        "(0: no drain).",
        CAPACITY,
        30.0,
        float,
    ),
    Option(
        "--llm-capacity-confirm-s",
        "Hold the answer this many seconds to confirm it (0: no hold).",
        CAPACITY,
        0.0,
        float,
    ),
)
