"""The pool file: parsing, one-line errors that name the source and the place, overrides, cross checks, a pool of
one."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from loadlib.config import Timeouts, make_endpoint
from loadlib.errors import ConfigError, ErrorClass
from loadlib.failover.breaker import DEFAULT_COUNTED, BreakerConfig
from loadlib.failover.pool import (
    EndpointSpec,
    PoolConfig,
    Targets,
    check_pool,
    parse_pool,
    pool_of_one,
    read_pool,
    with_overrides,
)
from loadlib.failover.retry import DEFAULT_RETRYABLE, RetryConfig
from loadlib.records.pricing import ModelPrice

REPO = Path(__file__).resolve().parents[3]
FULL = """
policy: weighted
endpoints:
  - {name: primary, mock: {ttft_ms: 50}}
  - {name: secondary, provider: openai, base_url: https://api.example.com/v1, model: gpt-4o-mini,
     key_env: OPENAI_API_KEY, priority: 2, weight: 3, prices: {input: 0.15, output: 0.6}, timeouts: {ttft: 10}}
breaker: {failures: 3, failure_rate: 0.4, window_s: 20, min_calls: 10, cooldown_s: 2s, probes: 2,
          count: [connect_error, timeout_*, http_5xx]}
retry: {max_attempts: 3, backoff_base_s: 0.1, backoff_max_s: 2, retry_after_max_s: 10, budget: 0.3,
        budget_window_s: 10, retry_on: [rate_limited], retry_after_cooldown: true}
hedge: {after_ms: 300}
drills:
  - {endpoint: primary, fault: http_503, at: 20s, for: 20s}
  - {endpoint: primary, fault: rate_limit, at: 1m, for: 10s, retry_after_s: 2}
targets: {failover_within_s: 4, user_error_rate_max: 0.02, detect_within_s: null}
"""
BASE = {"endpoints": [{"name": "a", "base_url": "http://127.0.0.1:8000/v1", "key_env": "none"}]}


def error_of(fn: Callable[[], Any]) -> str:
    """The ConfigError's message, checked to be one line."""
    with pytest.raises(ConfigError) as info:
        fn()
    message = str(info.value)
    assert "\n" not in message and message.strip() == message
    return message


def pool_with(**top: Any) -> dict[str, Any]:
    return {**json.loads(json.dumps(BASE)), **top}


def endpoint_with(**fields: Any) -> dict[str, Any]:
    return {"endpoints": [{"name": "a", "base_url": "http://127.0.0.1:8000/v1", **fields}]}


@pytest.fixture
def pool_file(tmp_path: Path) -> Callable[[str], str]:
    def write(text: str) -> str:
        path = tmp_path / "pool.yaml"
        path.write_text(text, encoding="utf-8")
        return str(path)

    return write


# -- the whole file ----------------------------------------------------------------------------------------------------


def test_full_file(pool_file: Callable[[str], str]) -> None:
    path = pool_file(FULL)
    pool = parse_pool(read_pool(path), path)
    assert pool.policy == "weighted" and pool.names == ("primary", "secondary") and pool.source == path
    primary, secondary = pool.endpoints
    assert primary.is_mock and primary.server_side_drills and primary.base_url is None
    assert primary.mock == {"ttft_ms": 50.0}
    assert not secondary.is_mock and not secondary.server_side_drills
    assert secondary.priority == 2 and secondary.weight == 3.0 and secondary.key_env == "OPENAI_API_KEY"
    assert secondary.prices == ModelPrice(0.15, 0.6, None)
    assert secondary.timeouts == {"ttft": 10.0}
    assert pool.endpoint("secondary") is secondary
    counted = {ErrorClass.CONNECT_ERROR, ErrorClass.HTTP_5XX} | {c for c in ErrorClass if c.startswith("timeout_")}
    assert pool.breaker == BreakerConfig(3, 0.4, 20.0, 10, 2.0, 2, frozenset(counted))
    assert pool.retry == RetryConfig(3, 0.1, 2.0, 10.0, 0.3, 10.0, frozenset({ErrorClass.RATE_LIMITED}), True)
    assert pool.hedge_after_ms == 300.0
    assert [(d.endpoint, d.fault, d.at_s, d.for_s, dict(d.params)) for d in pool.drills] == [
        ("primary", "http_503", 20.0, 20.0, {}),
        ("primary", "rate_limit", 60.0, 10.0, {"retry_after_s": 2.0}),
    ]
    assert pool.drills[1].origin == f"{path}: drills[1]"
    assert pool.targets == Targets(4.0, 0.02, None, None)


