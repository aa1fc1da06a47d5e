"""The progress display's words and numbers (loadlib.outputs.progress) and its terminal panel
(loadlib.outputs.progress_panel), from plain numbers: no run, no terminal."""

from __future__ import annotations

import argparse
import io

import pytest
from rich.console import Console

from loadlib.outputs import progress as p
from loadlib.outputs.progress_panel import WIDTH, panel, style_of

BUSY = p.View(
    elapsed_s=12.3,
    run_time_s=30.0,
    users=20,
    target_users=20,
    requests=312,
    requests_per_s=18.44,
    output_tokens_per_s=1234.5,
    ttft_p50_ms=51.02,
    ttft_p95_ms=72.2,
    thresholds=p.Thresholds(2),
    client=p.Client(False, 2.8, 6.0),
)


def text_of(view: p.View, width: int = 120) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(panel(view, "loadlib run r1"))
    return console.export_text()


@pytest.mark.parametrize(
    ("text", "mode", "every"),
    [("auto", "auto", 10.0), ("", "auto", 10.0), ("lines:30", "lines", 30.0), ("bar", "bar", 10.0), ("off", "off", 10)],
)
def test_parse_mode(text: str, mode: str, every: float) -> None:
    assert p.parse_mode(text) == (mode, every)


@pytest.mark.parametrize("text", ["fancy", "lines:0", "lines:abc", "lines:99999", "Lines"])
def test_a_bad_mode_is_one_line_for_argparse(text: str) -> None:
    with pytest.raises(ValueError, match="--llm-progress"):
        p.parse_mode(text)
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        p.checked_mode(text)
    assert "\n" not in str(caught.value) and "--llm-progress" not in str(caught.value)


@pytest.mark.parametrize(
    ("mode", "headless", "worker", "terminal", "kind"),
    [
        ("auto", True, False, True, "bar"),
        ("auto", True, False, False, "lines"),
        ("lines", True, False, True, "lines"),
        ("bar", True, False, False, "bar"),
        ("auto", True, True, True, None),  # never a worker
        ("auto", False, False, True, None),  # the web UI shows its own
        ("locust", True, False, True, None),
        ("off", True, False, False, None),
    ],
)
def test_display_kind(mode: str, headless: bool, worker: bool, terminal: bool, kind: str | None) -> None:
    assert p.display_kind(mode, headless, worker, terminal) == kind


def test_locust_table_is_quieted_unless_asked_for() -> None:
    assert p.quiets_locust("auto", True, False, False)
    assert p.quiets_locust("off", True, False, False)
    assert not p.quiets_locust("locust", True, False, False)
    assert not p.quiets_locust("auto", True, False, True)  # --print-stats asked for it by name
    assert not p.quiets_locust("auto", True, True, False)  # a worker prints no table anyway


def test_rate_over_the_window() -> None:
    history = [(0.0, 0), (5.0, 50), (10.0, 100), (12.0, 140)]
    assert p.rate(history[:1]) is None
    assert p.rate(history[:2]) == 10.0
    assert p.rate(history, window_s=10.0) == pytest.approx(140 / 12.0)  # from the newest sample >= 10 s old
    assert p.rate(history, window_s=5.0) == pytest.approx((140 - 50) / 7.0)
    assert p.rate([(0.0, 100), (2.0, 10)]) == 5.0  # statistics reset: counts from zero, never negative
    assert p.rate([(1.0, 5), (1.0, 9)]) is None


def test_trimmed_keeps_what_rate_needs() -> None:
    history = [(float(t), t) for t in range(30)]
    kept = p.trimmed(history, window_s=10.0)
    assert kept[0] == (19.0, 19) and kept[-1] == (29.0, 29)
    assert p.rate(kept, 10.0) == p.rate(history, 10.0) == 1.0
    assert p.trimmed([]) == []


def result(expression: str, passed: bool | None, op: str = "<", metric: str = "ttft") -> dict:
    return {"expression": expression, "passed": passed, "op": op, "metric": metric, "value": 1, "limit": 2}


def test_tally_names_lost_thresholds_and_keeps_unreached_totals_pending() -> None:
    results = [
        result("ttft p95 < 1s", True),
        result("error_rate < 1%", False, metric="error_rate"),
        result("requests > 1000", False, op=">", metric="requests"),  # not reached yet: can still pass
        result("tpot p99 < 50ms", None),
    ]
    t = p.tally(results, expected=5)
    assert (t.passing, t.failing, t.pending, t.total) == (1, ("error_rate < 1%",), 3, 5)
    assert p.thresholds_text(t) == "thresholds 1/5 pass, 3 pending, FAIL error_rate < 1%"
    assert p.thresholds_text(p.tally([], expected=2)) == "thresholds 0/2 pass, 2 pending"
    assert p.thresholds_text(None) == "no thresholds"
    assert p.thresholds_text(t, done=True) == "thresholds 1/5 pass, 3 not judged, FAIL error_rate < 1%"


