"""Per-environment run context: the resolved endpoint, adapter, timeouts, prices and run identity.

Built from Locust's parsed options on every load-generating node when a test starts (workers receive the master's
options then, not at init), so users read one consistent object instead of re-parsing options per request.
"""

from __future__ import annotations

import itertools
import os
import socket
from dataclasses import dataclass, field
from typing import Any

from loadlib.config import Endpoint, Limits, Timeouts, endpoint_from_options, limits_from_options, timeouts_from_options
from loadlib.pricing import PriceTable
from loadlib.providers.base import Adapter
from loadlib.providers.registry import get_adapter
from loadlib.redact import Redactor

SECRET_VARIABLES = ("INFLUX_TOKEN", "INFLUX_PASSWORD")  # besides the endpoint's key variable


@dataclass
class Runtime:
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


def worker_id_of(environment: Any) -> str:
    runner = environment.runner
    client_id = getattr(runner, "client_id", None)
    if client_id:
        return str(client_id)
    return f"{socket.gethostname()}_{os.getpid()}"


def build_runtime(environment: Any, require_key: bool = True) -> Runtime:
    options = environment.parsed_options
    endpoint = endpoint_from_options(options, environment.host, require_key=require_key)
    return Runtime(
        endpoint=endpoint,
        adapter=get_adapter(endpoint.provider),
        timeouts=timeouts_from_options(options),
        prices=PriceTable.load(options.llm_price_table or None),
        run_id=options.run_id or "run",
        worker_id=worker_id_of(environment),
        max_tokens=options.llm_max_tokens,
        estimate_every=options.llm_estimate_every,
        cold_connect=options.llm_cold_connect,
        limits=limits_from_options(options),
        redact=Redactor.from_environment([endpoint.api_key_env, *SECRET_VARIABLES]),
        stop_on_fatal_s=options.llm_stop_on_fatal_s,
    )


def runtime(environment: Any) -> Runtime:
    """The Runtime set up at test start (created lazily for users run outside a normal Locust start)."""
    rt = getattr(environment, "_llm_runtime", None)
    if rt is None:
        rt = environment._llm_runtime = build_runtime(environment)
    return rt
