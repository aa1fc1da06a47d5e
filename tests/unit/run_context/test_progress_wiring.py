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
