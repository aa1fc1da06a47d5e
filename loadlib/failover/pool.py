"""The endpoint pool a run targets: endpoints, routing policy, breaker, retries, hedging, drills and targets, read from
YAML (`--llm-pool FILE`, inline YAML/JSON starting with `{`, or a locustfile's `pool` dict) and checked at start-up
(docs/failover.md, "The pool file").

Every user mistake is a `ConfigError` of one line: the source (file name, `--llm-pool`, `--llm-drill '...'`), the
place (`endpoints[1].weight`), what it must be and what it was, so a run stops before any load instead of running a
drill nobody asked for. Unknown keys are errors at every level (a typo must not fall back to a default silently).

    policy: priority            # or weighted, latency, least_busy, cost (docs/failover.md, "Routing")
    endpoints:                  # required, at least one; names: letters, digits, '_', '-', '.'
      - {name: primary, mock: {ttft_ms: 50}}        # an embedded mock (no base_url); {} = default mock settings
      - name: secondary
        provider: openai        # or anthropic
        base_url: https://api.example.com/v1
        model: gpt-4o-mini
        key_env: OPENAI_API_KEY # variable holding the key; default: the provider's; "none": no key
        priority: 2             # 1 is tried first; ties keep file order
        weight: 1               # > 0, for `weighted`
        prices: {input: 0.15, output: 0.6}   # USD per million tokens (cached_input, cache_write optional)
        timeouts: {ttft: 10}    # seconds; keys connect, ttft, idle, total; missing ones from --llm-timeout-*
        admin_url: http://10.0.0.5:8000      # a standalone mock: drills break it through POST /mock/fault
        breaker_mode: normal    # forced_open (maintenance: sent nothing) or disabled (never opens)
    breaker: {failures: 5, failure_rate: 0.5, window_s: 10, min_calls: 20, cooldown_s: 5, probes: 1,
              count: [connect_error, timeout_*, http_5xx]}  # error class names (ErrorClass values), globs allowed
    retry: {max_attempts: 3, backoff_base_s: 0.1, backoff_max_s: 2, retry_after_max_s: 10, budget: 0.2,
            budget_window_s: 10, retry_on: [connect_error, http_5xx, rate_limited], retry_after_cooldown: false}
    hedge: {after_ms: 300}      # 0 = no hedging
    routing: {ttft_p95_max_s: 1.5}   # cost: the cheapest endpoint whose recent TTFT p95 is within this
    drills:                     # endpoint, fault, at, for + the fault's parameters (loadlib.failover.drills_config)
      - {endpoint: primary, fault: http_503, at: 20s, for: 20s}
      - {endpoint: primary, fault: rate_limit, at: 60s, for: 10s, retry_after_s: 2}
    targets: {failover_within_s: 5, user_error_rate_max: 0.01}   # also detect_within_s, failback_within_s; null: off

Durations take numbers (seconds; `after_ms` in milliseconds) or strings with ms, s or m. Per-endpoint `timeouts` are
kept as the partial mapping given (only the keys the file names), because the run's --llm-timeout-* are not known
here: `EndpointSpec.timeouts_over(run_timeouts)` (or `dataclasses.replace(run, **spec.timeouts)`) merges them.

`parse_pool` checks every value and ends with `check_pool(..., require_keys=False)`; `with_overrides` puts the
command line on top (and checks again); `check_pool` with keys runs once more where the run starts.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from loadlib.config import NO_KEY, Endpoint, Timeouts, key_variable, parse_base_url
from loadlib.errors import ConfigError
from loadlib.failover import drills_config, routing
from loadlib.failover.breaker import MODES, BreakerConfig
from loadlib.failover.drills_config import (
    DrillSpec,
    Place,
    as_mapping,
    check_drill,
    check_keys,
    drill_from_mapping,
    duration,
    integer,
    number,
    parse_drill,
    show,
    text,
)
from loadlib.failover.policy_config import BREAKER_KEYS, RETRY_KEYS, breaker_config, retry_config
from loadlib.failover.retry import RetryConfig
from loadlib.mockapi.config import CONVERTERS, KEYS, MockConfig, MockConfigError
from loadlib.providers import registry
from loadlib.records.pricing import ModelPrice

POLICIES = routing.POLICIES
DRILL_FAULTS = drills_config.DRILL_FAULTS
CLIENT_SIDE_FAULTS = drills_config.CLIENT_SIDE_FAULTS  # 'broken' needs a mock endpoint
INLINE_SOURCE = "--llm-pool"
ONE_SOURCE = "--host"
HEDGE_FLAG = "--llm-hedge-after-ms"
TOP_KEYS = ("policy", "endpoints", "breaker", "retry", "hedge", "routing", "drills", "targets")
ENDPOINT_KEYS: tuple[str, ...] = ("name", "provider", "base_url", "model", "key_env", "priority", "weight", "prices")
ENDPOINT_KEYS += ("timeouts", "mock", "admin_url", "breaker_mode")
TIMEOUT_KEYS = ("connect", "ttft", "idle", "total")
PRICE_KEYS = ("input", "output", "cached_input", "cache_write")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_KEY_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_EXAMPLE = "{endpoints: [{name: primary, base_url: 'https://api.example.com/v1'}]}"


@dataclass(frozen=True, slots=True)
class EndpointSpec:
    """One endpoint as configured. `base_url` is None only for a mock (its URL is known once it has started);
    `key_env` None means the provider's usual variable (no key for a mock), "none" no key; `timeouts` holds only the
    keys given (see the module docstring); `mock` {} is a mock with default settings."""

    name: str
    provider: str = registry.DEFAULT
    base_url: str | None = None
    model: str = "gpt-4o-mini"
    key_env: str | None = None
    priority: int = 1
    weight: float = 1.0
    prices: ModelPrice | None = None
    timeouts: Mapping[str, float] | None = None
    mock: dict[str, Any] | None = None
    admin_url: str | None = None
    breaker_mode: str = "normal"  # forced_open: no request goes to it; disabled: its breaker never opens

    @property
    def is_mock(self) -> bool:
        return self.mock is not None

    @property
    def server_side_drills(self) -> bool:
        """Drills break this endpoint on the server (its mock's admin API) rather than in the client."""
        return self.is_mock or self.admin_url is not None

    def timeouts_over(self, run: Timeouts) -> Timeouts:
        """The run's timeouts with this endpoint's overrides on top."""
        return dataclasses.replace(run, **self.timeouts) if self.timeouts else run


@dataclass(frozen=True, slots=True)
class Targets:
    """What a drill must achieve for its verdict to pass; None: not checked."""

    failover_within_s: float | None = 5.0
    user_error_rate_max: float | None = 0.01
    detect_within_s: float | None = None
    failback_within_s: float | None = None


@dataclass(frozen=True, slots=True)
class PoolConfig:
    """The whole pool; `source` (a file, `--llm-pool`, `--host`) names it in `check_pool`'s messages."""

    endpoints: tuple[EndpointSpec, ...]
    policy: str = "priority"
    breaker: BreakerConfig = field(default_factory=BreakerConfig)
    retry: RetryConfig = field(default_factory=RetryConfig)
    hedge_after_ms: float = 0.0
    ttft_p95_max_s: float | None = None  # the cost policy's bound on an endpoint's recent TTFT p95
    drills: tuple[DrillSpec, ...] = ()
    targets: Targets = field(default_factory=Targets)
    source: str = field(default="pool", compare=False)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.endpoints)

    def endpoint(self, name: str) -> EndpointSpec:
        """The endpoint called `name`; KeyError if the pool has none (check_pool guarantees drills name real ones)."""
        for spec in self.endpoints:
            if spec.name == name:
                return spec
        raise KeyError(name)


