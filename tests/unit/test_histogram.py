"""Histogram: percentiles within the stated relative precision of exact nearest-rank percentiles, exact merging."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import msgpack
import pytest

from loadlib.histogram import RELATIVE_ERROR, Histogram, record_many_into

PS = (0, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 100)


def exact_percentile(values: list[float], p: float) -> float:
    """Textbook nearest rank on the sorted samples: the ceil(p/100 * N)-th smallest (the smallest for p=0)."""
    s = sorted(values)
    rank = max(1, math.ceil(Fraction(str(p)) * len(s) / 100))
    return s[rank - 1]


def assert_within_precision(h: Histogram, values: list[float]) -> None:
    for p in PS:
        got = h.percentile(p)
        want = exact_percentile(values, p)
        assert got is not None
        assert abs(got - want) <= RELATIVE_ERROR * abs(want) * (1 + 1e-9), (p, got, want)


def assert_same(a: Histogram, b: Histogram) -> None:
    """Identical state; the float sum may differ in its last bits when added in another order."""
    da, db = a.to_dict(), b.to_dict()
    assert da.pop("sum") == pytest.approx(db.pop("sum"), rel=1e-12)
    assert da == db


def datasets() -> list[tuple[str, list[float]]]:
    out = []
    for seed in range(8):
        rng = random.Random(seed)
        n = rng.randint(1, 3000)
        out.append((f"lognormal-{seed}", [rng.lognormvariate(math.log(200), 0.8) for _ in range(n)]))
        out.append((f"uniform-{seed}", [rng.uniform(0, 5000) for _ in range(n)]))
    rng = random.Random(99)
    out.append(("wide", [10 ** rng.uniform(-6, 6) for _ in range(2000)]))
    out.append(("with-zeros", [0.0] * 30 + [rng.expovariate(1 / 15) for _ in range(300)]))
    out.append(("integers", [float(rng.randint(1, 4096)) for _ in range(1000)]))
    out.append(("constant", [147.0] * 500))
    out.append(("single", [123.456]))
    out.append(("two", [1.0, 1000.0]))
    return out


@pytest.mark.parametrize(("name", "values"), datasets(), ids=[n for n, _ in datasets()])
def test_percentiles_within_stated_precision(name: str, values: list[float]) -> None:
    h = Histogram()
    for v in values:
        h.record(v)
    assert_within_precision(h, values)
    assert h.count == len(values)
    assert h.min == min(values)
    assert h.max == max(values)
    assert h.percentile(0) == min(values)
    assert h.percentile(100) == max(values)
    assert h.sum == pytest.approx(math.fsum(values), rel=1e-12)
    assert h.mean == pytest.approx(math.fsum(values) / len(values), rel=1e-12)


def test_precision_is_better_than_three_significant_digits() -> None:
    assert RELATIVE_ERROR < 0.001


def test_locust_rounding_case_keeps_three_digits() -> None:
    h = Histogram()
    h.record(147.0)
    h.record(147.0)
    h.record(999.0)
    assert h.percentile(50) == pytest.approx(147.0, rel=RELATIVE_ERROR)
    assert round(h.percentile(50)) == 147


def test_bucket_edges_and_extremes() -> None:
    values = [2.0**k for k in range(-30, 30)] + [1 + k / 512 for k in range(512)] + [1e-300, 1e300, 5e-324]
    values += [math.nextafter(v, 0.0) for v in values if v > 5e-324]
    one, many = Histogram(), Histogram()
    for v in values:
        one.record(v)
        single = Histogram()
        single.record(v)
        got = single.percentile(50)
        assert got == v  # one sample: clamped into [min, max]
    many.record_many(values)
    assert_same(one, many)
    assert_within_precision(many, values)


def test_record_many_equals_record() -> None:
    rng = random.Random(7)
    values = [rng.lognormvariate(3, 1) for _ in range(1000)] + [0.0, 0.0, -0.0]
    a, b, c = Histogram(), Histogram(), Histogram()
    for v in values:
        a.record(v)
    b.record_many(values)
    c.record_many(iter(values))  # any iterable
    assert_same(a, b)
    assert_same(a, c)


def test_record_many_into_feeds_several_histograms() -> None:
    key, total = Histogram(), Histogram()
    total.record(5000.0)
    record_many_into((key, total), (10.0, 20.0, 0.0))
    assert key.count == 3
    assert total.count == 4
    assert key.max == 20.0
    assert total.max == 5000.0
    assert key.percentile(0) == 0.0


def test_empty() -> None:
    h = Histogram()
    h.record_many([])
    assert h.percentile(50) is None
    assert h.percentiles([50, 99]) == [None, None]
    assert h.mean is None
    assert h.count == 0
    assert Histogram.from_dict(h.to_dict()) == h


def test_zero_and_negative_values() -> None:
    a, b = Histogram(), Histogram()
    values = [0.0, -0.0, -5.0, 3.0]
    for v in values:
        a.record(v)
    b.record_many(values)
    for h in (a, b):
        assert h.negative == 1
        assert h.count == 4
        assert h.min == 0.0
        assert h.sum == 3.0
        assert h.percentile(50) == 0.0
        assert h.percentile(100) == 3.0
    assert a.to_dict() == b.to_dict()


@pytest.mark.parametrize("bad", [math.nan, -math.nan, math.inf, -math.inf])
def test_non_finite_values_are_rejected(bad: float) -> None:
    h = Histogram()
    with pytest.raises(ValueError, match="finite"):
        h.record(bad)
    with pytest.raises(ValueError, match="finite"):
        h.record_many([1.0, bad, -2.0])
    assert h.count == 0


@pytest.mark.parametrize("p", [-1, 100.01, math.nan])
def test_percentile_out_of_range(p: float) -> None:
    h = Histogram()
    h.record(1.0)
    with pytest.raises(ValueError):
        h.percentile(p)


def test_percentiles_match_single_calls() -> None:
    rng = random.Random(3)
    h = Histogram()
    h.record_many([rng.expovariate(0.01) for _ in range(5000)])
    ps = [99, 50, 0, 95, 100, 50]
    assert h.percentiles(ps) == [h.percentile(p) for p in ps]


def test_merging_two_halves_equals_recording_all() -> None:
    rng = random.Random(11)
    values = [rng.lognormvariate(4, 1.2) for _ in range(4000)] + [0.0] * 10
    rng.shuffle(values)
    whole, first, second = Histogram(), Histogram(), Histogram()
    whole.record_many(values)
    first.record_many(values[:1500])
    for v in values[1500:]:
        second.record(v)
    first.merge(second)
    assert_same(first, whole)


def test_merge_halves_identical_dicts_when_sums_are_exact() -> None:
    """With values whose float sums are exact (multiples of 1/64 ms), the dicts are identical to the last bit."""
    rng = random.Random(5)
    values = [rng.randint(0, 64 * 5000) / 64 for _ in range(3000)]
    whole, first, second = Histogram(), Histogram(), Histogram()
    whole.record_many(values)
    first.record_many(values[:1000])
    second.record_many(values[1000:])
    first.merge(second)
    assert first.to_dict() == whole.to_dict()


def test_merge_into_empty_and_with_empty() -> None:
    h = Histogram()
    h.record_many([1.0, 2.0])
    empty = Histogram()
    empty.merge(h)
    assert empty == h
    h.merge(Histogram())
    assert h.count == 2
    assert h.min == 1.0


def test_serialisation_round_trip_msgpack_and_json() -> None:
    rng = random.Random(2)
    h = Histogram()
    h.record_many([rng.lognormvariate(2, 2) for _ in range(2000)] + [0.0, -1.0])
    d = h.to_dict()
    assert all(isinstance(k, str) for k in d)
    packed = msgpack.dumps(d)  # Locust's worker -> master transport
    back = Histogram.from_dict(msgpack.loads(packed, raw=False, strict_map_key=False))
    assert back.to_dict() == d
    assert back == h
    assert Histogram.from_dict(json.loads(json.dumps(d))) == h
    assert back.percentiles(PS) == h.percentiles(PS)


def test_from_dict_rejects_unknown_format() -> None:
    with pytest.raises(ValueError, match="format"):
        Histogram.from_dict({"v": 99})


def test_four_workers_merged_percentiles_match_all_samples() -> None:
    """Simulate Locust: 4 workers with different latency profiles ship serialised histograms; the master merges."""
    rng = random.Random(42)
    profiles = [(math.log(100), 0.3), (math.log(150), 0.5), (math.log(400), 0.2), (math.log(120), 1.0)]
    all_values: list[float] = []
    master = Histogram()
    for mu, sigma in profiles:
        worker = Histogram()
        for _ in range(3):  # three report intervals, the worker resets after each like Locust's stats
            batch = [rng.lognormvariate(mu, sigma) for _ in range(rng.randint(200, 900))]
            all_values += batch
            worker.record_many(batch)
            wire = msgpack.loads(msgpack.dumps(worker.to_dict()), raw=False, strict_map_key=False)
            master.merge(Histogram.from_dict(wire))
            worker.reset()
    assert master.count == len(all_values)
    assert_within_precision(master, all_values)
    single = Histogram()
    single.record_many(all_values)
    assert_same(master, single)


def test_reset() -> None:
    h = Histogram()
    h.record_many([1.0, -2.0])
    h.reset()
    assert h == Histogram()
    assert h.negative == 0
