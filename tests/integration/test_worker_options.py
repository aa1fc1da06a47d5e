"""A worker's own options that the master's replace are said, not ignored in silence: a real master and two real
workers on loopback, one started with --llm-records and -t of its own, the other with the master's -t."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.integration.locust_runs import ROOT, env, free_port, headless, locust_cmd, stop

pytestmark = pytest.mark.integration


def test_options_given_to_a_worker_and_replaced_by_the_masters_are_said_on_both_sides(tmp_path: Path) -> None:
    port, records = free_port(), tmp_path / "w.jsonl"
    bind = ("--master-bind-host", "127.0.0.1", "--master-bind-port", str(port))
    master = subprocess.Popen(
        locust_cmd(*headless(2, 3), "--master", "--expect-workers", "2", "--expect-workers-max-wait", "60", *bind),
        cwd=ROOT,
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    joins = ("--worker", "--master-host", "127.0.0.1", "--master-port", str(port))
    own = [("--llm-records", str(records), "-t", "60s"), ("-t", "3s")]
    workers = [
        subprocess.Popen(locust_cmd(*joins, *extra), cwd=ROOT, env=env(), stderr=subprocess.PIPE, text=True)
        for extra in own
    ]
    try:
        _, master_err = master.communicate(timeout=90)
        errs = [w.communicate(timeout=60)[1] for w in workers]
    finally:
        for p in (master, *workers):
            stop(p)
    assert master.returncode == 0, master_err[-3000:]
    said = [line for line in errs[0].splitlines() if "given to this worker" in line]
    assert len(said) == 1 and said[0].endswith(
        "loadlib: --llm-records, -t given to this worker are ignored: the master's options decide "
        "(it has --llm-records none, -t 3); give them to the master"
    ), errs[0][-3000:]
    heard = [line for line in master_err.splitlines() if "which are ignored" in line]
    assert len(heard) == 1 and f"was given --llm-records '{records}', -t 60, which are ignored" in heard[0], master_err
    assert "given to this worker" not in errs[1], "the worker given the master's -t says nothing"
    assert not records.exists(), "the master's options decided: no records"