# -- reading -----------------------------------------------------------------------------------------------------------


def source_label(source: str) -> str:
    """How messages name a pool source: the file name, or `--llm-pool` for inline YAML/JSON (never its text)."""
    return INLINE_SOURCE if source.lstrip().startswith("{") else source


def read_pool(source: str) -> Mapping[str, Any]:
    """The raw pool from a YAML file, or from inline YAML/JSON when `source` starts with "{". Raw, so the master can
    ship it to workers with the options; `parse_pool` validates it."""
    label = source_label(source)
    yaml_text = source if label == INLINE_SOURCE else _read_file(source)
    try:
        data = yaml.load(yaml_text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise ConfigError(f"{label}: not valid YAML ({_yaml_problem(exc)}); fix the syntax") from None
    if data is None:
        raise ConfigError(f"{label}: is empty; give at least {_EXAMPLE}")
    if not isinstance(data, dict):
        raise ConfigError(f"{label}: the top level must be a mapping like {_EXAMPLE}, got {show(data)}")
    return data


def _read_file(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise ConfigError(f"{path}: no such file; pass the path of a pool YAML file to --llm-pool") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text; save the pool file as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it ({exc.strerror}); check the path and its permissions") from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (plain YAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, str | int | float | bool) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} given twice in one mapping", key_node.start_mark
                )
            seen.add(key if isinstance(key, str | int | float | bool) else id(key_node))
        return super().construct_mapping(node, deep=deep)


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line out of PyYAML's multi-line message: the problem and its line and column."""
    mark = getattr(exc, "problem_mark", None)
    problem = " ".join(str(getattr(exc, "problem", None) or str(exc).splitlines()[0]).split())
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark is not None else problem


# -- parsing -----------------------------------------------------------------------------------------------------------


def parse_pool(data: Mapping[str, Any], where: str) -> PoolConfig:
    """Validate a raw pool (read_pool's result or a locustfile's dict); `where` names it in messages."""
    root = Place(source_label(where))
    if not isinstance(data, Mapping):
        raise ConfigError(f"{root}: the top level must be a mapping like {_EXAMPLE}, got {show(data)}")
    check_keys(data, TOP_KEYS, root)
    raw = data.get("endpoints")
    if not isinstance(raw, list) or not raw:
        root.key("endpoints").fail(f"must be a non-empty list of endpoints, e.g. {_EXAMPLE}")
    drills = data.get("drills") or []
    if not isinstance(drills, list):
        root.key("drills").fail("must be a list like [{endpoint: primary, fault: http_503, at: 20s, for: 20s}]")
    hedge = _section(data, "hedge", ("after_ms",), root)
    bound = _section(data, "routing", ("ttft_p95_max_s",), root).get("ttft_p95_max_s")
    pool = PoolConfig(
        endpoints=tuple(_endpoint(e, root.key("endpoints").item(i)) for i, e in enumerate(raw)),
        policy=_policy(data.get("policy", "priority"), root.key("policy")),
        breaker=breaker_config(_section(data, "breaker", BREAKER_KEYS, root), root.key("breaker")),
        retry=retry_config(_section(data, "retry", RETRY_KEYS, root), root.key("retry")),
        hedge_after_ms=duration(hedge.get("after_ms", 0.0), root.key("hedge.after_ms"), unit="ms"),
        ttft_p95_max_s=None if bound is None else duration(bound, root.key("routing.ttft_p95_max_s"), open_low=True),
        drills=tuple(drill_from_mapping(d, root.key("drills").item(i)) for i, d in enumerate(drills)),
        targets=_targets(_section(data, "targets", tuple(f.name for f in dataclasses.fields(Targets)), root), root),
        source=root.source,
    )
    check_pool(pool, require_keys=False)
    return pool


def _section(data: Mapping[str, Any], key: str, allowed: Sequence[str], root: Place) -> Mapping[str, Any]:
    """A mapping section (absent or null: empty), its keys checked."""
    section = data.get(key)
    if section is None:
        return {}
    place = root.key(key)
    section = as_mapping(section, place, "{" + f"{allowed[0]}: ..." + "}")
    check_keys(section, allowed, place)
    return section


def _policy(value: Any, place: Place) -> str:
    policy = str(value).strip().lower() if isinstance(value, str) else value
    if policy not in POLICIES:
        place.fail(f"must be one of {', '.join(POLICIES)}, got {show(value)}")
    return policy


def _endpoint(data: Any, place: Place) -> EndpointSpec:
    data = as_mapping(data, place, "{name: primary, base_url: 'https://api.example.com/v1'}")
    check_keys(data, ENDPOINT_KEYS, place)
    if data.get("name") is None:
        place.fail("lacks 'name'; every endpoint needs a unique name (drills and reports use it)")
    name = text(data["name"], place.key("name"))
    if not _NAME.match(name):
        place.key("name").fail(f"must use letters, digits, '_', '-' and '.' only, got {show(name)}")
    opt = {k: v for k, v in data.items() if v is not None}
    return EndpointSpec(
        name=name,
        provider=text(opt.get("provider", registry.DEFAULT), place.key("provider")).lower(),
        base_url=text(opt["base_url"], place.key("base_url")) if "base_url" in opt else None,
        model=text(opt.get("model", "gpt-4o-mini"), place.key("model")),
        key_env=_key_env(opt["key_env"], place.key("key_env")) if "key_env" in opt else None,
        priority=integer(opt.get("priority", 1), place.key("priority"), -(2**31)),
        weight=number(opt.get("weight", 1.0), place.key("weight"), float("-inf")),
        prices=_prices(opt["prices"], place.key("prices")) if "prices" in opt else None,
        timeouts=_timeouts(opt["timeouts"], place.key("timeouts")) if "timeouts" in opt else None,
        mock=_mock(data["mock"], place.key("mock")) if "mock" in data else None,
        admin_url=text(opt["admin_url"], place.key("admin_url")) if "admin_url" in opt else None,
        breaker_mode=_mode(opt.get("breaker_mode", "normal"), place.key("breaker_mode")),
    )


def _mode(value: Any, place: Place) -> str:
    if value not in MODES:
        place.fail(f"must be one of {', '.join(MODES)} (maintenance: forced_open sends it nothing), got {show(value)}")
    return str(value)


def _key_env(value: Any, place: Place) -> str:
    """A variable name, or "none". Never quotes the value: a key pasted here instead of a name is a secret."""
    if not isinstance(value, str) or not (_KEY_ENV.match(value.strip()) or value.strip().lower() == NO_KEY):
        place.fail("must name the environment variable that holds the key (e.g. OPENAI_API_KEY), not the key itself")
    return value.strip()


def _prices(value: Any, place: Place) -> ModelPrice:
    data = as_mapping(value, place, "{input: 0.15, output: 0.6}")
    check_keys(data, PRICE_KEYS, place)
    for key in ("input", "output"):
        if data.get(key) is None:
            place.fail(f"lacks {key!r} (USD per million tokens), e.g. {{input: 0.15, output: 0.6}}")
    return ModelPrice(
        input=number(data["input"], place.key("input"), 0.0),
        output=number(data["output"], place.key("output"), 0.0),
        cached_input=_optional_price(data, "cached_input", place),
        cache_write=_optional_price(data, "cache_write", place),
    )


def _optional_price(data: Mapping[str, Any], key: str, place: Place) -> float | None:
    value = data.get(key)
    return None if value is None else number(value, place.key(key), 0.0)


def _timeouts(value: Any, place: Place) -> dict[str, float]:
    """Only the keys given: the rest come from the run's --llm-timeout-* when the endpoint is resolved."""
    data = as_mapping(value, place, "{ttft: 10}")
    check_keys(data, TIMEOUT_KEYS, place)
    return {k: duration(v, place.key(k), 0.0, open_low=True) for k, v in data.items()}


def _mock(value: Any, place: Place) -> dict[str, Any]:
    """Embedded mock settings, converted and range-checked as the mock's own `key=value` overrides are."""
    data = as_mapping(value if value is not None else {}, place, "{ttft_ms: 50}")
    out: dict[str, Any] = {}
    for raw_key, raw in data.items():
        key = str(raw_key).strip().lower().replace("-", "_")
        check_keys({key: raw}, KEYS, place)
        if raw is None or isinstance(raw, bool | list | dict):
            place.key(key).fail(f"must be a number or a word, got {show(raw)}")
        try:
            out[key] = CONVERTERS[key](str(raw))
        except MockConfigError as exc:
            raise ConfigError(f"{place}: {exc}") from None
    MockConfig().with_overrides(out)
    return out


def _targets(data: Mapping[str, Any], root: Place) -> Targets:
    """Each target: a number, or null to switch that check off; absent keeps the default."""
    place = root.key("targets")
    values: dict[str, float | None] = {}
    for key, value in data.items():
        if value is None:
            values[key] = None
        elif key == "user_error_rate_max":
            values[key] = number(value, place.key(key), 0.0, 1.0)
        else:
            values[key] = duration(value, place.key(key))
    return Targets(**values)


# -- command line and one endpoint -----------------------------------------------------------------------------------


def with_overrides(
    pool: PoolConfig,
    *,
    policy: str | None = None,
    drills: Sequence[str] = (),
    max_attempts: int | None = None,
    retry_budget: float | None = None,
    hedge_after_ms: float | None = None,
    where: str = "--llm-drill",
) -> PoolConfig:
    """Command-line options on top of the pool (None: not given). Drills are added to the file's, each named in
    messages as `<where> '<text>'`; the other options' messages name their own flags."""
    retry = pool.retry
    if max_attempts is not None:
        retry = dataclasses.replace(retry, max_attempts=integer(max_attempts, Place("--llm-max-attempts"), 1))
    if retry_budget is not None:
        retry = dataclasses.replace(retry, budget=number(retry_budget, Place("--llm-retry-budget"), 0.0))
    out = dataclasses.replace(
        pool,
        policy=pool.policy if policy is None else _policy(policy, Place("--llm-policy")),
        retry=retry,
        hedge_after_ms=pool.hedge_after_ms if hedge_after_ms is None else number(hedge_after_ms, Place(HEDGE_FLAG), 0),
        drills=pool.drills + tuple(parse_drill(d, where) for d in drills if d and d.strip()),
    )
    check_pool(out, require_keys=False)
    return out


def pool_of_one(endpoint: Endpoint, admin_url: str | None = None) -> PoolConfig:
    """Today's single --host as a pool of one, so the run has one code path: no breaker (every request is sent, as
    before; a pool file can give one endpoint a breaker). `admin_url`: the endpoint is a mock (e.g. the embedded
    one) that drills may break on the server, 'broken' included."""
    spec = EndpointSpec(
        name=endpoint.name,
        provider=endpoint.provider,
        base_url=endpoint.base_url,
        model=endpoint.model,
        key_env=endpoint.api_key_env or NO_KEY,
        admin_url=admin_url,
    )
    never_opens = BreakerConfig(failures=0, failure_rate=0.0)
    return PoolConfig(endpoints=(spec,), breaker=never_opens, source=ONE_SOURCE)


# -- cross checks ------------------------------------------------------------------------------------------------------


def check_pool(pool: PoolConfig, require_keys: bool = True) -> None:
    """Everything a pool must satisfy before load (pools built in code included): each endpoint, unique names, the
    policy, the drills against the endpoints, and (with `require_keys`) every key variable set."""
    root = Place(pool.source)
    if not pool.endpoints:
        root.key("endpoints").fail("must list at least one endpoint")
    _policy(pool.policy, root.key("policy"))
    first: dict[str, int] = {}
    for i, spec in enumerate(pool.endpoints):
        place = root.key("endpoints").item(i)
        if spec.name in first:
            place.key("name").fail(f"repeats {spec.name!r} (endpoints[{first[spec.name]}]); give each a unique name")
        first[spec.name] = i
        _check_endpoint(spec, place)
        if require_keys:
            _check_key(spec, place, pool.source)
    servers = {spec.name for spec in pool.endpoints if spec.server_side_drills}
    for i, drill in enumerate(pool.drills):
        check_drill(drill, pool.drills[:i], pool.names, drill.endpoint in servers, pool.source)


def _check_endpoint(spec: EndpointSpec, place: Place) -> None:
    if spec.provider not in registry.names():
        place.key("provider").fail(f"must be one of {', '.join(registry.names())}, got {show(spec.provider)}")
    if spec.priority < 1:
        place.key("priority").fail(f"must be a whole number >= 1 (1 is tried first), got {show(spec.priority)}")
    if not spec.weight > 0:
        place.key("weight").fail(f"must be a number > 0 (its share under the weighted policy), got {show(spec.weight)}")
    if spec.is_mock and spec.base_url is not None:
        place.fail("gives both mock and base_url; a mock's URL is known once it starts: drop one of them")
    if spec.is_mock and spec.admin_url is not None:
        place.fail("gives both mock and admin_url; an embedded mock's admin API is its own: drop admin_url")
    if not spec.is_mock and spec.base_url is None:
        place.fail("has no base_url; give one (e.g. https://api.example.com/v1) or mock: {} for an embedded mock")
    for key in ("base_url", "admin_url"):
        url = getattr(spec, key)
        if url is not None:
            try:
                parse_base_url(url)
            except ConfigError as exc:
                place.key(key).fail(f"is wrong: {exc}")


def _check_key(spec: EndpointSpec, place: Place, source: str) -> None:
    """The key variable must be set, as config.make_endpoint requires for a single --host."""
    key_env = key_variable(spec.key_env, spec.provider, spec.is_mock)
    if not key_env or os.environ.get(key_env):
        return
    fix = "pass --llm-api-key-env none" if source == ONE_SOURCE else "set key_env: none"
    place.fail(
        f"({spec.name}) needs an API key in the environment variable {key_env}, which is not set: "
        f"export {key_env}=... (or {fix} for a server without auth)"
    )
