"""What the web UI reads from the node parts: each worker's saturation verdict, the charts' timeline (the parts
module imports no Locust, so these run without a runner)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from loadlib.errors import ConfigError
from loadlib.histogram import Histogram
from loadlib.locust.parts import HealthPart, StatsPart
from loadlib.locust.weblogin import credentials, matches
from loadlib.settings import resolve
from tests.support.records import make_record


def health(lags: list[float], cpus: list[float]) -> dict:
    lag, cpu = Histogram(), Histogram()
    lag.record_many(lags)
    cpu.record_many(cpus)
    return {"loop_lag_ms": lag.to_dict(), "cpu_percent": cpu.to_dict()}


def test_each_worker_gets_its_own_saturation_verdict() -> None:
    part = HealthPart()
    part.merge(health([1.0, 2.0, 3.0], [20.0, 30.0]), "worker-a")
    part.merge(health([200.0, 300.0, 400.0], [99.0, 99.0]), "worker-b")
    summary: dict = {"total": {}}
    part.summarize(summary)
    assert summary["client_saturated"] is True, "the merged verdict sees the starved worker"
    assert summary["clients"]["worker-a"]["saturated"] is False
    assert summary["clients"]["worker-b"]["saturated"] is True and summary["clients"]["worker-b"]["reasons"]
    part.reset()
    part.summarize(summary)
    assert summary["clients"] == {}


def test_the_master_keeps_a_timeline_and_workers_do_not() -> None:
    """A worker ships its records' slices with its statistics; the master shows the interval they fall in with its
    counts, not yet complete (no rate) while it can still get more reports on it."""
    node = SimpleNamespace(options=resolve(None), is_worker=False, is_master=True, user_count=lambda: 3)
    master, worker = StatsPart(), StatsPart()
    master.start(node)
    worker.start(SimpleNamespace(**{**vars(node), "is_worker": True, "is_master": False}))
    worker.add(make_record())
    master.merge(worker.ship(), "w1")
    assert worker.timeline is None and worker.ship()["timeline"]["buckets"] == [], "shipped once"
    total = master.timeline.feed()["series"]["Aggregated"]
    assert sum(total["requests"]) == master.stats.total.requests == 1
    assert total["complete"] == [False] and total["tokens_per_s"] == [None]
    master.reset()
    assert sum(master.timeline.feed()["series"]["Aggregated"]["requests"]) == 0


def test_web_login_needs_both_variables_and_names_the_missing_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_WEB_USERNAME", "operator")
    monkeypatch.delenv("LLM_WEB_PASSWORD", raising=False)
    with pytest.raises(ConfigError, match="needs LLM_WEB_PASSWORD set in the environment"):
        credentials()
    monkeypatch.setenv("LLM_WEB_PASSWORD", "pass phrase")
    assert credentials() == ("operator", "pass phrase")
    assert matches("pass phrase", "pass phrase") and not matches("pass", "pass phrase")
