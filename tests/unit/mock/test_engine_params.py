"""The engine's settings: MockConfig keys over a named profile, checked when parsed, and a running engine kept while
its parameters stand."""

from __future__ import annotations

import asyncio

import pytest

from loadlib.mock.engine.metrics import EngineMetrics
from loadlib.mock.engine.params import PROFILES, EngineParams
from loadlib.mock.engine.serve import params_of, sync_driver
from loadlib.mockapi.config import MockConfig, MockConfigError, parse_overrides


def test_keys_override_their_profile() -> None:
    cfg = MockConfig().with_overrides(
        parse_overrides("engine=batching,engine_profile=tiny-kv,max_num_seqs=8,prefix_caching=off,step_base_ms=2.5")
    )
    params = params_of(cfg)
    assert params == EngineParams(
        step_base_ms=2.5, max_num_seqs=8, kv_cache_tokens=8192, max_batched_tokens=2048, prefix_caching=False
    )
    assert params_of(MockConfig()) is None  # the fixed mode has no engine
    assert params_of(MockConfig(engine="batching")) == PROFILES["h20-8b"]


@pytest.mark.parametrize(
    ("spec", "word"),
    [
        ("engine=turbo", "engine"),
        ("engine_profile=a100", "engine_profile"),
        ("max_num_seqs=0", "max_num_seqs"),
        ("prefix_caching=yes", "prefix_caching"),
        ("decode_ms_per_seq=-1", "decode_ms_per_seq"),
    ],
)
def test_bad_values_name_their_key(spec: str, word: str) -> None:
    with pytest.raises(MockConfigError, match=word):
        parse_overrides(spec)


def test_a_running_engine_is_kept_until_its_parameters_change() -> None:
    loop = asyncio.new_event_loop()
    try:
        metrics = EngineMetrics()
        batching = MockConfig(engine="batching")
        first = sync_driver(None, batching, loop, metrics)
        assert first is not None and sync_driver(first, batching, loop, metrics) is first
        assert sync_driver(first, batching.with_overrides({"output_tokens": 5}), loop, metrics) is first
        changed = sync_driver(first, batching.with_overrides({"max_num_seqs": 4}), loop, metrics)
        assert changed is not None and changed is not first and changed.params.max_num_seqs == 4
        assert sync_driver(changed, MockConfig(), loop, metrics) is None
    finally:
        loop.close()
