"""A node's options and settings for one run: the options typed (`Options`), and the resolved endpoint and adapter,
limits, prices, secrets to mask and run identity.

This is the one module that reads Locust's parsed namespace: `resolve` turns it into `Options`, with the registry's
(loadlib.options) default for whatever it lacks, and `amend` is the one way to change it. The settings are built
from the options once per test start on every load-generating node (workers receive the master's options then, not
at init), so users read one consistent object instead of re-parsing options per request. Building them is also the
start-up check of everything that can be known before load: a `ConfigError` names the first problem.
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType, SimpleNamespace
from typing import TYPE_CHECKING, Any

from loadlib.config import (
    NO_KEY,
    Endpoint,
    Limits,
    Timeouts,
    key_variable,
    make_endpoint,
)
from loadlib.failover.pool import EndpointSpec, PoolConfig, parse_pool, pool_of_one, read_pool, with_overrides
from loadlib.options import OPTIONS
from loadlib.providers import registry
from loadlib.providers.base import Adapter
from loadlib.records.pricing import PriceTable
from loadlib.redact import Redactor
from loadlib.sinks.config import InfluxOptions

SECRET_VARIABLES = ("INFLUX_TOKEN", "INFLUX_PASSWORD")  # besides the endpoint's key variable


@dataclass(frozen=True)
class LocustOptions:
    """Locust's own options that loadlib reads (Locust's defaults where a namespace lacks them)."""

    num_users: int | None = None
    spawn_rate: float | None = None
    run_time: int | None = None
    headless: bool = False
    worker: bool = False
    print_stats: bool = False
    only_summary: bool = False
    expect_workers: int = 1
    expect_workers_max_wait: int = 0
    master_bind_port: int = 5557
    exit_code_on_error: int = 1
    csv_prefix: str | None = None
    html_file: str | None = None
    web_login: bool = False
    locustfile: str = ""


@dataclass(frozen=True)
class Carried:
    """What the master (or local runner) sets on the options at init, so that it travels to the workers with them:
    the pool as read, the URLs of its started mocks, the embedded mock's base and admin URLs, and the options it was
    started with that are not at their default (loadlib.locust.worker_options: a worker tells its own from them)."""

    llm_pool_data: Any = None
    llm_pool_urls: dict[str, str] = field(default_factory=dict)
    llm_mock_base: str | None = None
    llm_admin_url: str | None = None
    llm_master_given: dict[str, Any] | None = None


@dataclass(frozen=True)
class Options:
    """Every loadlib option (loadlib.options' registry), typed, resolved once from Locust's parsed namespace by
    `resolve`: nothing else reads options by name, so mypy checks every read, and each default is the registry's (a
    unit test keeps these fields equal to it). `locust` holds Locust's own options loadlib reads, `carried` what the
    master adds for its workers, `extra` every other parsed option by name (a locustfile's own, such as a scenario's
    `--prompts-file`); at run time `options.prompts_file` reads it too, as on Locust's namespace."""

    llm_provider: str
    llm_model: str
    llm_api_key_env: str
    llm_endpoint_name: str
    llm_max_tokens: int
    llm_price_table: str
    llm_mock: str
    run_id: str
    llm_cold_connect: bool
    llm_keepalive_idle_s: float
    llm_estimate_every: int
    llm_timeout_connect: float
    llm_timeout_ttft: float
    llm_timeout_idle: float
    llm_timeout_total: float
    llm_max_line_mb: float
    llm_max_event_mb: float
    llm_max_response_mb: float
    llm_max_head_kb: int
    llm_max_text_kb: int
    llm_stop_on_fatal_s: float
    llm_pool: str
    llm_policy: str | None
    llm_max_attempts: int | None
    llm_retry_budget: float | None
    llm_hedge_after_ms: float | None
    llm_drill: str
    llm_summary: str
    llm_threshold: str
    llm_thresholds_file: str
    llm_baseline: str
    llm_abort_on_fail: bool
    llm_abort_delay: float
    llm_final_report_wait_s: float
    llm_request_slo: str
    llm_confidence: float
    llm_threshold_ci: bool
    llm_junit: str
    llm_markdown: str
    llm_report: str
    llm_records: str
    llm_progress: str
    llm_lag_threshold_ms: float
    llm_cpu_threshold: float
    arrival_rate: float
    arrival_process: str
    llm_user_phase: str
    llm_think_time: str
    llm_warmup: str
    scenario_slo: str
    data_seed: int
    data_cache_dir: str
    chat_turns: int
    chat_conversations: int
    chat_system_tokens: int
    chat_think_time: str
    chat_sweep: str
    chat_max_tokens: int
    chat_data_file: str
    doc_mode: str
    doc_tokens: str
    doc_per_size: int
    doc_chunk_tokens: int
    doc_overlap_tokens: int
    doc_max_tokens: int
    doc_truncation_ratio: float
    doc_canary: str
    doc_probe_max: int
    doc_probe_resolution: int
    doc_data_file: str
    compliance_cases: int
    compliance_repeat_share: float
    compliance_plain_share: float
    compliance_max_tokens: int
    compliance_data_file: str
    audit_file: str
    cache_probe_doc_tokens: int
    cache_probe_variations: str
    cache_probe_model_alias: str
    shape_ramp_s: float
    shape_steps: int
    shape_step_s: float
    llm_capacity_control: str
    llm_capacity_start: float
    llm_capacity_max: float
    llm_capacity_precision: float
    llm_capacity_warmup_s: float
    llm_capacity_window_s: float
    llm_capacity_min: float
    llm_capacity_inflight_s: float
    llm_capacity_drain_s: float
    llm_capacity_confirm_s: float
    influx_url: str
    influx_api: str
    influx_db: str
    influx_rp: str
    influx_org: str
    influx_bucket: str
    influx_buffer: int
    influx_batch: int
    llm_grafana_url: str
    influx_flush_interval: float
    influx_close_timeout: float
    llm_server_metrics: str
    llm_server_metrics_interval: float
    locust: LocustOptions = field(default_factory=LocustOptions)
    carried: Carried = field(default_factory=Carried)
    extra: Mapping[str, Any] = field(default_factory=dict)

    if not TYPE_CHECKING:  # hidden from mypy: loadlib's own reads stay checked

        def __getattr__(self, name: str) -> Any:
            if name.startswith("__") or name == "extra":
                raise AttributeError(name)
            try:
                return self.extra[name]
            except KeyError:
                raise AttributeError(f"no option {name!r}") from None


