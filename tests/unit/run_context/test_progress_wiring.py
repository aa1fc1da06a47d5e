"""The progress display's wiring into a run (loadlib.locust.progress) without a run: which nodes show it, when
Locust's own table is turned off, and the log handlers moved above the live panel and back."""

from __future__ import annotations

import io
import logging
from types import SimpleNamespace

import pytest

from loadlib.locust import progress
from loadlib.settings import resolve


class Node:
    """What the display reads of a run context before the test starts (a RunContext is weakly referenced too)."""

    def __init__(self, worker: bool, options: dict[str, object]) -> None:
        self.namespace, self.is_worker = SimpleNamespace(**options), worker
        self.options = resolve(self.namespace)

    def amend(self, **values: object) -> None:
        vars(self.namespace).update(values)
        self.options = resolve(self.namespace)


def node(worker: bool = False, **options: object) -> Node:
    defaults = {"headless": True, "worker": worker, "llm_progress": "auto", "print_stats": False, "only_summary": False}
    return Node(worker, {**defaults, **options})


@pytest.mark.parametrize(
    ("options", "quiet"),
    [
        ({}, True),
        ({"llm_progress": "lines:30"}, True),
        ({"llm_progress": "off"}, True),
        ({"llm_progress": "locust"}, False),
        ({"print_stats": True}, False),
        ({"headless": False}, False),
    ],
)
def test_prepare_turns_locusts_table_off_when_ours_replaces_it(options: dict, quiet: bool) -> None:
    ctx = node(**options)
    progress.prepare(ctx)
    assert ctx.options.locust.only_summary is quiet


def test_a_worker_keeps_its_options_and_shows_nothing() -> None:
    ctx = node(worker=True)
    progress.prepare(ctx)
    progress.start(ctx)
    assert ctx.options.locust.only_summary is False and ctx not in progress._DISPLAYS
    progress.stop(ctx)  # nothing to stop: no error


def test_a_web_ui_run_shows_nothing() -> None:
    ctx = node(headless=False)
    progress.start(ctx)
    assert ctx not in progress._DISPLAYS


def test_log_handlers_move_to_the_live_streams_and_back(monkeypatch: pytest.MonkeyPatch) -> None:
    real_err, proxy_err, other = io.StringIO(), io.StringIO(), io.StringIO()
    to_err, to_other = logging.StreamHandler(real_err), logging.StreamHandler(other)
    to_file = logging.FileHandler("/dev/null", delay=True)  # a file is never moved
    logger = logging.getLogger("loadlib.test.progress")
    for handler in (to_err, to_other, to_file):
        logger.addHandler(handler)
    monkeypatch.setattr("sys.stderr", proxy_err)
    try:
        undo = progress.route_logs(io.StringIO(), real_err)
        assert (to_err.stream, to_other.stream) == (proxy_err, other)
        undo()
        assert (to_err.stream, to_other.stream) == (real_err, other)
    finally:
        for handler in (to_err, to_other, to_file):
            logger.removeHandler(handler)


class Total:
    """The merged statistics' total as the display reads it."""

    def __init__(self, requests: int, tokens: int) -> None:
        self.requests, self.completion_tokens_total, self.errors = requests, tokens, {}
        self.ttft_ms = SimpleNamespace(percentiles=lambda qs: (200.0, 300.0))


def running(total: Total, summary: dict[str, object]) -> SimpleNamespace:
    """A run context in the middle of a run, as much of it as `Display.view` reads."""
    runner = SimpleNamespace(state="running", worker_count=0)
    return SimpleNamespace(
        stats=SimpleNamespace(stats=SimpleNamespace(total=total)),
        options=SimpleNamespace(locust=SimpleNamespace(run_time=50, num_users=2000)),
        environment=SimpleNamespace(runner=runner, shape_class=None),
        is_master=False,
        started_at=None,
        user_count=lambda: 2000,
        summary=lambda: summary,
        verdicts=SimpleNamespace(thresholds=[]),
        redact=lambda text: text,
    )


def test_the_last_view_gives_the_runs_rates_not_the_burst_of_attempts_cut_off_at_the_stop() -> None:
    """2,000 streams cut off by the stop end at once: over the last seconds they read 358 req/s where the run held
    190. The last view takes the summary's rates over the measured window; the views before it, the last 10 s."""
    total = Total(4933, 490_000)
    summary = {"total": {"requests_per_s": 190.4, "output_tokens_per_s": 16545.6}, "client": {"saturated": False}}
    display = progress.Display(running(total, summary), progress.LinesOut(), 10.0)
    display.requests, display.tokens = [(0.0, 0)], [(0.0, 0)]
    during = display.view()
    total.requests, total.completion_tokens_total = 6800, 600_000
    last = display.view(done=True)
    assert during.requests_per_s is not None and during.requests_per_s != 190.4
    assert (last.requests_per_s, last.output_tokens_per_s) == (190.4, 16545.6)
