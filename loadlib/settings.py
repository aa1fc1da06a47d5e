"""A node's settings for one run: the resolved endpoint and adapter, limits, prices, secrets to mask and run identity.

Built from Locust's parsed options (loadlib.options) once per test start on every load-generating node (workers
receive the master's options then, not at init), so users read one consistent object instead of re-parsing options
per request. Building them is also the start-up check of everything that can be known before load: a `ConfigError`
names the first problem.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from loadlib.config import Endpoint, Limits, Timeouts, endpoint_from_options, limits_from_options, timeouts_from_options
from loadlib.providers.base import Adapter
from loadlib.providers.registry import get_adapter
from loadlib.records.pricing import PriceTable
from loadlib.redact import Redactor

SECRET_VARIABLES = ("INFLUX_TOKEN", "INFLUX_PASSWORD")  # besides the endpoint's key variable


@dataclass
class RunSettings:
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
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    def next_request_id(self) -> str:
        return f"{self.worker_id}-{next(self._ids)}"


def secrets_of(options: Any) -> Redactor:
    """The redactor for the values of every key variable the options name (and InfluxDB's credentials)."""
    from loadlib.config import DEFAULT_KEY_ENV, NO_KEY

    named = str(getattr(options, "llm_api_key_env", "") or "")
    provider = str(getattr(options, "llm_provider", "") or "").strip().lower()
    variable = named or DEFAULT_KEY_ENV.get(provider)
    variables = [variable] if variable and variable.lower() != NO_KEY else []
    return Redactor.from_environment([*variables, *SECRET_VARIABLES])


def build_settings(options: Any, host: str, worker_id: str, require_key: bool = True) -> RunSettings:
    """Validate the options and resolve them into a node's settings; ConfigError (one line) on the first problem."""
    endpoint = endpoint_from_options(options, host, require_key=require_key)
    return RunSettings(
        endpoint=endpoint,
        adapter=get_adapter(endpoint.provider),
        timeouts=timeouts_from_options(options),
        prices=PriceTable.load(options.llm_price_table or None),
        run_id=options.run_id or "run",
        worker_id=worker_id,
        max_tokens=options.llm_max_tokens,
        estimate_every=options.llm_estimate_every,
        cold_connect=options.llm_cold_connect,
        limits=limits_from_options(options),
        redact=secrets_of(options),
        stop_on_fatal_s=float(options.llm_stop_on_fatal_s or 0.0),
    )
