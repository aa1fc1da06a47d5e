"""LLMStats: what each record counts towards, and worker -> master merging equal to one collection of all records."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import msgpack
import pytest

from loadlib.errors import ErrorClass
from loadlib.metrics.stats import LLMStats, LLMStatsEntry
from loadlib.records.record import RequestRecord
from tests.support.records import make_record

T0 = 1_700_000_000_000_000_000


def rec(**kw: Any) -> RequestRecord:
    base: dict[str, Any] = {
        "start_unix_ns": T0,
        "ttfb_ms": 40.0,
        "first_event_ms": 45.0,
        "ttft_ms": 50.0,
        "ttfo_ms": 50.0,
        "e2e_ms": 250.0,
        "itl_ms": (10.0, 20.0, 0.0),
        "tpot_ms": 10.0,
        "output_events": 4,
        "prompt_tokens": 100,
        "completion_tokens": 21,
        "prompt_tokens_est": 104,
        "completion_tokens_est": 20,
        "cost_usd": 0.001,
    }
    base.update(kw)
    return make_record(**base)


def failed(status: ErrorClass, **kw: Any) -> RequestRecord:
    defaults: dict[str, Any] = {
        "status": status,
        "ttfb_ms": 3.0,
        "first_event_ms": None,
        "ttft_ms": None,
        "ttfo_ms": None,
        "e2e_ms": 3.5,
        "itl_ms": (),
        "tpot_ms": None,
        "prompt_tokens": None,
        "completion_tokens": None,
        "completion_tokens_est": None,
        "cost_usd": None,
    }
    defaults.update(kw)
    return rec(**defaults)


def test_counts_errors_and_histograms() -> None:
    s = LLMStats()
    s.add(rec())
    s.add(rec(ttft_ms=70.0, itl_ms=(5.0,)))
    s.add(failed(ErrorClass.RATE_LIMITED, http_status=429))
    s.add(failed(ErrorClass.RATE_LIMITED, http_status=429))
    s.add(failed(ErrorClass.HTTP_5XX, http_status=503))
    e = s.entries[("chat", "mock")]
    assert (e.requests, e.ok, e.failed) == (5, 2, 3)
    assert e.errors == {"rate_limited": 2, "http_5xx": 1}
    # timings of successful attempts only, TTFB included
    for name in ("ttfb_ms", "first_event_ms", "ttft_ms", "ttfo_ms", "e2e_ms", "tpot_ms", "decode_tps"):
        assert getattr(e, name).count == 2, name
    assert e.ttft_ms.max == 70.0
    assert e.ttfb_ms.min == 40.0
    assert e.itl_ms.count == 4  # every gap of every successful request
    assert e.itl_ms.min == 0.0
    assert e.decode_tps.min == pytest.approx(21 / 0.2)  # 21 tokens in 200 ms (the other request: 180 ms)
    assert s.total.requests == 5
    assert s.total.errors == e.errors
    assert s.total.itl_ms.count == 4


def test_tokens_cost_and_deviation() -> None:
    s = LLMStats()
    s.add(rec())  # usage 100/21, estimates 104/20: deviations +4 % and -4.8 %
    s.add(rec(prompt_tokens=None, completion_tokens=None, cost_usd=None))  # estimates only, no price
    s.add(rec(completion_tokens=10, completion_tokens_est=20, cached_prompt_tokens=64))  # +100 % completion
    s.add(failed(ErrorClass.TRUNCATED, completion_tokens=5, prompt_tokens=100, cost_usd=0.0002))
    s.add(failed(ErrorClass.CONNECT_ERROR, ttfb_ms=None))
    e = s.entries[("chat", "mock")]
    assert e.prompt_tokens_total == 100 + 104 + 100 + 100 + 104  # usage preferred, estimate as fallback
    assert e.completion_tokens_total == 21 + 20 + 10 + 5
    assert e.cached_prompt_tokens_total == 64
    assert e.cost_usd == pytest.approx(0.001 + 0.001 + 0.0002)
    assert e.priced == 3
    assert e.unpriced == 1  # the estimate-only request; the connect error produced no tokens
    assert e.completion_dev_pct.count == 2  # requests with both usage and estimate
    assert e.completion_dev_over_10pct == 1
    assert e.prompt_dev_over_10pct == 0
    assert e.prompt_dev_pct.max == pytest.approx(4.0, rel=1e-3)
    assert e.completion_tokens.count == 3  # distributions: successful requests only
    assert e.prompt_tokens.max == pytest.approx(104, rel=1e-3)


def test_deviation_skips_missing_or_zero_usage() -> None:
    s = LLMStats()
    s.add(rec(completion_tokens=0, completion_tokens_est=3))
    s.add(rec(prompt_tokens_est=None))
    e = s.total
    assert e.completion_dev_pct.count == 1
    assert e.prompt_dev_pct.count == 1


def test_time_window_and_open_loop() -> None:
    s = LLMStats()
    s.add(rec(start_unix_ns=T0 + 5_000_000, e2e_ms=100.0))
    s.add(rec(start_unix_ns=T0, e2e_ms=20.0, intended_send_ms=1000.0, schedule_lag_ms=30.0))
    s.add(
        failed(
            ErrorClass.TIMEOUT_TTFT,
            start_unix_ns=T0 + 1_000_000,
            e2e_ms=500.0,
            intended_send_ms=0.0,
            schedule_lag_ms=5.0,
        )
    )
    s.add(rec(start_unix_ns=0))  # unknown start: ignored for the window
    e = s.entries[("chat", "mock")]
    assert e.first_start_unix_ns == T0
    assert e.last_end_unix_ns == T0 + 501_000_000
    assert e.schedule_lag_ms.count == 2  # every attempt with an intended send time
    assert e.e2e_from_intended_ms.count == 1  # successful ones only
    assert e.e2e_from_intended_ms.max == pytest.approx(50.0)
    assert e.ttft_from_intended_ms.max == pytest.approx(80.0)


def test_keys_and_total() -> None:
    s = LLMStats()
    s.add(rec(scenario="chat", endpoint="a"))
    s.add(rec(scenario="chat", endpoint="b"))
    s.add(rec(scenario="summarise", endpoint="a", ttft_ms=900.0))
    assert sorted(s.entries) == [("chat", "a"), ("chat", "b"), ("summarise", "a")]
    merged = LLMStatsEntry("", "")
    for e in s.entries.values():
        merged.merge(e)
    assert merged == s.total
    assert s.total.ttft_ms.max == 900.0


def random_records(n: int, seed: int) -> list[RequestRecord]:
    rng = random.Random(seed)
    statuses = [ErrorClass.OK] * 8 + [ErrorClass.RATE_LIMITED, ErrorClass.STREAM_BROKEN, ErrorClass.TIMEOUT_IDLE]
    out = []
    for i in range(n):
        status = rng.choice(statuses)
        ttft = rng.lognormvariate(math.log(150), 0.5)
        n_tok = rng.randint(1, 300)
        itl = tuple(rng.expovariate(1 / 12) for _ in range(n_tok - 1))
        e2e = ttft + sum(itl)
        lag = rng.uniform(0, 20) if i % 3 == 0 else None
        kw: dict[str, Any] = {
            "scenario": rng.choice(["chat", "summarise", "compliance"]),
            "endpoint": rng.choice(["primary", "fallback"]),
            "request_id": f"q{i}",
            "start_unix_ns": T0 + rng.randint(0, 60_000_000_000),
            "ttfb_ms": ttft * 0.8,
            "first_event_ms": ttft * 0.9,
            "ttft_ms": ttft,
            "ttfo_ms": ttft,
            "e2e_ms": e2e,
            "itl_ms": itl,
            "tpot_ms": (e2e - ttft) / (n_tok - 1) if n_tok > 1 else None,
            "prompt_tokens": rng.choice([None, rng.randint(50, 5000)]),
            "completion_tokens": n_tok if rng.random() < 0.9 else None,
            "prompt_tokens_est": rng.randint(50, 5000),
            "completion_tokens_est": n_tok + rng.randint(-20, 20),
            "cached_prompt_tokens": rng.choice([None, 0, 32]),
            "cost_usd": rng.choice([None, rng.uniform(0, 0.01)]),
            "intended_send_ms": 1000.0 * i if lag is not None else None,
            "schedule_lag_ms": lag,
        }
        if status is ErrorClass.OK:
            out.append(rec(**kw))
        else:
            kw.update(status=status, ttft_ms=None, ttfo_ms=None, tpot_ms=None, itl_ms=())
            out.append(rec(**kw))
    return out


def assert_close(a: Any, b: Any, path: str = "") -> None:
    """Equal, except floats (sums added in another order) equal to 1e-9 relative."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), path
        for k in a:
            assert_close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), path
    else:
        assert a == b, path


