"""A worker's own options that the master's replace: which are named (given to the worker, other than the master's),
the two lines that say so, and when the worker says it (the spawn that starts a test, before Locust applies the
master's options)."""

from __future__ import annotations

from locust.runners import STATE_INIT, STATE_RUNNING

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from loadlib.locust.worker_options import IGNORED, Ignored, OwnOptions, ignored, master_line, worker_line
from loadlib.settings import Options, resolve


def options(**given: Any) -> Options:
    return resolve(SimpleNamespace(**given))


def test_only_options_given_to_the_worker_and_other_than_the_masters_are_named() -> None:
    worker = options(llm_records="w.jsonl", llm_model="mock-llm", chat_turns=5, run_time=600, num_users=None)
    master = options(llm_records="", llm_model="gpt-4o", chat_turns=5, run_time=30, num_users=8)
    assert ignored(worker, master) == [Ignored("--llm-records", "w.jsonl", ""), Ignored("-t", 600, 30)], (
        "the model is at its default on the worker (it follows the master's), chat turns are equal, -u not given"
    )
    assert ignored(options(), master) == [], "a plain worker follows the master"
    assert ignored(master, master) == [], "the same options on both sides"


def test_an_option_the_master_too_was_started_with_and_its_web_form_changed_is_not_named() -> None:
    worker = options(llm_model="gpt-4o", llm_records="w.jsonl", num_users=10)
    started = {"llm_model": "gpt-4o", "num_users": 10}  # the master's command line, as it sends it
    master = options(llm_model="gpt-4o-mini", llm_records="", num_users=20, llm_master_given=started)
    assert ignored(worker, master) == [Ignored("--llm-records", "w.jsonl", "")], (
        "the model and -u are the master's own, changed in its form since: the worker was given what the master was"
    )


def test_a_switch_and_expect_workers_count_too() -> None:
    worker = options(llm_cold_connect=True, expect_workers=4)
    master = options(llm_cold_connect=False, expect_workers=2)
    assert [i.flag for i in ignored(worker, master)] == ["--llm-cold-connect", "--expect-workers"]


def test_the_lines_name_the_options_and_what_was_used() -> None:
    one = [Ignored("--llm-records", "w.jsonl", "")]
    assert worker_line(one) == (
        "--llm-records given to this worker is ignored: the master's options decide (it has none); "
        "give it to the master"
    )
    assert master_line("w1", one) == (
        "worker w1 was given --llm-records 'w.jsonl', which is ignored: the master's options decide (this master has "
        "none); give it to the master"
    )
    two = [*one, Ignored("--llm-cold-connect", True, False)]
    assert "(it has --llm-records none, --llm-cold-connect off); give them" in worker_line(two)
    assert "given --llm-records 'w.jsonl', --llm-cold-connect on, which are ignored" in master_line("w1", two)


class FakeWorkerRunner:
    def __init__(self) -> None:
        self.worker_state = STATE_INIT
        self.sent: list[tuple[str, Any]] = []
        self.handled: list[Any] = []

    def handle_message(self, msg: Any) -> None:
        self.handled.append(msg)

    def send_message(self, kind: str, data: Any) -> None:
        self.sent.append((kind, data))


def spawn(**master: Any) -> Any:
    return SimpleNamespace(type="spawn", data={"parsed_options": master})


def test_the_worker_says_it_once_per_test_start_then_locust_handles_the_spawn(caplog: pytest.LogCaptureFixture) -> None:
    runner = FakeWorkerRunner()
    namespace = SimpleNamespace(llm_records="w.jsonl")
    environment = SimpleNamespace(runner=runner, parsed_options=namespace)
    OwnOptions(environment)
    namespace.llm_records = ""  # Locust applies the master's options on the worker's namespace: the copy stays
    with caplog.at_level(logging.WARNING, logger="loadlib"):
        runner.handle_message(spawn(llm_records=""))
        runner.worker_state = STATE_RUNNING
        runner.handle_message(spawn(llm_records=""))  # a ramp's next spawn: the same test
    assert [r.getMessage() for r in caplog.records] == [
        f"loadlib: {worker_line([Ignored('--llm-records', 'w.jsonl', '')])}"
    ]
    assert runner.sent == [(IGNORED, [["--llm-records", "w.jsonl", ""]])]
    assert len(runner.handled) == 2, "every message goes on to Locust's own handling"


def test_a_worker_given_the_masters_options_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    runner = FakeWorkerRunner()
    OwnOptions(SimpleNamespace(runner=runner, parsed_options=SimpleNamespace(llm_records="r.jsonl", run_time=30)))
    with caplog.at_level(logging.WARNING, logger="loadlib"):
        runner.handle_message(spawn(llm_records="r.jsonl", run_time=30))
    assert caplog.records == [] and runner.sent == []
