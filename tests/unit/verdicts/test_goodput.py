"""Goodput: a request is good when it succeeded within every bound of the per-request SLO; the share is counted per
attempt, merged exactly across workers and judged as a threshold. Against hand-built records whose latencies are the
ground truth."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from loadlib.errors import ConfigError, ErrorClass
from loadlib.locust.verdict_part import thresholds_from_options
from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary, render_table
from loadlib.settings import resolve
from loadlib.verdicts.evaluate import evaluate
from loadlib.verdicts.goodput import parse_request_slo
from loadlib.verdicts.thresholds import parse
from tests.support.records import make_record

SLO = parse_request_slo("ttft <= 500ms, tpot < 50ms; e2e <= 2s")


def rec(ttft: float = 100.0, tpot: float | None = 20.0, e2e: float = 900.0, status: ErrorClass = ErrorClass.OK):
    return make_record(ttft_ms=ttft, tpot_ms=tpot, e2e_ms=e2e, status=status)


def test_parse_reads_bounds_in_ms() -> None:
    assert SLO is not None
    assert SLO.bounds == (("ttft_ms", 500.0, False), ("tpot_ms", 50.0, True), ("e2e_ms", 2000.0, False))
    assert SLO.text == "ttft <= 500ms and tpot < 50ms and e2e <= 2s"
    assert parse_request_slo("") is None and parse_request_slo(" ; ") is None


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("ttft >= 5ms", "write METRIC <= NUMBER[ms|s]"),
        ("itl <= 5ms", "unknown metric 'itl'; valid: ttft, ttfo, ttfb, tpot, e2e"),
        ("ttft <= 5min", "unit 'min' is not ms or s"),
        ("ttft <= fast", "write METRIC <= NUMBER[ms|s]"),
    ],
)
def test_bad_bounds_are_one_line_config_errors(text: str, words: str) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        parse_request_slo(text)
    assert words in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("record", "good"),
    [
        (rec(), True),
        (rec(ttft=500.0), True),  # <= includes the bound
        (rec(ttft=500.1), False),
        (rec(tpot=50.0), False),  # < excludes it
        (rec(tpot=None), True),  # one token: no TPOT to exceed
        (rec(e2e=2000.5), False),
        (rec(status=ErrorClass.TIMEOUT_TTFT), False),  # a failure is never good
    ],
)
def test_a_request_is_good_only_within_every_bound(record, good: bool) -> None:
    assert SLO is not None and SLO.meets(record) is good


def test_good_requests_merge_exactly_across_workers_and_judge_as_a_share() -> None:
    assert SLO is not None
    master = LLMStats()
    for fast in (90, 60):  # two workers: 90 and 60 good of 100 each
        worker = LLMStats()
        for i in range(100):
            r = rec(ttft=100.0 if i < fast else 900.0)
            worker.add(r, SLO.meets(r))
        master.merge_serialized(worker.serialize())
    summary = build_summary(master, 10.0, None, {}, SLO.text)
    assert summary["request_slo"] == SLO.text
    assert summary["total"]["good_requests"] == 150 and summary["total"]["goodput"] == 0.75
    (result,) = evaluate([parse("goodput >= 80%")], summary)
    assert result["passed"] is False and result["value"] == 0.75 and "75%" in result["reason"]
    table = render_table(summary)
    assert f"goodput (requests that succeeded with {SLO.text}):" in table and "75.0 % (150 of 200)" in table
    plain = build_summary(master, 10.0, None, {})
    assert plain["request_slo"] is None and plain["total"]["goodput"] is None
    assert "goodput" not in render_table(plain)


def test_a_goodput_threshold_without_a_request_slo_is_refused_before_load() -> None:
    opts = resolve(SimpleNamespace(llm_threshold="goodput >= 95%", llm_thresholds_file="", llm_request_slo=""))
    with pytest.raises(ConfigError, match="needs a per-request SLO"):
        thresholds_from_options(opts)
    assert [t.metric for t in thresholds_from_options(replace(opts, llm_request_slo="ttft <= 1s"))] == ["goodput"]
