"""Repeatable options keep every occurrence: `--llm-threshold A --llm-threshold B` is 'A; B' (argparse's default
would keep B alone and drop A without a word, k6's silently ignored threshold in another form)."""

from __future__ import annotations

import argparse

from loadlib.option import JoinAction
from loadlib.options import OPTIONS


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    for o in OPTIONS:
        if o.repeatable:
            p.add_argument(o.flag, default=o.default, action=JoinAction)
    return p


def test_repeated_flags_join_in_order() -> None:
    ns = parser().parse_args(["--llm-threshold", "ttft p95 < 1s", "--llm-threshold", "error_rate < 1%; requests > 5"])
    assert ns.llm_threshold == "ttft p95 < 1s; error_rate < 1%; requests > 5"


def test_one_occurrence_or_none_is_as_before() -> None:
    assert parser().parse_args(["--llm-drill", "a:refuse@1s+1s"]).llm_drill == "a:refuse@1s+1s"
    assert parser().parse_args([]).llm_threshold == ""


def test_the_lists_that_are_repeatable() -> None:
    assert {o.flag for o in OPTIONS if o.repeatable} == {"--llm-threshold", "--llm-drill", "--llm-baseline"}


def test_baseline_repeats_pool() -> None:
    """--llm-baseline a.json --llm-baseline b.json: both runs, pooled (loadlib.verdicts.baseline_file)."""
    assert (
        parser().parse_args(["--llm-baseline", "a.json", "--llm-baseline", "b.json"]).llm_baseline == "a.json; b.json"
    )


def test_an_empty_value_given_is_refused_in_one_line(capsys) -> None:
    """Issue 21 item 13: `--llm-threshold ''` (or `LLM_THRESHOLD=`, which the environment passes the same way) meant
    no thresholds, silently; the default, which never comes through the action, still does."""
    for blank in ("", "  "):
        try:
            parser().parse_args(["--llm-threshold", blank])
        except SystemExit as stop:
            assert stop.code == 2
        else:
            raise AssertionError(f"{blank!r} was taken")
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert err.endswith(f"--llm-threshold {blank!r}: empty; give a value, or leave --llm-threshold out for none")
