"""A node's settings for one run: the resolved endpoint and adapter, limits, prices, secrets to mask and run identity.

Built from Locust's parsed options (loadlib.options) once per test start on every load-generating node (workers
receive the master's options then, not at init), so users read one consistent object instead of re-parsing options
per request. Building them is also the start-up check of everything that can be known before load: a `ConfigError`
names the first problem.
"""

from __future__ import annotations

import itertools
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from loadlib.config import (
    NO_KEY,
    Endpoint,
    Limits,
    Timeouts,
    endpoint_from_options,
    key_variable,
    limits_from_options,
    make_endpoint,
    timeouts_from_options,
)
from loadlib.failover.pool import EndpointSpec, PoolConfig, parse_pool, pool_of_one, read_pool, with_overrides
from loadlib.providers import registry
from loadlib.providers.base import Adapter
from loadlib.records.pricing import PriceTable
from loadlib.redact import Redactor

SECRET_VARIABLES = ("INFLUX_TOKEN", "INFLUX_PASSWORD")  # besides the endpoint's key variable


@dataclass(frozen=True, slots=True)
class Target:
    """One endpoint of the pool, resolved: where it is, how to speak to it, its time limits and prices."""

    endpoint: Endpoint
    adapter: Adapter
    timeouts: Timeouts
    prices: PriceTable

    @property
    def name(self) -> str:
        return self.endpoint.name


@dataclass
class RunSettings:
    """`endpoint`, `adapter`, `timeouts` and `prices` are the pool's first endpoint's (a single --host is a pool of
    one); `targets` holds every endpoint of the pool by name."""

    endpoint: Endpoint
    adapter: Adapter
    timeouts: Timeouts
    prices: PriceTable
    run_id: str
    worker_id: str
    max_tokens: int = 128
    estimate_every: int = 20
    cold_connect: bool = False
    limits: Limits = field(default_factory=Limits)
    redact: Redactor = field(default_factory=Redactor)
    stop_on_fatal_s: float = 5.0
    targets: dict[str, Target] = field(default_factory=dict)
    pool: PoolConfig | None = None
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        if not self.targets:
            self.targets = {self.endpoint.name: Target(self.endpoint, self.adapter, self.timeouts, self.prices)}
        if self.pool is None:
            self.pool = pool_of_one(self.endpoint)

    def next_request_id(self) -> str:
        return f"{self.worker_id}-{next(self._ids)}"


def secrets_of(options: Any, pool: PoolConfig | None = None) -> Redactor:
    """The redactor for the values of every key variable the options and the pool name (and InfluxDB's
    credentials)."""
    named = str(getattr(options, "llm_api_key_env", "") or "")
    provider = str(getattr(options, "llm_provider", "") or "").strip().lower()
    specs = pool.endpoints if pool is not None else ()
    variables = [key_variable(named, provider), *(key_variable(s.key_env, s.provider, s.is_mock) for s in specs)]
    kept = [v for v in variables if v]
    return Redactor.from_environment([*dict.fromkeys(kept), *SECRET_VARIABLES])


def pool_data(options: Any) -> Any:
    """The pool as the master read it (shipped to workers with the options), or read from --llm-pool; None: no
    pool, the run targets --host (or the embedded mock) alone."""
    data = getattr(options, "llm_pool_data", None)
    if data is None and getattr(options, "llm_pool", None):
        data = read_pool(options.llm_pool)
    return data


def new_run_id() -> str:
    """A run id when none was given: the start time and four random hex digits (20261201-044521-3bb0)."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def _keep_mock_identity(options: Any, host: str) -> None:
    """The web UI's start form sends every custom field, empty ones included, so the embedded mock's endpoint name and
    its "no key" (set when it started) can come back empty: a run that targets the mock's own URL gets them again."""
    if host and host == getattr(options, "llm_mock_base", None):
        options.llm_api_key_env = options.llm_api_key_env or NO_KEY
        options.llm_endpoint_name = options.llm_endpoint_name or "mock"


def resolve_pool(options: Any, endpoint: Endpoint | None, data: Any = None) -> PoolConfig:
    """The run's pool: from its configuration, or the single endpoint as a pool of one; command-line options on top."""
    pool = parse_pool(data, options.llm_pool or "the locustfile's pool") if data is not None else None
    if pool is None:
        assert endpoint is not None
        pool = pool_of_one(endpoint, getattr(options, "llm_admin_url", None) or None)
    drills = [d for d in str(getattr(options, "llm_drill", "") or "").split(";") if d.strip()]
    return with_overrides(
        pool,
        policy=_given(options, "llm_policy"),
        drills=drills,
        max_attempts=_given(options, "llm_max_attempts"),
        retry_budget=_given(options, "llm_retry_budget"),
        hedge_after_ms=_given(options, "llm_hedge_after_ms"),
    )


def _given(options: Any, name: str) -> Any:
    """An option's value, or None when it was not given (a form or config file may say so as "" or "None")."""
    value = getattr(options, name, None)
    return None if value is None or str(value).strip() in ("", "None") else value


def make_target(spec: EndpointSpec, url: str | None, run: Target, require_key: bool) -> Target:
    """A pool endpoint resolved against the run's defaults (timeouts, prices) and, for a mock, its started URL."""
    key_env = spec.key_env or (NO_KEY if spec.is_mock else None)
    endpoint = make_endpoint(spec.base_url or url or "", spec.provider, spec.model, key_env, spec.name, require_key)
    timeouts = spec.timeouts_over(run.timeouts)
    prices = PriceTable({spec.model: spec.prices}, source=f"pool endpoint {spec.name}") if spec.prices else run.prices
    return Target(endpoint, registry.get_adapter(endpoint.provider), timeouts, prices)


def build_settings(options: Any, host: str, worker_id: str, require_key: bool = True) -> RunSettings:
    """Validate the options and resolve them into a node's settings; ConfigError (one line) on the first problem."""
    _keep_mock_identity(options, host)
    data = pool_data(options)
    endpoint = endpoint_from_options(options, host, require_key=require_key) if data is None else None
    pool = resolve_pool(options, endpoint, data)
    run = _run_defaults(options, endpoint)
    urls = getattr(options, "llm_pool_urls", None) or {}
    targets = {s.name: make_target(s, urls.get(s.name), run, require_key) for s in pool.endpoints}
    if endpoint is not None:
        targets = {endpoint.name: run}
    first = next(iter(targets.values()))
    return RunSettings(
        endpoint=first.endpoint,
        adapter=first.adapter,
        timeouts=first.timeouts,
        prices=first.prices,
        targets=targets,
        pool=pool,
        run_id=options.run_id or "run",
        worker_id=worker_id,
        max_tokens=options.llm_max_tokens,
        estimate_every=options.llm_estimate_every,
        cold_connect=options.llm_cold_connect,
        limits=limits_from_options(options),
        redact=secrets_of(options, pool),
        stop_on_fatal_s=float(options.llm_stop_on_fatal_s or 0.0),
    )


def _run_defaults(options: Any, endpoint: Endpoint | None) -> Target:
    """The run-wide timeouts and prices (and, without a pool, its one endpoint) as a Target."""
    placeholder = endpoint or make_endpoint("http://127.0.0.1:1", registry.DEFAULT, "any", NO_KEY, "defaults")
    prices = PriceTable.load(options.llm_price_table or None)
    return Target(placeholder, registry.get_adapter(placeholder.provider), timeouts_from_options(options), prices)
