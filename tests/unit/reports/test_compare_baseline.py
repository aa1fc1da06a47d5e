"""`python -m loadlib compare --baseline A B`: the table, its verdicts, Markdown and exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadlib.reports.compare_cli import compare_main
from tests.unit.verdicts.baseline_summaries import lognormal, summary, write

DRAWS = {"ttft": lognormal(100), "e2e": lognormal(400, 0.3)}
SLOW = {"ttft": lognormal(130), "e2e": lognormal(400, 0.3)}


@pytest.fixture()
def files(tmp_path: Path) -> dict[str, str]:
    return {
        "a": write(tmp_path / "a.json", summary(2000, DRAWS, 1)),
        "a2": write(tmp_path / "a2.json", summary(2000, DRAWS, 2)),
        "a3": write(tmp_path / "a3.json", summary(2000, DRAWS, 3)),
        "slow": write(tmp_path / "slow.json", summary(2000, SLOW, 4)),
        "tiny": write(tmp_path / "tiny.json", summary(30, DRAWS, 5)),
    }


def test_a_slowdown_is_a_regression_with_both_intervals_and_exit_1(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md = tmp_path / "cmp.md"
    assert compare_main(["--baseline", files["a"], files["slow"], "--markdown", str(md)]) == 1
    out = capsys.readouterr().out
    (ttft50,) = [ln for ln in out.splitlines() if "ttft" in ln and " p50 " in ln]
    assert ttft50.rstrip().endswith("regressed") and ttft50.count("[") == 3, ttft50
    (e2e50,) = [ln for ln in out.splitlines() if "e2e" in ln and " p50 " in ln]
    assert e2e50.rstrip().endswith("no significant change"), e2e50
    assert "Verdict: REGRESSED" in out and "6 comparisons share a 5 % false-alarm budget" in out
    text = md.read_text()
    assert text.startswith("### Against the baseline: REGRESSED") and "| **regressed** |" in text


def test_like_runs_pooled_on_one_side_exit_0(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert compare_main(["--baseline", files["a"], "--baseline", files["a2"], files["a3"]]) == 0
    out = capsys.readouterr().out
    assert "2 runs pooled" in out and "(4,000 requests)" in out and "Verdict: no regression" in out


def test_the_other_way_round_is_an_improvement(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert compare_main(["--baseline", files["slow"], files["a"]]) == 0
    assert "improved" in capsys.readouterr().out


def test_too_few_requests_are_not_judged(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert compare_main(["--baseline", files["tiny"], files["a"], "--percentiles", "p50,p95"]) == 0
    out = capsys.readouterr().out
    assert "not judged: too few requests (30; a p95 needs 100 on each side)" in out
    assert "Verdict: no regression in 2 comparisons" in out, "the p50s were judged"


def test_a_comparison_that_judged_nothing_says_so_and_exits_3(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not "no regression in 0 comparisons", exit 0: nothing was judged, as a run's `invalid` (exit code 3)."""
    md = tmp_path / "cmp.md"
    argv = ["--baseline", files["tiny"], files["slow"], "--percentiles", "p95", "--markdown", str(md)]
    assert compare_main(argv) == 3
    last = capsys.readouterr().out.rstrip().splitlines()[-1]
    assert last == (
        "Verdict: NOT JUDGED: none of the 2 comparisons had the requests its percentile needs on both sides (a p95 "
        "needs 100; chat @ mock ttft has 30 in the baseline, 2,000 in the candidate): run longer, or pool repeats "
        "(--baseline A --baseline A2, several candidates)"
    )
    assert md.read_text().startswith("### Against the baseline: NOT JUDGED: none of the 2 comparisons")
    assert compare_main(["--baseline", files["a"], files["slow"], "--metrics", "tpot"]) == 3  # neither has tpot
    assert "Verdict: NOT JUDGED: the baseline and the candidate share no row" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--baseline", "missing.json", "x.json"], "compare missing.json: file not found"),
        (["--metrics", "ttft,speed"], "--metrics: unknown 'speed'"),
        (["--percentiles", "p100"], "'p100' is no percentile"),
        (["--tolerance", "lots"], "--tolerance must be a percentage"),
        (["--false-alarm", "0%"], "--false-alarm must be above 0"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    files: dict[str, str], args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = args if "--baseline" in args else ["--baseline", files["a"], files["slow"], *args]
    assert compare_main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1, err


def test_a_saturated_client_is_noted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    busy = {**summary(2000, DRAWS, 6), "client_saturated": True}
    path = write(tmp_path / "busy.json", busy)
    assert compare_main(["--baseline", write(tmp_path / "a.json", summary(2000, DRAWS, 1)), path]) == 0
    assert f"note: the client was saturated in {path}" in capsys.readouterr().out