def test_defaults() -> None:
    pool = parse_pool(BASE, "p.yaml")
    assert pool.policy == "priority" and pool.hedge_after_ms == 0.0 and pool.drills == ()
    assert pool.breaker == BreakerConfig() and pool.breaker.counted == DEFAULT_COUNTED
    assert pool.retry == RetryConfig() and pool.retry.retry_on == DEFAULT_RETRYABLE
    assert pool.targets == Targets()
    (spec,) = pool.endpoints
    assert (spec.provider, spec.model, spec.priority, spec.weight, spec.prices, spec.timeouts) == (
        "openai",
        "gpt-4o-mini",
        1,
        1.0,
        None,
        None,
    )


def test_prices_take_a_cache_read_and_a_cache_write_price() -> None:
    prices = {"input": 3, "output": 15, "cached_input": 0.3, "cache_write": 3.75}
    (spec,) = parse_pool(endpoint_with(prices=prices), "p.yaml").endpoints
    assert spec.prices == ModelPrice(3.0, 15.0, cached_input=0.3, cache_write=3.75)


def test_empty_mock_is_a_default_mock() -> None:
    for mock in ({}, None):
        (spec,) = parse_pool({"endpoints": [{"name": "m", "mock": mock}]}, "p").endpoints
        assert spec.is_mock and spec.mock == {}


def test_partial_timeouts_merge_over_the_run_s() -> None:
    (spec,) = parse_pool(endpoint_with(timeouts={"ttft": "1.5s", "idle": 5}), "p").endpoints
    run = Timeouts(connect=3.0, ttft=60.0, idle=30.0, total=600.0)
    assert spec.timeouts_over(run) == Timeouts(connect=3.0, ttft=1.5, idle=5.0, total=600.0)
    assert dataclasses.replace(run, **spec.timeouts) == spec.timeouts_over(run)  # settings.make_target's way
    assert EndpointSpec("x", base_url="http://h/v1").timeouts_over(run) is run


def test_docs_example_parses() -> None:
    """The pool file shown in docs/failover.md is a valid pool."""
    docs = (REPO / "docs" / "failover.md").read_text(encoding="utf-8")
    block = re.search(r"## The pool file.*?```yaml\n(.*?)```", docs, re.S)
    assert block is not None
    pool = parse_pool(yaml.safe_load(block.group(1)), "docs/failover.md")
    assert len(pool.endpoints) >= 2 and pool.drills


# -- reading -----------------------------------------------------------------------------------------------------------


def test_inline_json_and_yaml() -> None:
    data = read_pool(json.dumps(BASE))
    assert parse_pool(data, json.dumps(BASE)).names == ("a",)
    assert read_pool("{endpoints: [{name: a, mock: {}}]}") == {"endpoints": [{"name": "a", "mock": {}}]}


def test_inline_errors_name_the_option_not_the_text() -> None:
    text = '{"endpoints": [{"name": "a", "base_url": "http://h/v1", "wieght": 2}]}'
    message = error_of(lambda: parse_pool(read_pool(text), text))
    assert message.startswith("--llm-pool: endpoints[0]: unknown key 'wieght'")
    assert "did you mean 'weight'" in message


def test_yaml_syntax_error_is_one_line_with_the_line(pool_file: Callable[[str], str]) -> None:
    path = pool_file("policy: priority\nendpoints:\n  - {name: a, base_url: http://h/v1\n")
    message = error_of(lambda: read_pool(path))
    assert message.startswith(f"{path}: not valid YAML (line ")
    assert re.search(r"line \d+, column \d+", message)


def test_duplicate_yaml_key_is_an_error(pool_file: Callable[[str], str]) -> None:
    path = pool_file("policy: priority\npolicy: weighted\nendpoints: []\n")
    message = error_of(lambda: read_pool(path))
    assert "line 2" in message and "'policy' given twice" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", "is empty"), ("[1, 2]", "the top level must be a mapping"), ("just words", "the top level must be")],
)
def test_file_shape(pool_file: Callable[[str], str], text: str, expected: str) -> None:
    path = pool_file(text)
    message = error_of(lambda: read_pool(path))
    assert message.startswith(f"{path}: ") and expected in message


