"""The InfluxDB sink's settings from the run's options (loadlib.options, group "InfluxDB sink"), validated with
one-line errors, and the sink built from them.

Credentials are read from each node's own environment (INFLUX_TOKEN, or INFLUX_USER + INFLUX_PASSWORD), never from
the command line, so they are neither forwarded to workers nor shown in the web UI.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loadlib.errors import ConfigError
from loadlib.sinks.influx import InfluxSink
from loadlib.sinks.transports import InfluxV1Transport, InfluxV2Transport, Transport, validate_url

log = logging.getLogger("loadlib.sinks")

ENV_TOKEN = "INFLUX_TOKEN"
ENV_USER = "INFLUX_USER"
ENV_PASSWORD = "INFLUX_PASSWORD"
REPORT_KEY = "llm_sink"
COUNT_KEYS = (
    "submitted",
    "written",
    "dropped",
    "dropped_overflow",
    "dropped_rejected",
    "dropped_unflushed",
    "buffered",
    "batches",
    "write_errors",
    "resent",
)
UNKNOWN_RUN_ID = "unknown"


@dataclass(frozen=True)
class InfluxConfig:
    """Validated sink settings of one node. Secrets are kept out of repr()."""

    url: str
    api: str
    database: str = "locust"
    rp: str | None = None
    org: str = ""
    bucket: str = "locust"
    buffer: int = 100_000
    batch: int = 5000
    flush_interval_s: float = 1.0
    close_timeout_s: float = 5.0
    token: str | None = field(default=None, repr=False)
    username: str | None = None
    password: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class InfluxOptions:
    """The sink's options as given (--influx-*; loadlib.settings makes them from the run's options), before
    validation."""

    url: str
    api: str
    db: str
    rp: str
    org: str
    bucket: str
    buffer: int
    batch: int
    flush_interval: float
    close_timeout: float


def _number(raw: Any, kind: type, flag: str, *, allow_zero: bool = False) -> Any:
    """A numeric option (the web UI may hand it over as a string), > 0, or >= 0 when `allow_zero`."""
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{flag} must be a number, got {raw!r}") from None
    if value < 0 or (value == 0 and not allow_zero):
        raise ConfigError(f"{flag} must be {'>= 0' if allow_zero else '> 0'}, got {raw}")
    return value


def config_from_options(options: InfluxOptions, environ: Mapping[str, str] | None = None) -> InfluxConfig | None:
    """The sink configuration, None when --influx-url is empty; raises ConfigError (one line) when it is invalid."""
    env = os.environ if environ is None else environ
    url = (options.url or "").strip()
    if not url:
        return None
    try:
        url = validate_url(url)
    except ValueError as exc:
        raise ConfigError(f"--influx-url: {exc}") from None
    api = (options.api or "v2").strip().lower()
    if api not in ("v1", "v2"):
        raise ConfigError(f"--influx-api must be v1 or v2, got {api!r}")
    buffer = _number(options.buffer, int, "--influx-buffer")
    batch = _number(options.batch, int, "--influx-batch")
    if batch > buffer:
        raise ConfigError(f"--influx-batch ({batch}) must not exceed --influx-buffer ({buffer})")
    flush = _number(options.flush_interval, float, "--influx-flush-interval")
    close_timeout = _number(options.close_timeout, float, "--influx-close-timeout", allow_zero=True)
    common: dict[str, Any] = {
        "url": url,
        "api": api,
        "buffer": buffer,
        "batch": batch,
        "flush_interval_s": flush,
        "close_timeout_s": close_timeout,
    }
    if api == "v2":
        token = env.get(ENV_TOKEN, "")
        org = (options.org or "").strip()
        bucket = (options.bucket or "").strip()
        if not token:
            raise ConfigError(f"--influx-api v2 needs the token in the environment variable {ENV_TOKEN}")
        if not org:
            raise ConfigError("--influx-api v2 needs --influx-org (any value, e.g. '-', for InfluxDB 3)")
        if not bucket:
            raise ConfigError("--influx-api v2 needs --influx-bucket")
        try:
            import influxdb_client  # noqa: F401
        except ImportError:
            raise ConfigError(
                "--influx-api v2 needs the influxdb-client package (pip install influxdb-client==1.50.0); "
                "or use --influx-api v1"
            ) from None
        return InfluxConfig(org=org, bucket=bucket, token=token, **common)
    database = (options.db or "").strip()
    if not database:
        raise ConfigError("--influx-api v1 needs --influx-db")
    user, password = env.get(ENV_USER, ""), env.get(ENV_PASSWORD, "")
    if bool(user) != bool(password):
        raise ConfigError(f"set both {ENV_USER} and {ENV_PASSWORD}, or neither")
    rp = (options.rp or "").strip() or None
    return InfluxConfig(database=database, rp=rp, username=user or None, password=password or None, **common)


def build_transport(cfg: InfluxConfig) -> Transport:
    if cfg.api == "v2":
        return InfluxV2Transport(cfg.url, cfg.token or "", cfg.org, cfg.bucket)
    return InfluxV1Transport(cfg.url, cfg.database, rp=cfg.rp, username=cfg.username, password=cfg.password)


def build_sink(cfg: InfluxConfig, run_id: str, worker: str) -> InfluxSink:
    return InfluxSink(
        build_transport(cfg),
        run_id=run_id,
        worker=worker,
        max_points=cfg.buffer,
        batch_size=cfg.batch,
        flush_interval_s=cfg.flush_interval_s,
    )
