"""The regression rule (loadlib.verdicts.baseline) and thresholds against a baseline (loadlib.verdicts.relative)."""

from __future__ import annotations

import math
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from loadlib.errors import ConfigError
from loadlib.histogram import Histogram
from loadlib.locust.verdict_part import baseline_from_options, thresholds_from_options
from loadlib.settings import Options, resolve
from loadlib.verdicts.baseline import (
    IMPROVED,
    NOT_JUDGED,
    REGRESSED,
    UNCHANGED,
    compare,
    comparison_level,
    pool,
    ratio_bounds,
)
from loadlib.verdicts.baseline_file import load_baseline, split_paths
from loadlib.verdicts.evaluate import evaluate
from loadlib.verdicts.relative import Baseline
from loadlib.verdicts.thresholds import parse, parse_option
from tests.unit.verdicts.baseline_summaries import lognormal, summary, write


def drawn(n: int, scale: float, seed: int, sigma: float = 0.5) -> Histogram:
    rng, h = random.Random(seed), Histogram()
    for _ in range(n):
        h.record(100.0 * scale * rng.lognormvariate(0.0, sigma))
    return h


def test_ratio_bounds_combine_both_half_widths() -> None:
    """Equal relative half-widths on both sides: the ratio's is sqrt(2) times as wide on the log scale."""
    low, high = ratio_bounds(100.0, (90.0, 100.0 / 0.9), 100.0, (90.0, 100.0 / 0.9))
    assert math.log(high) == pytest.approx(math.sqrt(2) * math.log(1 / 0.9))
    assert math.log(low) == pytest.approx(-math.sqrt(2) * math.log(1 / 0.9))


def test_a_clear_slowdown_regresses_and_a_speedup_improves() -> None:
    base, slow, fast = drawn(3000, 1.0, 1), drawn(3000, 1.2, 2), drawn(3000, 0.8, 3)
    assert compare(base, slow, 50, 0.95).verdict == REGRESSED
    assert compare(base, fast, 50, 0.95).verdict == IMPROVED
    change = compare(base, slow, 50, 0.95)
    assert change.low is not None and change.high is not None and change.low < 1.2 < change.high
    # a throughput is better higher: the same change the other way round
    assert compare(base, slow, 50, 0.95, higher_is_worse=False).verdict == IMPROVED


def test_a_tolerance_absorbs_a_change_within_it() -> None:
    base, slow = drawn(3000, 1.0, 1), drawn(3000, 1.05, 2)
    assert compare(base, slow, 50, 0.95, tolerance=0.2).verdict == UNCHANGED


def test_too_few_requests_for_the_percentile_are_not_judged() -> None:
    change = compare(drawn(50, 1.0, 1), drawn(50, 2.0, 2), 99, 0.95)
    assert change.verdict == NOT_JUDGED and "too few" in change.why


def test_like_runs_rarely_regress_and_the_level_is_bonferroni() -> None:
    """400 A/A pairs of 300 requests at p50 and p95, each at the level of a 2-comparison table: false 'regressed'
    under the budget's half (2.5 %), with room for chance."""
    level = comparison_level(2)
    assert level == pytest.approx(0.975)
    alarms = 0
    for i in range(400):
        a, b = drawn(300, 1.0, 2 * i), drawn(300, 1.0, 2 * i + 1)
        alarms += any(compare(a, b, p, level).verdict == REGRESSED for p in (50, 95))
    assert alarms <= 0.045 * 400, alarms


def test_pooling_merges_every_row_of_every_summary() -> None:
    one, two = summary(100, {"ttft": lognormal(50)}, 1), summary(200, {"ttft": lognormal(50)}, 2)
    pooled = pool([one, two])
    assert pooled[("chat", "mock")]["ttft"].count == 300 and pooled[("", "")]["ttft"].count == 300


def test_the_baseline_grammar() -> None:
    t = parse("ttft p95 < baseline + 10%")
    assert (t.relative, t.limit) == (pytest.approx(0.1), pytest.approx(1.1))
    assert parse("output_tokens_per_s > baseline - 5%").relative == pytest.approx(-0.05)
    assert parse("e2e p50 <= baseline").relative == 0.0
    for bad, says in (
        ("ttft p95 < baseline + 10ms", "not a baseline limit"),
        ("ttft p95 == baseline", "never judged"),
        ("ttft p95 < baseline - 100%", "nothing of the baseline"),
    ):
        with pytest.raises(ConfigError, match=says):
            parse(bad)