def test_missing_file_and_directory(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.yaml")
    assert error_of(lambda: read_pool(missing)).startswith(f"{missing}: no such file")
    assert error_of(lambda: read_pool(str(tmp_path))).startswith(f"{tmp_path}: ")


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"policy: \xe9\n")
    assert "not UTF-8" in error_of(lambda: read_pool(str(path)))


# -- one-line errors naming the place ---------------------------------------------------------------------------------

BAD_POOLS: list[tuple[dict[str, Any], str]] = [
    ({"endpoints": []}, "endpoints must be a non-empty list"),
    ({}, "endpoints must be a non-empty list"),
    (pool_with(polcy="priority"), "unknown key 'polcy' (did you mean 'policy'?); allowed: policy, endpoints"),
    (pool_with(policy="fastest"), "policy must be one of priority, weighted, latency, least_busy, cost, got 'fastest'"),
    ({"endpoints": ["a"]}, "endpoints[0] must be a mapping"),
    ({"endpoints": [{"base_url": "http://h/v1"}]}, "endpoints[0] lacks 'name'"),
    ({"endpoints": [{"name": "a b", "mock": {}}]}, "endpoints[0].name must use letters"),
    (endpoint_with(weight=0), "endpoints[0].weight must be a number > 0"),
    (endpoint_with(weight=-1.5), "endpoints[0].weight must be a number > 0"),
    (endpoint_with(weight="heavy"), "endpoints[0].weight must be a number, got 'heavy'"),
    (endpoint_with(priority=0), "endpoints[0].priority must be a whole number >= 1"),
    (endpoint_with(priority=1.5), "endpoints[0].priority must be a whole number"),
    (endpoint_with(provider="gemini"), "endpoints[0].provider must be one of openai, anthropic, got 'gemini'"),
    (endpoint_with(base_url="ftp://h/v1"), "endpoints[0].base_url is wrong: malformed base URL"),
    (endpoint_with(base_url="http://user:pw@h/v1"), "endpoints[0].base_url is wrong: base URL must not carry"),
    ({"endpoints": [{"name": "a"}]}, "endpoints[0] has no base_url"),
    (endpoint_with(mock={}), "endpoints[0] gives both mock and base_url"),
    ({"endpoints": [{"name": "a", "mock": {}, "admin_url": "http://h:1"}]}, "gives both mock and admin_url"),
    (endpoint_with(admin_url="nonsense"), "endpoints[0].admin_url is wrong"),
    (endpoint_with(key_env="sk-live-1234"), "endpoints[0].key_env must name the environment variable"),
    (endpoint_with(prices={"input": 1}), "endpoints[0].prices lacks 'output'"),
    (endpoint_with(prices={"input": 1, "output": -2}), "endpoints[0].prices.output must be a number >= 0"),
    (endpoint_with(prices={"input": 1, "output": 2, "cache": 1}), "endpoints[0].prices: unknown key 'cache'"),
    (endpoint_with(prices={"input": 1, "output": 2, "cache_write": -1}), "prices.cache_write must be a number >= 0"),
    (endpoint_with(timeouts={"ttft": 0}), "endpoints[0].timeouts.ttft must be a number > 0"),
    (endpoint_with(timeouts={"first_token": 3}), "endpoints[0].timeouts: unknown key 'first_token'"),
    (endpoint_with(timeouts={"ttft": "soon"}), "endpoints[0].timeouts.ttft must be a duration like 20s"),
    ({"endpoints": [{"name": "a", "mock": {"ttft_ms": -1}}]}, "endpoints[0].mock: ttft_ms must be >= 0"),
    ({"endpoints": [{"name": "a", "mock": {"ttft": 1}}]}, "endpoints[0].mock: unknown key 'ttft'"),
    ({"endpoints": [{"name": "a", "mock": {"usage": "always"}}]}, "endpoints[0].mock: usage must be one of"),
    ({"endpoints": [{"name": "a", "mock": {"output_tokens": True}}]}, "endpoints[0].mock.output_tokens must be"),
    ({"endpoints": [{"name": "a", "mock": "fast"}]}, "endpoints[0].mock must be a mapping"),
    (
        {"endpoints": [{"name": "a", "mock": {}}, {"name": "a", "mock": {}}]},
        "endpoints[1].name repeats 'a' (endpoints[0])",
    ),
    (pool_with(breaker={"failure_rate": 1.5}), "breaker.failure_rate must be a number >= 0 and <= 1, got 1.5"),
    (pool_with(breaker={"probes": 0}), "breaker.probes must be a number >= 1"),
    (pool_with(breaker={"window_s": 0}), "breaker.window_s must be a number > 0"),
    (pool_with(breaker={"count": ["http_6xx"]}), "breaker.count[0] 'http_6xx' names no error class; use: http_4xx"),
    (pool_with(breaker={"count": ["ok"]}), "breaker.count[0] 'ok' names no error class"),
    (pool_with(breaker={"count": "http_5xx"}), "breaker.count must be a list of error classes"),
    (pool_with(breaker={"cooldown": 5}), "breaker: unknown key 'cooldown' (did you mean 'cooldown_s'?)"),
    (pool_with(breaker=[1]), "breaker must be a mapping"),
    (pool_with(retry={"max_attempts": 0}), "retry.max_attempts must be a number >= 1"),
    (pool_with(retry={"budget": -0.1}), "retry.budget must be a number >= 0"),
    (pool_with(retry={"retry_on": ["timeout_*", "nope"]}), "retry.retry_on[1] 'nope' names no error class"),
    (pool_with(retry={"attempts": 2}), "retry: unknown key 'attempts'"),
    (pool_with(retry={"retry_after_cooldown": "yes"}), "retry.retry_after_cooldown must be true or false"),
    (pool_with(hedge={"after": 3}), "hedge: unknown key 'after'"),
    (pool_with(hedge={"after_ms": -1}), "hedge.after_ms must be a number >= 0"),
    (pool_with(targets={"failover_s": 3}), "targets: unknown key 'failover_s'"),
    (pool_with(targets={"user_error_rate_max": 2}), "targets.user_error_rate_max must be a number >= 0 and <= 1"),
    (pool_with(drills={"endpoint": "a"}), "drills must be a list"),
    (pool_with(drills=[{"endpoint": "a", "fault": "http_503", "at": 1}]), "drills[0] lacks 'for'"),
    (pool_with(drills=[{"endpoint": "b", "fault": "http_503", "at": 1, "for": 2}]), "drills[0] names endpoint 'b'"),
    (pool_with(drills=[{"endpoint": "a", "fault": "boom", "at": 1, "for": 2}]), "drills[0].fault must be one of"),
    (pool_with(drills=[{"endpoint": "a", "fault": "stall", "at": -1, "for": 2}]), "drills[0].at must be a number >="),
    (pool_with(drills=[{"endpoint": "a", "fault": "stall", "at": 1, "for": "0s"}]), "drills[0].for must be a number >"),
    (
        pool_with(drills=[{"endpoint": "a", "fault": "stall", "at": 1, "for": 2, "retry_after_s": 1}]),
        "drills[0] gives 'retry_after_s', which fault 'stall' does not take; it takes: rate",
    ),
    (
        pool_with(drills=[{"endpoint": "a", "fault": "latency", "at": 1, "for": 2, "rate": 1.5}]),
        "drills[0].rate must be a number >= 0 and <= 1",
    ),
    (pool_with(drills=[{"endpoint": "a", "fault": "stall", "at": 1, "for": 2, "when": 3}]), "drills[0]: unknown key"),
    (
        pool_with(drills=[{"endpoint": "a", "fault": "broken", "at": 1, "for": 2}]),
        "drills[0] asks for fault 'broken', which needs a mock endpoint or admin_url",
    ),
    (
        pool_with(
            drills=[
                {"endpoint": "a", "fault": "http_503", "at": "20s", "for": "20s"},
                {"endpoint": "a", "fault": "rate_limit", "at": "30s", "for": "20s"},
            ]
        ),
        "drills[1] overlaps p.yaml: drills[0] on endpoint 'a' (30-50 s vs 20-40 s)",
    ),
]