_REGISTRY = {o.dest: o.default for o in OPTIONS}
_NESTED = {"locust": LocustOptions, "carried": Carried}
_KNOWN = frozenset(_REGISTRY) | {f.name for kind in _NESTED.values() for f in fields(kind)}


def resolve(namespace: Any) -> Options:
    """The typed options of Locust's parsed namespace (None: every default): the registry's default for any option
    the namespace lacks (an environment built without loadlib's parser)."""
    given = dict(vars(namespace)) if namespace is not None else {}
    nested = {key: _nested(kind, given) for key, kind in _NESTED.items()}
    extra = MappingProxyType({k: v for k, v in given.items() if k not in _KNOWN})
    return Options(**{k: given.get(k, default) for k, default in _REGISTRY.items()}, **nested, extra=extra)


def _nested(kind: Any, given: dict[str, Any]) -> Any:
    """A nested options object, from the fields the namespace has (the class's defaults for the others)."""
    return kind(**{f.name: given[f.name] for f in fields(kind) if f.name in given})


def parsed(environment: Any) -> Any:
    """Locust's parsed namespace of an environment (None when it was made without one)."""
    return getattr(environment, "parsed_options", None)


def options_of(environment: Any) -> Options:
    """An environment's options, resolved now: for the run context, which keeps them, and for what runs before it
    (the web UI's form, a load shape's first tick)."""
    return resolve(parsed(environment))


def sent_options(job: Mapping[str, Any]) -> Options:
    """The options a master sent with Locust's `spawn` message: all of its namespace, though a worker's Locust takes
    only loadlib's (and --expect-workers) from it, keeping its own -u, -r, -t (which it does not use)."""
    return resolve(SimpleNamespace(**(job.get("parsed_options") or {})))


def amend(environment: Any, **values: Any) -> None:
    """Set options on the environment's namespace, which the master sends to its workers: a run id, the mock's
    identity, the pool as read, the path of the records. Only known names: a typo fails here, not silently later."""
    unknown = sorted(values.keys() - _KNOWN)
    if unknown:
        raise KeyError(f"not an option: {', '.join(unknown)}")
    namespace = parsed(environment)
    for name, value in values.items():
        setattr(namespace, name, value)


def option_values(options: Options) -> dict[str, Any]:
    """The registry's options by name (the workers' handshake compares them)."""
    return {name: getattr(options, name) for name in _REGISTRY}


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
    keepalive_idle_s: float = 0.0  # longest idle time of a connection that is reused; 0: no limit
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


def secrets_of(options: Options, pool: PoolConfig | None = None) -> Redactor:
    """The redactor for the values of every key variable the options and the pool name (and InfluxDB's
    credentials)."""
    named = str(options.llm_api_key_env or "")
    provider = str(options.llm_provider or "").strip().lower()
    specs = pool.endpoints if pool is not None else ()
    variables = [key_variable(named, provider), *(key_variable(s.key_env, s.provider, s.is_mock) for s in specs)]
    kept = [v for v in variables if v]
    return Redactor.from_environment([*dict.fromkeys(kept), *SECRET_VARIABLES])