def _judge(expr: str, base_scale: float, cand_scale: float, n: int = 2000) -> dict:
    base = summary(n, {"ttft": lognormal(100 * base_scale)}, 1)
    cand = summary(n, {"ttft": lognormal(100 * cand_scale)}, 2)
    baseline = Baseline((base,), pool([base]), ("base.json",))
    (result,) = evaluate(parse_option(expr), cand, baseline=baseline)
    return result


def test_a_baseline_threshold_fails_only_beyond_its_margin_with_both_intervals() -> None:
    assert _judge("ttft p50 < baseline + 10%", 1.0, 1.3)["passed"] is False
    assert _judge("ttft p50 < baseline + 10%", 1.0, 1.05)["passed"] is True
    assert _judge("ttft p50 < baseline", 1.0, 1.0)["passed"] is True
    result = _judge("ttft p50 < baseline + 10%", 1.0, 1.3)
    assert result["limit"] == pytest.approx(result["value"] / 1.3 * 1.1, rel=0.1)
    assert "against the baseline's" in result["reason"]


def test_a_baseline_threshold_on_a_number_without_interval_uses_the_baseline_value() -> None:
    r = _judge("output_tokens_per_s > baseline - 5%", 1.0, 1.0)
    assert r["passed"] is True and r["limit"] == pytest.approx(200.0 * 0.95) and "baseline 200" in r["reason"]


def test_too_few_requests_against_the_baseline_are_not_judged() -> None:
    result = _judge("ttft p99 < baseline", 1.0, 2.0, n=100)
    assert result["passed"] is None and "at least 500 each" in result["reason"]


def test_baseline_files_are_checked_in_one_line(tmp_path: Path) -> None:
    assert split_paths("a.json; b.json") == ["a.json", "b.json"]
    with pytest.raises(ConfigError, match="file not found"):
        load_baseline([str(tmp_path / "missing.json")])
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(ConfigError, match="not JSON"):
        load_baseline([str(tmp_path / "bad.json")])
    old = summary(10, {"ttft": lognormal(50)}, 1)
    del old["total"]["histograms"]
    with pytest.raises(ConfigError, match="no histograms"):
        load_baseline([write(tmp_path / "old.json", old)])
    with pytest.raises(ConfigError, match="not a loadlib run summary"):
        load_baseline([write(tmp_path / "list.json", [])])  # type: ignore[arg-type]
    pooled = load_baseline([write(tmp_path / f"{i}.json", summary(10, {"ttft": lognormal(50)}, i)) for i in (1, 2)])
    assert pooled.pooled[("", "")]["ttft"].count == 20 and len(pooled.files) == 2


def _options(threshold: str, baseline: str) -> Options:
    return resolve(SimpleNamespace(llm_threshold=threshold, llm_thresholds_file="", llm_baseline=baseline))


def test_the_run_checks_its_baseline_before_any_load(tmp_path: Path) -> None:
    """What the master runs at start-up (a ConfigError there is one line and exit 2, before any request)."""
    with pytest.raises(ConfigError, match=r"add --llm-baseline SUMMARY\.json"):
        thresholds_from_options(_options("ttft p95 < baseline + 10%", ""))
    with pytest.raises(ConfigError, match=r"missing\.json: file not found"):
        thresholds_from_options(_options("ttft p95 < baseline", str(tmp_path / "missing.json")))
    good = write(tmp_path / "base.json", summary(10, {"ttft": lognormal(50)}, 1))
    assert [t.relative for t in thresholds_from_options(_options("ttft p95 < baseline", good))] == [0.0]
    assert baseline_from_options(_options("", f"{good}; {good}"), []).pooled[("", "")]["ttft"].count == 20  # type: ignore[union-attr]


def test_with_threshold_ci_a_ratio_across_the_margin_is_not_judged() -> None:
    """--llm-threshold-ci (evaluate's `confidence`): pass only with the ratio's whole interval within the margin."""
    base = summary(2000, {"ttft": lognormal(100)}, 1)
    cand = summary(2000, {"ttft": lognormal(110)}, 2)
    baseline = Baseline((base,), pool([base]), ("base.json",))
    t = parse_option("ttft p50 < baseline + 10%")
    (lenient,) = evaluate(t, cand, baseline=baseline)
    (strict,) = evaluate(t, cand, baseline=baseline, confidence=0.95)
    assert lenient["passed"] is True and "across x1.100" in lenient["reason"]
    assert strict["passed"] is None and "--llm-threshold-ci decides only" in strict["reason"]