@pytest.mark.parametrize(("data", "expected"), BAD_POOLS)
def test_bad_pool_is_one_line_naming_the_place(data: dict[str, Any], expected: str) -> None:
    message = error_of(lambda: parse_pool(data, "p.yaml"))
    assert message.startswith("p.yaml: ")
    assert expected in message


def test_known_endpoints_are_listed() -> None:
    data = {
        "endpoints": [{"name": "primary", "mock": {}}, {"name": "secondary", "mock": {}}],
        "drills": [{"endpoint": "primray", "fault": "refuse", "at": 0, "for": 1}],
    }
    assert error_of(lambda: parse_pool(data, "p.yaml")).endswith("known: primary, secondary")


def test_broken_is_fine_on_a_mock_or_an_admin_url() -> None:
    drill = {"fault": "broken", "at": 1, "for": 2, "after_tokens": 3}
    data = {
        "endpoints": [{"name": "m", "mock": {}}, {"name": "s", "base_url": "http://h:8/v1", "admin_url": "http://h:8"}],
        "drills": [{"endpoint": "m", **drill}, {"endpoint": "s", **drill}],
    }
    pool = parse_pool(data, "p")
    assert [dict(d.params) for d in pool.drills] == [{"after_tokens": 3}] * 2


def test_refuse_with_a_rate_is_client_side_only() -> None:
    refuse = {"fault": "refuse", "at": 1, "for": 2, "rate": 0.5}
    parse_pool(pool_with(drills=[{"endpoint": "a", **refuse}]), "p")
    mock = {"endpoints": [{"name": "m", "mock": {}}], "drills": [{"endpoint": "m", **refuse}]}
    assert "refuse a rate below 1 on a mock endpoint" in error_of(lambda: parse_pool(mock, "p"))


