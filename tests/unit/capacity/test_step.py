"""A step's window: merged exactly from its nodes, judged with the run's thresholds, its p95 known to a precision,
its client's saturation; and the answer the summary and console carry."""

from __future__ import annotations

from loadlib.capacity import answer
from loadlib.capacity.search import Search
from loadlib.capacity.step import Limits, StepWindow, interval_settled, judge, saturated, settled
from loadlib.errors import ErrorClass
from loadlib.histogram import Histogram
from loadlib.verdicts.thresholds import parse_option
from tests.support.records import make_record

SLO = parse_option("ttft p95 < 500ms; error_rate < 1%")


def window(ttfts: list[float], errors: int = 0) -> StepWindow:
    w = StepWindow()
    for i, t in enumerate(ttfts):
        w.stats.add(make_record(request_id=f"r{i}", ttft_ms=t, e2e_ms=t + 100, completion_tokens=10))
    for i in range(errors):
        w.stats.add(make_record(request_id=f"e{i}", status=ErrorClass.HTTP_5XX))
    return w


def test_two_nodes_windows_merge_into_exactly_the_one_window() -> None:
    ttfts = [float(v) for v in range(1, 301)]
    a, b, merged = window(ttfts[:120]), window(ttfts[120:]), StepWindow()
    merged.merge_serialized(a.serialize())
    merged.merge_serialized(b.serialize())
    assert merged.stats.total.ttft_ms == window(ttfts).stats.total.ttft_ms
    assert merged.stats.total.requests == 300


def test_a_step_passes_or_fails_by_the_thresholds_over_its_window() -> None:
    limits = Limits(SLO)
    assert all(r["passed"] for r in judge(window([100.0] * 200), 10.0, limits))
    slow = judge(window([100.0] * 150 + [900.0] * 50), 10.0, limits)
    assert [r["passed"] for r in slow] == [False, True]
    erring = judge(window([100.0] * 200, errors=10), 10.0, limits)
    assert [r["passed"] for r in erring] == [True, False]


def test_too_few_samples_are_judged_as_they_stand_and_say_so() -> None:
    results = judge(window([900.0] * 30), 10.0, Limits(SLO))
    assert results[0]["passed"] is False and "judged as it stands" in results[0]["reason"]


def test_the_window_settles_when_the_p95_is_known_or_clear_of_the_limit() -> None:
    limits = Limits(SLO, precision=0.05)
    assert not settled(window([100.0] * 50), limits)  # under the 100 samples a p95 needs
    assert settled(window([100.0 + i % 7 for i in range(200)]), limits)  # narrow spread: known within 5 %
    spread = window([float(v) for v in range(1, 201)])  # wide spread around 190 ms, but far below 500 ms
    assert settled(spread, limits)


def test_an_interval_across_the_limit_and_wider_than_the_precision_is_not_settled() -> None:
    h = Histogram()
    h.record_many(float(v) for v in range(1, 201))
    assert not interval_settled(h, 95, 190.0, 0.01)
    assert interval_settled(h, 95, 190.0, 0.5)


def test_with_threshold_ci_a_step_holds_only_when_its_interval_shows_it() -> None:
    """p95 of 1..200 ms is 190 ms, its interval about 180-197 ms. Against `ttft p95 < 195ms` the point value holds,
    but the interval holds the limit: judged as the run's verdict judges it (--llm-threshold-ci), the step has not
    shown the load holds, so it fails and says why; nor does the window end early on a narrow interval."""
    near = parse_option("ttft p95 < 195ms")
    spread = window([float(v) for v in range(1, 201)])
    assert judge(spread, 10.0, Limits(near))[0]["passed"] is True
    strict = judge(spread, 10.0, Limits(near, confidence=0.95))[0]
    assert strict["passed"] is False and "not shown to hold when the window ended" in strict["reason"]
    assert judge(spread, 10.0, Limits(parse_option("ttft p95 < 300ms"), confidence=0.95))[0]["passed"] is True
    assert settled(spread, Limits(near, precision=0.5))
    assert not settled(spread, Limits(near, precision=0.5, confidence=0.95))
    short = judge(window([5.0] * 10), 10.0, Limits(near, confidence=0.95))[0]  # 10 of the 100 a p95 needs
    assert short["passed"] is True and "judged as it stands" in short["reason"]


def test_the_client_is_saturated_when_half_its_seconds_are_over_a_limit() -> None:
    w = StepWindow()
    w.lag.record_many([2.0, 80.0, 85.0, 90.0])
    w.cpu.record_many([20.0] * 4)
    assert saturated(w, Limits(SLO)) is not None
    w.lag = Histogram()
    w.lag.record_many([2.0, 3.0, 4.0, 111.0])  # one stall
    assert saturated(w, Limits(SLO)) is None


def test_the_answer_names_the_first_failing_load_and_its_slo() -> None:
    search = Search(start=8)
    ok, slow = window([100.0] * 200), window([100.0] * 150 + [900.0] * 50)
    rows = [
        answer.step_row(1, 8, ok, 10.0, judge(ok, 10.0, Limits(SLO)), None),
        answer.step_row(2, 16, slow, 10.0, judge(slow, 10.0, Limits(SLO)), None),
    ]
    search.record(8, True)
    search.record(16, False)
    section = answer.section(search, rows, None, 8)
    assert section["max_users"] == 8 and section["first_failed_users"] == 16 and section["gate_passed"]
    assert section["first_failed_by"][0].startswith("ttft p95 < 500ms")
    assert rows[0]["requests_per_s"] == 20.0 and rows[0]["ttft_ms"]["p95"] is not None
    text = answer.lines(section)
    assert "first failing 16 users: ttft p95 < 500ms" in text[1] and "FAIL" in text[3]


def test_a_stopped_search_says_its_answer_is_a_lower_bound() -> None:
    section = answer.section(Search(held=20, maximum=20), [], "the maximum of 20 users held", None)
    assert section["lower_bound"] and "a lower bound only: the maximum of 20 users held" in answer.lines(section)[1]