def pool_data(options: Options) -> Any:
    """The pool as the master read it (shipped to workers with the options), or read from --llm-pool; None: no
    pool, the run targets --host (or the embedded mock) alone."""
    data = options.carried.llm_pool_data
    if data is None and options.llm_pool:
        data = read_pool(options.llm_pool)
    return data


def new_run_id() -> str:
    """A run id when none was given: the start time and four random hex digits (20261201-044521-3bb0)."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


def mock_identity(options: Options, host: str) -> dict[str, str]:
    """The web UI's start form sends every custom field, empty ones included, so the embedded mock's endpoint name and
    its "no key" (set when it started) can come back empty: a run that targets the mock's own URL gets them again
    (the options to amend; none for another target)."""
    if not host or host != options.carried.llm_mock_base:
        return {}
    return {
        "llm_api_key_env": options.llm_api_key_env or NO_KEY,
        "llm_endpoint_name": options.llm_endpoint_name or "mock",
    }


def resolve_pool(options: Options, endpoint: Endpoint | None, data: Any = None) -> PoolConfig:
    """The run's pool: from its configuration, or the single endpoint as a pool of one; command-line options on top."""
    pool = parse_pool(data, options.llm_pool or "the locustfile's pool") if data is not None else None
    if pool is None:
        assert endpoint is not None
        pool = pool_of_one(endpoint, options.carried.llm_admin_url or None)
    drills = [d for d in str(options.llm_drill or "").split(";") if d.strip()]
    return with_overrides(
        pool,
        policy=_given(options.llm_policy),
        drills=drills,
        max_attempts=_given(options.llm_max_attempts),
        retry_budget=_given(options.llm_retry_budget),
        hedge_after_ms=_given(options.llm_hedge_after_ms),
    )


def _given(value: Any) -> Any:
    """An option's value, or None when it was not given (a form or config file may say so as "" or "None")."""
    return None if value is None or str(value).strip() in ("", "None") else value


def make_target(spec: EndpointSpec, url: str | None, run: Target, require_key: bool) -> Target:
    """A pool endpoint resolved against the run's defaults (timeouts, prices) and, for a mock, its started URL."""
    key_env = spec.key_env or (NO_KEY if spec.is_mock else None)
    endpoint = make_endpoint(spec.base_url or url or "", spec.provider, spec.model, key_env, spec.name, require_key)
    timeouts = spec.timeouts_over(run.timeouts)
    prices = PriceTable({spec.model: spec.prices}, source=f"pool endpoint {spec.name}") if spec.prices else run.prices
    return Target(endpoint, registry.get_adapter(endpoint.provider), timeouts, prices)


def build_settings(options: Options, host: str, worker_id: str, require_key: bool = True) -> RunSettings:
    """Validate the options and resolve them into a node's settings; ConfigError (one line) on the first problem."""
    data = pool_data(options)
    endpoint = endpoint_of(options, host, require_key) if data is None else None
    pool = resolve_pool(options, endpoint, data)
    run = _run_defaults(options, endpoint)
    urls = options.carried.llm_pool_urls or {}
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
        keepalive_idle_s=float(options.llm_keepalive_idle_s or 0.0),
        limits=limits_of(options),
        redact=secrets_of(options, pool),
        stop_on_fatal_s=float(options.llm_stop_on_fatal_s or 0.0),
    )


def _run_defaults(options: Options, endpoint: Endpoint | None) -> Target:
    """The run-wide timeouts and prices (and, without a pool, its one endpoint) as a Target."""
    placeholder = endpoint or make_endpoint("http://127.0.0.1:1", registry.DEFAULT, "any", NO_KEY, "defaults")
    prices = PriceTable.load(options.llm_price_table or None)
    return Target(placeholder, registry.get_adapter(placeholder.provider), timeouts_of(options), prices)


def endpoint_of(options: Options, host: str | None, require_key: bool = True) -> Endpoint:
    """The endpoint the run targets, from the options and Locust's --host (the base URL)."""
    name = options.llm_endpoint_name or None
    return make_endpoint(
        host or "", options.llm_provider, options.llm_model, options.llm_api_key_env, name, require_key
    )


def timeouts_of(options: Options) -> Timeouts:
    return Timeouts(
        options.llm_timeout_connect, options.llm_timeout_ttft, options.llm_timeout_idle, options.llm_timeout_total
    )


def limits_of(options: Options) -> Limits:
    mb = (options.llm_max_line_mb, options.llm_max_event_mb, options.llm_max_response_mb)
    return Limits.from_mb(*mb, options.llm_max_head_kb, options.llm_max_text_kb)


def influx_options(options: Options) -> InfluxOptions:
    """The InfluxDB sink's options (--influx-*), for loadlib.sinks.config to validate."""
    o = options
    given = (o.influx_url, o.influx_api, o.influx_db, o.influx_rp, o.influx_org, o.influx_bucket)
    return InfluxOptions(*given, o.influx_buffer, o.influx_batch, o.influx_flush_interval, o.influx_close_timeout)