def test_back_to_back_drills_do_not_overlap() -> None:
    drills = [
        {"endpoint": "a", "fault": "http_503", "at": 10, "for": 10},
        {"endpoint": "a", "fault": "stall", "at": 20, "for": 5},
    ]
    assert len(parse_pool(pool_with(drills=drills), "p").drills) == 2


def test_the_key_is_never_quoted() -> None:
    message = error_of(lambda: parse_pool(endpoint_with(key_env="sk-live-SECRET"), "p"))
    assert "SECRET" not in message


# -- keys --------------------------------------------------------------------------------------------------------------


def test_missing_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POOL_TEST_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    pool = parse_pool(endpoint_with(key_env="POOL_TEST_KEY"), "p.yaml")  # parsing does not need the key
    message = error_of(lambda: check_pool(pool))
    assert message == (
        "p.yaml: endpoints[0] (a) needs an API key in the environment variable POOL_TEST_KEY, which is not set: "
        "export POOL_TEST_KEY=... (or set key_env: none for a server without auth)"
    )
    check_pool(pool, require_keys=False)
    monkeypatch.setenv("POOL_TEST_KEY", "k")
    check_pool(pool)
    default = parse_pool(endpoint_with(provider="anthropic"), "p.yaml")
    assert "ANTHROPIC_API_KEY" in error_of(lambda: check_pool(default))


def test_mocks_and_none_need_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    check_pool(parse_pool({"endpoints": [{"name": "m", "mock": {}}]}, "p"))
    check_pool(parse_pool(endpoint_with(key_env="none"), "p"))
    check_pool(parse_pool(endpoint_with(key_env="NONE"), "p"))


def test_check_pool_catches_pools_built_in_code() -> None:
    spec = EndpointSpec("a", base_url="http://h/v1", key_env="none")
    assert "endpoints[1].name repeats 'a'" in error_of(lambda: check_pool(PoolConfig((spec, spec))))
    bad_weight = dataclasses.replace(spec, weight=0.0)
    assert error_of(lambda: check_pool(PoolConfig((bad_weight,), source="code"))).startswith(
        "code: endpoints[0].weight must be a number > 0"
    )
    assert "must list at least one endpoint" in error_of(lambda: check_pool(PoolConfig(())))
    assert "policy must be one of" in error_of(lambda: check_pool(PoolConfig((spec,), policy="random")))


# -- command-line overrides --------------------------------------------------------------------------------------------