def by_key(serialized: dict[str, Any]) -> dict[tuple[str, str], Any]:
    return {(d["scenario"], d["endpoint"]): d for d in serialized["entries"]}


def test_three_workers_merged_equal_one_collection() -> None:
    records = random_records(600, seed=1)
    everything = LLMStats()
    for r in records:
        everything.add(r)
    master = LLMStats()
    workers = [LLMStats() for _ in range(3)]
    rng = random.Random(2)
    for chunk_start in range(0, len(records), 100):  # a report every 100 records, reset after shipping
        for r in records[chunk_start : chunk_start + 100]:
            rng.choice(workers).add(r)
        for w in workers:
            wire = msgpack.loads(msgpack.dumps(w.serialize()), raw=False, strict_map_key=False)
            master.merge_serialized(wire)
            w.reset()
    want, got = everything.serialize(), master.serialize()
    assert_close(by_key(got), by_key(want))
    assert_close(got["total"], want["total"])
    assert master.total.itl_ms.percentiles([50, 99]) == everything.total.itl_ms.percentiles([50, 99])
    assert master.total.requests == 600


def test_serialize_is_msgpack_and_json_safe() -> None:
    s = LLMStats()
    for r in random_records(50, seed=3):
        s.add(r)
    data = s.serialize()
    assert msgpack.loads(msgpack.dumps(data), raw=False) == json.loads(json.dumps(data))
    empty = LLMStats().serialize()
    assert msgpack.loads(msgpack.dumps(empty), raw=False) == empty


def test_merge_serialized_rejects_unknown_format() -> None:
    with pytest.raises(ValueError, match="format"):
        LLMStats().merge_serialized({"v": 0, "entries": [], "total": {}})


def test_reset() -> None:
    s = LLMStats()
    s.add(rec())
    s.reset()
    assert s.entries == {}
    assert s.total == LLMStatsEntry("", "")
