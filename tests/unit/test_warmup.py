"""--llm-warmup (docs/metrics.md#warm-up): its syntax, one line of error for a bad one, and the clock that decides
which requests the statistics leave out and what the summary says was excluded."""

from __future__ import annotations

import argparse

import pytest

from loadlib.metrics.warmup import Warmup, WarmupClock, checked_warmup, parse_warmup

S = 1_000_000_000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", Warmup()),
        ("0", Warmup()),
        ("10s", Warmup(10.0)),
        ("90", Warmup(90.0)),
        ("1.5m", Warmup(90.0)),
        ("spawned", Warmup(0.0, True)),
        ("Spawned+5s", Warmup(5.0, True)),
    ],
)
def test_the_syntax(text: str, expected: Warmup) -> None:
    assert parse_warmup(text) == expected


@pytest.mark.parametrize("text", ["ten", "10h", "-5s", "spawned-5s", "5s+spawned"])
def test_a_bad_warmup_is_one_line_of_error(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"^expected 10s, 2m, spawned or spawned\+10s$"):
        checked_warmup(text)


def test_seconds_from_the_start_leave_out_requests_that_started_inside() -> None:
    clock = WarmupClock()
    clock.begin(parse_warmup("10s"), 100 * S, "10s")
    assert clock.excludes(100 * S) and clock.excludes(109 * S + S // 2)
    assert not clock.excludes(110 * S) and not clock.excludes(200 * S)
    assert clock.excluded == 2
    assert clock.section(150 * S, 7) == {"spec": "10s", "seconds": 10.0, "ended": True, "excluded_requests": 7}


def test_spawned_lasts_until_all_users_have_spawned_and_the_seconds_after() -> None:
    clock = WarmupClock()
    clock.begin(parse_warmup("spawned+2s"), 0, "spawned+2s")
    assert clock.warming(1000 * S), "unknown end: still warming"
    clock.spawned(30 * S)
    clock.spawned(60 * S)  # a later spawn (a shape) does not move it
    assert clock.warming(31 * S) and not clock.warming(32 * S)
    section = clock.section(40 * S, 3)
    assert section is not None and section["seconds"] == 32.0 and section["ended"]


def test_a_run_that_ends_inside_it_says_so_and_none_has_no_section() -> None:
    clock = WarmupClock()
    clock.begin(parse_warmup("spawned"), 0, "spawned")
    section = clock.section(5 * S, 40)
    assert section is not None and section["ended"] is False and section["seconds"] == 5.0
    clock.begin(parse_warmup(""), 0, "")
    assert clock.section(5 * S, 0) is None and not clock.excludes(0)


def test_markdown_says_what_the_warmup_left_out() -> None:
    from loadlib.outputs.markdown import markdown_summary

    summary = {"duration_s": 8.0, "meta": {}, "warmup": {"spec": "spawned+2s", "seconds": 3.25, "ended": True}}
    summary["warmup"]["excluded_requests"] = 41
    assert "Warm-up left out (--llm-warmup spawned+2s): 3.2 s, 41 requests." in markdown_summary(summary)
