"""The multimodal-latency flag against distributions whose shape is known: a fixed 1 s delay on 20 % of requests is
two modes at the right places; jittered single humps (seeded, ten of each kind) and a few outliers are not."""

from __future__ import annotations

import random

import pytest

from loadlib.histogram import Histogram
from loadlib.metrics.modes import latency_modes
from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary, render_table
from tests.support.records import make_record


def hist(values: list[float]) -> Histogram:
    h = Histogram()
    h.record_many(values)
    return h


def test_a_fixed_delay_on_a_fifth_of_the_requests_is_two_modes_at_their_places() -> None:
    rng = random.Random(7)
    values = [50 + rng.uniform(-5, 5) + (1000 if rng.random() < 0.2 else 0) for _ in range(2000)]
    low, high = latency_modes(hist(values))
    assert low["at_ms"] == pytest.approx(50, abs=2) and high["at_ms"] == pytest.approx(1050, abs=5)
    assert low["share"] == pytest.approx(0.8, abs=0.03) and high["share"] == pytest.approx(0.2, abs=0.03)


@pytest.mark.parametrize("seed", range(10))
def test_jittered_single_humps_are_not_flagged(seed: int) -> None:
    rng = random.Random(seed)
    shapes = (
        [rng.gauss(50, 5) for _ in range(3000)],  # the mock's jittered TTFT
        [50 + rng.expovariate(1 / 15) for _ in range(3000)],  # a long right tail
        [rng.lognormvariate(6, 0.5) for _ in range(3000)],  # E2E of varied answer lengths
    )
    for values in shapes:
        assert latency_modes(hist(values)) == []


def test_a_few_outliers_and_small_samples_are_not_modes() -> None:
    rng = random.Random(3)
    values = [rng.gauss(50, 3) for _ in range(1000)] + [900.0] * 30  # 3 % stalls
    assert latency_modes(hist(values)) == []
    assert latency_modes(hist([50.0] * 40 + [1050.0] * 40)) == [], "under 100 samples: not enough to say"


def test_the_summary_row_and_the_console_name_the_modes() -> None:
    stats = LLMStats()
    for i in range(500):
        ttft = 52.0 + (i % 7) + (1000.0 if i % 5 == 0 else 0.0)
        stats.add(make_record(ttft_ms=ttft, e2e_ms=ttft + 300.0))
    summary = build_summary(stats, 10.0, None, {})
    (row,) = summary["rows"]
    assert set(row["modes"]) == {"ttft", "e2e"} and [m["share"] for m in row["modes"]["ttft"]] == [0.8, 0.2]
    assert "multimodal TTFT, chat @ mock: modes at 55 ms (80 %), 1,055 ms (20 %)" in render_table(summary)