def test_overrides_replace_the_file_s_values() -> None:
    pool = parse_pool(yaml.safe_load(FULL), "p.yaml")
    out = with_overrides(pool, policy="priority", max_attempts=5, retry_budget=0.5, hedge_after_ms=0)
    assert out.policy == "priority" and out.retry.max_attempts == 5 and out.retry.budget == 0.5
    assert out.hedge_after_ms == 0.0
    assert out.retry.backoff_max_s == pool.retry.backoff_max_s and out.breaker == pool.breaker
    assert with_overrides(pool) == pool  # nothing given: nothing changes


def test_command_line_drills_are_added() -> None:
    pool = parse_pool(yaml.safe_load(FULL), "p.yaml")
    out = with_overrides(pool, drills=["secondary:latency@100s+5s", " ", "endpoint=primary,fault=stall,at=2m,for=1"])
    assert [(d.endpoint, d.fault, d.at_s) for d in out.drills[2:]] == [
        ("secondary", "latency", 100.0),
        ("primary", "stall", 120.0),
    ]
    assert out.drills[:2] == pool.drills


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {"policy": "random"},
            "--llm-policy must be one of priority, weighted, latency, least_busy, cost, got 'random'",
        ),
        ({"max_attempts": 0}, "--llm-max-attempts must be a number >= 1, got 0"),
        ({"retry_budget": -1.0}, "--llm-retry-budget must be a number >= 0, got -1"),
        ({"hedge_after_ms": -5.0}, "--llm-hedge-after-ms must be a number >= 0, got -5"),
        ({"drills": ["nobody:http_503@1s+1s"]}, "--llm-drill 'nobody:http_503@1s+1s' names endpoint 'nobody'"),
        ({"drills": ["primary:stall@25s+5s"]}, "--llm-drill 'primary:stall@25s+5s' overlaps p.yaml: drills[0]"),
        (
            {"drills": ["secondary:broken@1+1"]},
            "--llm-drill 'secondary:broken@1+1' asks for fault 'broken', which needs a mock endpoint or admin_url",
        ),
        ({"drills": ["primary:oops"]}, "--llm-drill 'primary:oops' is not a drill"),
    ],
)
def test_bad_override_is_one_line(kwargs: dict[str, Any], expected: str) -> None:
    pool = parse_pool(yaml.safe_load(FULL), "p.yaml")
    message = error_of(lambda: with_overrides(pool, **kwargs))
    assert message.startswith(expected)


# -- a pool of one -----------------------------------------------------------------------------------------------------


def test_pool_of_one_from_a_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    endpoint = make_endpoint("https://api.example.com/v1/", "openai", "gpt-4o", None, "prod")
    pool = pool_of_one(endpoint)
    (spec,) = pool.endpoints
    assert pool.names == ("prod",) and pool.source == "--host" and pool.drills == ()
    assert (spec.provider, spec.base_url, spec.model, spec.key_env) == (
        "openai",
        "https://api.example.com/v1",
        "gpt-4o",
        "OPENAI_API_KEY",
    )
    assert pool.retry.max_attempts == 1 and pool.hedge_after_ms == 0.0
    assert pool.breaker.failures == 0 and pool.breaker.failure_rate == 0.0  # a single --host: no breaker in the way
    check_pool(pool)
    monkeypatch.delenv("OPENAI_API_KEY")
    assert "pass --llm-api-key-env none" in error_of(lambda: check_pool(pool))


def test_pool_of_one_without_a_key_and_its_drills() -> None:
    endpoint = make_endpoint("http://127.0.0.1:1/v1", "openai", "m", "none", "mock")
    pool = pool_of_one(endpoint)
    assert pool.endpoints[0].key_env == "none" and not pool.endpoints[0].server_side_drills
    check_pool(pool)
    out = with_overrides(pool, drills=["mock:http_500@5s+5s"], max_attempts=3)
    assert out.drills[0].endpoint == "mock" and out.retry.max_attempts == 3
    assert "needs a mock endpoint" in error_of(lambda: with_overrides(pool, drills=["mock:broken@5s+5s"]))
    served = pool_of_one(endpoint, admin_url="http://127.0.0.1:1")
    assert with_overrides(served, drills=["mock:broken@5s+5s"]).drills[0].fault == "broken"