def test_client_of_a_summary() -> None:
    summary = {"client_saturated": True, "client": {"loop_lag_p99_ms": 81.25, "cpu_p90_percent": 97.0}}
    c = p.client_of(summary)
    assert p.client_text(c) == "client SATURATED (loop lag p99 81.2 ms, CPU p90 97.0 %)"
    assert p.client_text(c, brief=True) == p.client_text(c)  # a saturated client keeps its figures in a line
    assert p.client_text(p.Client(False, 2.8, 6.0), brief=True) == "client OK"
    assert p.client_text(p.client_of({})) == "client not judged yet"


def test_clock_and_numbers() -> None:
    assert [p.clock(s) for s in (0, 9.9, 65, 3600, 3725, -3)] == ["0:00", "0:09", "1:05", "1:00:00", "1:02:05", "0:00"]
    assert [p.number(v) for v in (None, 0, 51.02, 99.94, 1234.5)] == ["-", "0.0", "51.0", "99.9", "1,234"]
    assert p.number(2.8, "ms") == "2.8 ms"


def test_errors_by_class_largest_first() -> None:
    assert p.errors_text({}, 0) == "errors 0"
    errors = {"timeout": 3, "http_5xx": 2, "rate_limited": 5, "refused": 1}
    assert p.errors_text(errors, 200) == "errors 11 (5.5%): rate_limited 5, timeout 3, http_5xx 2, 1 more classes"
    assert p.errors_text({"timeout": 1}, 0) == "errors 1: timeout 1"


def test_the_line_is_one_compact_record() -> None:
    text = p.line(BUSY)
    assert text == (
        "loadlib progress 0:12/0:30 41% | users 20/20 | 312 req, 18.4/s | 1,234 out tok/s | "
        "TTFT p50 51.0 p95 72.2 ms | errors 0 | thresholds 2/2 pass | client OK"
    )
    assert "\n" not in text and len(text) < 160
    end = p.line(p.View(elapsed_s=4.0, workers=2, done=True))
    assert end.startswith("loadlib progress (end) 0:04 | users 0 on 2 workers | 0 req, -/s | - out tok/s")


def test_a_capacity_search_shows_where_it_stands_in_place_of_the_whole_run_thresholds() -> None:
    """A search overloads on purpose and judges its thresholds per step: the whole run's tally would read FAIL while
    it goes well."""
    from dataclasses import replace

    from loadlib.capacity.answer import brief

    c = {"max_users": 8, "first_failed_users": 16, "lower_bound": False}
    during = replace(BUSY, capacity=brief(c, running=True))
    assert "| capacity search under way: 8 held so far, 16 failed |" in p.line(during)
    assert "thresholds" not in p.line(during)
    assert brief({**c, "lower_bound": True}, running=False) == "capacity max_users 8 (a lower bound)"
    assert brief({"mode": "rate", "max_rate_per_s": 31.5}, running=False) == "capacity max_rate_per_s 31.5"
    rate = {"mode": "rate", "max_users": None, "max_rate_per_s": 12.0, "first_failed_rate_per_s": 24.0}
    assert brief(rate, running=True) == "capacity search under way: 12 req/s held so far, 24 req/s failed"


def test_the_time_without_a_run_length() -> None:
    assert p.fraction(p.View(5.0)) is None
    assert p.time_text(p.View(65.0)) == "1:05"
    assert p.fraction(p.View(50.0, run_time_s=30.0)) == 1.0


def test_the_panel_says_what_the_line_says() -> None:
    text = text_of(BUSY)
    for fact in p.facts(BUSY).values():
        assert fact in text
    assert "━" in text and "loadlib run r1" in text  # the bar, the title
    assert "finished" in text_of(p.View(30.0, run_time_s=30.0, done=True))
    bare = text_of(p.View(3.0))
    assert "elapsed 0:03 (no -t: until stopped)" in bare and "━" not in bare


def test_the_panel_keeps_its_width() -> None:
    widths = {max(len(row) for row in text_of(v).splitlines()) for v in (BUSY, p.View(1.0))}
    assert widths == {WIDTH}
    assert max(len(row) for row in text_of(BUSY, width=60).splitlines()) <= 60


def test_colours_say_what_needs_a_look() -> None:
    failing = p.View(1.0, thresholds=p.Thresholds(1, ("ttft p95 < 1s",)), client=p.Client(True), errors={"x": 1})
    assert style_of("thresholds", failing) == "bold red"
    assert style_of("client", failing) == "bold red"
    assert style_of("errors", failing) == "yellow"
    assert (style_of("thresholds", BUSY), style_of("client", BUSY), style_of("errors", BUSY)) == ("green",) * 3
    assert style_of("client", p.View(1.0)) == "dim"
