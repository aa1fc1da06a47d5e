"""What every scenario user shares: the ScenarioUser base (closed or open loop), the shared options, and data
preparation before the first request (the pure helpers are in `loadlib.scenarios.common`, re-exported here).

Data is prepared where options are known and before any request is timed: at `init` on a local runner (the master
only checks the user's data files, so a malformed file stops the run at start-up with `file:line: reason`), and at
`test_start` on workers (they receive the master's options then), in a thread so the worker's event loop keeps
running. Users read the prepared context; the heavy parts are memoised in `loadlib.data`.
"""

from __future__ import annotations

import gevent
from locust import events
from locust.runners import MasterRunner, WorkerRunner

import itertools
import logging
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from loadlib import tokens
from loadlib.errors import LoadlibError
from loadlib.pacing import PROCESSES, ArrivalSchedule, wait_for_slot, worker_rate
from loadlib.runtime import worker_id_of
from loadlib.scenarios import results
from loadlib.scenarios.common import message_tokens, parse_ints, parse_range, positive, prompt_tokens
from loadlib.user import LLMUser, Reply

log = logging.getLogger("loadlib.scenarios")
T = TypeVar("T")
__all__ = [
    "ScenarioUser",
    "install_preparation",
    "memoised",
    "message_tokens",
    "parse_ints",
    "parse_range",
    "positive",
    "prompt_tokens",
]


# shared options and open-loop pacing


def add_shared_arguments(parser: Any) -> None:
    parser.add_argument(
        "--data-seed", type=int, default=1, help="Seed of the generated scenario data (same seed, same data)."
    )
    parser.add_argument(
        "--data-cache-dir",
        default="",
        include_in_web_ui=False,
        help="Where generated data is cached (default ~/.cache/loadlib/data).",
    )
    parser.add_argument(
        "--arrival-rate",
        type=float,
        default=0.0,
        help="Open loop: target requests/s of the whole run (split evenly over --expect-workers); 0 = closed loop "
        "(each user waits for its answer and its think time).",
    )
    parser.add_argument(
        "--arrival-process",
        default="poisson",
        choices=PROCESSES,
        help="Open loop: Poisson arrivals or evenly spaced ones.",
    )
    parser.add_argument(
        "--scenario-slo",
        default="",
        help="Override scenario SLOs, e.g. 'support_chat.ttft_p95_ms=300,compliance.schema_valid_share=0.95'.",
    )


def arrivals(environment: Any) -> ArrivalSchedule | None:
    """This worker's arrival schedule, or None for a closed-loop run."""
    return getattr(environment, "_llm_arrivals", None)


def _start_arrivals(environment: Any, **_: Any) -> None:
    environment._llm_arrivals = None
    if isinstance(environment.runner, MasterRunner):
        return
    opts = environment.parsed_options
    rate = float(getattr(opts, "arrival_rate", 0.0) or 0.0)
    if rate <= 0:
        return
    process = str(getattr(opts, "arrival_process", "poisson"))
    if process not in PROCESSES:
        log.error("loadlib: --arrival-process must be one of %s, got %r", ", ".join(PROCESSES), process)
        environment.runner.quit()
        return
    expected = getattr(opts, "expect_workers", None) if isinstance(environment.runner, WorkerRunner) else None
    share = worker_rate(rate, expected)
    runner = environment.runner
    seed = int(getattr(opts, "data_seed", 1) or 1) * 1000 + int(getattr(runner, "worker_index", 0) or 0)
    environment._llm_arrivals = ArrivalSchedule(share, process, seed)
    results.open_loop_config(environment, worker_id_of(environment), share, process)


def _install_shared() -> None:
    if getattr(events, "_loadlib_scenario_base_installed", False):
        return
    events._loadlib_scenario_base_installed = True
    events.init_command_line_parser.add_listener(add_shared_arguments)
    events.test_start.add_listener(_start_arrivals)
    results.install(events)


_install_shared()


class ScenarioUser(LLMUser):
    """A scenario user: closed loop with the scenario's think time, or open loop when --arrival-rate is set (then
    every request waits for the worker's next arrival slot and think time is replaced by the schedule)."""

    abstract = True
    scenario = "scenario"

    _seq = itertools.count()

    def __init__(self, environment: Any) -> None:
        super().__init__(environment)
        self.user_index = next(ScenarioUser._seq)

    def wait_time(self) -> float:
        if arrivals(self.environment) is not None:
            return 0.0
        return self.think_time()

    def think_time(self) -> float:
        return 0.0

    def send(self, messages: list[dict[str, Any]], **kwargs: Any) -> Reply:
        """`chat()` with the open-loop slot (intended send time) when the run is open loop."""
        schedule = arrivals(self.environment)
        if schedule is not None:
            kwargs["intended_send_ms"] = wait_for_slot(schedule, gevent.sleep)
            results.open_loop_sent(self.environment)
        return self.chat(messages, **kwargs)


# data preparation


def _fail(message: str) -> None:
    """A user mistake at start-up: one line on stderr and a non-zero exit, no traceback (as loadlib.plugin)."""
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    sys.exit(2)


def in_thread(fn: Callable[[], T]) -> T:
    """Run CPU-heavy preparation in a real thread so the worker's hub (heartbeats, running users) keeps going."""
    return gevent.get_hub().threadpool.apply(fn)


def install_preparation(
    name: str,
    prepare: Callable[[Any], Any],
    validate: Callable[[Any], None],
) -> None:
    """Prepare a scenario's data at start-up on every load-generating node; on the master only `validate` the
    user's files. `prepare(environment)` must memoise on the environment (it is also called from users)."""
    flag = f"_loadlib_prepare_{name}"
    if getattr(events, flag, False):
        return
    setattr(events, flag, True)

    def on_init(environment: Any, **_: Any) -> None:
        runner = environment.runner
        if isinstance(runner, WorkerRunner):
            tokens.get_encoding()  # load the tokenizer now: building it holds the GIL for a while
            return
        if environment.parsed_options is None:
            return
        try:
            if isinstance(runner, MasterRunner):
                validate(environment.parsed_options)
            else:
                prepare(environment)
        except LoadlibError as exc:
            _fail(str(exc))

    def on_test_start(environment: Any, **_: Any) -> None:
        if isinstance(environment.runner, MasterRunner):
            return
        try:
            in_thread(lambda: prepare(environment))
        except LoadlibError as exc:
            log.error("loadlib: %s", exc)
            environment.runner.quit()

    events.init.add_listener(on_init)
    events.test_start.add_listener(on_test_start)


def memoised(environment: Any, name: str, signature: tuple[Any, ...], build: Callable[[], T]) -> T:
    """The context `name` of this environment, rebuilt only when its option signature changes (web UI edits)."""
    store = environment.__dict__.setdefault("_llm_scenario_contexts", {})
    cached = store.get(name)
    if cached is not None and cached[0] == signature:
        return cached[1]
    value = build()
    store[name] = (signature, value)
    return value
