"""Locust wiring of the InfluxDB sink: command-line options, one sink per node and test run, record/health/event
forwarding, test_start/test_stop annotations from the master, and the sink's counts shipped to the master so the
end-of-run summary can say how many points were dropped across all workers.

Options are read at `test_start`, not `init`: workers only receive the master's option values then. Credentials are
read from each node's own environment (INFLUX_TOKEN, or INFLUX_USER + INFLUX_PASSWORD), never from the command line,
so they are neither forwarded to workers nor shown in the web UI.
"""

from __future__ import annotations

from locust.runners import LocalRunner, MasterRunner, WorkerRunner

import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loadlib.errors import ConfigError
from loadlib.hooks import hooks
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


def _arg(group: Any, *flags: str, web_ui: bool = True, **kwargs: Any) -> None:
    """add_argument on an option group, with Locust's web-UI attribute set by hand (groups do not accept it)."""
    action = group.add_argument(*flags, **kwargs)
    action.include_in_web_ui = web_ui
    action.is_secret = False
    action.is_required = False
    action.is_multiple = False


def add_arguments(parser: Any) -> None:
    """The sink's options on Locust's parser (`init_command_line_parser`). None of them is a secret."""
    g = parser.add_argument_group("InfluxDB sink (loadlib)")
    _arg(
        g,
        "--influx-url",
        env_var="INFLUX_URL",
        default="",
        help="InfluxDB base URL, e.g. http://127.0.0.1:8086; empty = no InfluxDB output. Credentials come only from "
        f"the environment: {ENV_TOKEN} (v2) or {ENV_USER} + {ENV_PASSWORD} (v1).",
    )
    _arg(
        g,
        "--influx-api",
        env_var="INFLUX_API",
        default="v2",
        help="v2 (InfluxDB 2.x/3.x /api/v2/write) or v1 (/write).",
    )
    _arg(g, "--influx-db", env_var="INFLUX_DB", default="locust", help="v1: database.")
    _arg(g, "--influx-rp", env_var="INFLUX_RP", default="", help="v1: retention policy (default: the database's).")
    _arg(g, "--influx-org", env_var="INFLUX_ORG", default="", help="v2: organisation (any value, e.g. '-', for v3).")
    _arg(g, "--influx-bucket", env_var="INFLUX_BUCKET", default="locust", help="v2: bucket.")
    _arg(
        g,
        "--influx-buffer",
        type=int,
        default=100_000,
        web_ui=False,
        help="Most points buffered per node while "
        "InfluxDB is slow or down; beyond it the oldest are dropped and counted.",
    )
    _arg(g, "--influx-batch", type=int, default=5000, web_ui=False, help="Points per write request.")
    _arg(g, "--influx-flush-interval", type=float, default=1.0, web_ui=False, help="Seconds between flushes.")
    _arg(
        g,
        "--influx-close-timeout",
        type=float,
        default=5.0,
        web_ui=False,
        help="Seconds the last flush may take at test stop; what is left is counted as dropped.",
    )


def _number(options: Any, name: str, kind: type, flag: str, *, allow_zero: bool = False) -> Any:
    """A numeric option (the web UI may hand it over as a string), > 0, or >= 0 when `allow_zero`."""
    raw = getattr(options, name)
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{flag} must be a number, got {raw!r}") from None
    if value < 0 or (value == 0 and not allow_zero):
        raise ConfigError(f"{flag} must be {'>= 0' if allow_zero else '> 0'}, got {raw}")
    return value


def config_from_options(options: Any, environ: Mapping[str, str] | None = None) -> InfluxConfig | None:
    """The sink configuration, None when --influx-url is empty; raises ConfigError (one line) when it is invalid."""
    env = os.environ if environ is None else environ
    url = (getattr(options, "influx_url", "") or "").strip()
    if not url:
        return None
    try:
        url = validate_url(url)
    except ValueError as exc:
        raise ConfigError(f"--influx-url: {exc}") from None
    api = (getattr(options, "influx_api", "v2") or "v2").strip().lower()
    if api not in ("v1", "v2"):
        raise ConfigError(f"--influx-api must be v1 or v2, got {api!r}")
    buffer = _number(options, "influx_buffer", int, "--influx-buffer")
    batch = _number(options, "influx_batch", int, "--influx-batch")
    if batch > buffer:
        raise ConfigError(f"--influx-batch ({batch}) must not exceed --influx-buffer ({buffer})")
    flush = _number(options, "influx_flush_interval", float, "--influx-flush-interval")
    close_timeout = _number(options, "influx_close_timeout", float, "--influx-close-timeout", allow_zero=True)
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
        org = (getattr(options, "influx_org", "") or "").strip()
        bucket = (getattr(options, "influx_bucket", "") or "").strip()
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
    database = (getattr(options, "influx_db", "") or "").strip()
    if not database:
        raise ConfigError("--influx-api v1 needs --influx-db")
    user, password = env.get(ENV_USER, ""), env.get(ENV_PASSWORD, "")
    if bool(user) != bool(password):
        raise ConfigError(f"set both {ENV_USER} and {ENV_PASSWORD}, or neither")
    rp = (getattr(options, "influx_rp", "") or "").strip() or None
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


class SinkState:
    """The sink side of one Environment: the current sink, the last run's counts, and (on the master) the counts
    each worker reported."""

    def __init__(self) -> None:
        self.sink: InfluxSink | None = None
        self.close_timeout_s = 5.0
        self.node = "local"
        self.last_stats: dict[str, Any] | None = None
        self.error: str | None = None
        self.workers: dict[str, dict[str, Any]] = {}
        self.wired = False

    def own_stats(self) -> dict[str, Any] | None:
        if self.sink is not None:
            return self.sink.stats().as_dict()
        if self.last_stats is not None:
            return self.last_stats
        if self.error is not None:
            return {"error": self.error}
        return None

    def close(self) -> None:
        sink, self.sink = self.sink, None
        if sink is not None:
            self.last_stats = sink.close(self.close_timeout_s).as_dict()


def sink_state(environment: Any) -> SinkState:
    state = getattr(environment, "_llm_sink_state", None)
    if state is None:
        state = environment._llm_sink_state = SinkState()
    return state


def sink_stats(environment: Any) -> dict[str, Any] | None:
    """Sink counts of this node plus, on the master, those of every worker: totals of COUNT_KEYS, `nodes` (per
    node) and `errors` (configuration problems per node). None when no node has an InfluxDB sink."""
    state = getattr(environment, "_llm_sink_state", None)
    if state is None:
        return None
    nodes: dict[str, dict[str, Any]] = {}
    own = state.own_stats()
    if own is not None:
        nodes[state.node] = own
    nodes.update(state.workers)
    if not nodes:
        return None
    totals: dict[str, Any] = {k: sum(int(n.get(k) or 0) for n in nodes.values()) for k in COUNT_KEYS}
    totals["errors"] = {name: n["error"] for name, n in nodes.items() if n.get("error")}
    totals["nodes"] = nodes
    return totals


def _node_name(runner: Any) -> str:
    if isinstance(runner, WorkerRunner):
        return str(runner.client_id)
    if isinstance(runner, MasterRunner):
        return "master"
    return "local"


def _wire(environment: Any) -> None:
    """Subscribe to loadlib's hooks and Locust's report events once per Environment. The listeners look up the
    current sink each time, so a new sink per test run needs no re-subscription."""
    state = sink_state(environment)
    if state.wired:
        return
    state.wired = True
    h = hooks(environment)

    def on_record(record: Any, **_: Any) -> None:
        sink = state.sink
        if sink is not None:
            sink.submit_record(record)

    def on_health(users: Any = None, cpu_percent: Any = None, loop_lag_ms: Any = None, **_: Any) -> None:
        sink = state.sink
        if sink is not None and not isinstance(environment.runner, MasterRunner):
            sink.submit_worker_health(users, cpu_percent, loop_lag_ms)

    def on_endpoint_event(kind: str = "", endpoint: str = "", message: str = "", **_: Any) -> None:
        sink = state.sink
        if sink is not None:
            sink.submit_event(kind, endpoint, message)

    def on_report_to_master(client_id: Any = None, data: dict[str, Any] | None = None, **_: Any) -> None:
        if data is not None and isinstance(environment.runner, WorkerRunner):
            stats = state.own_stats()
            if stats is not None:
                data[REPORT_KEY] = stats

    def on_worker_report(client_id: Any = None, data: dict[str, Any] | None = None, **_: Any) -> None:
        if data and REPORT_KEY in data and isinstance(environment.runner, MasterRunner):
            state.workers[str(client_id)] = dict(data[REPORT_KEY])

    h.record.add_listener(on_record)
    h.worker_health.add_listener(on_health)
    h.endpoint_event.add_listener(on_endpoint_event)
    environment.events.report_to_master.add_listener(on_report_to_master)
    environment.events.worker_report.add_listener(on_worker_report)


def _fail(message: str) -> None:
    """A user mistake at start-up: one line on stderr and a non-zero exit, no traceback."""
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    sys.exit(2)


def on_init(environment: Any, **_: Any) -> None:
    """Fail fast on a bad sink configuration on the master or a local run (workers check theirs at test_start,
    when the master's options arrive)."""
    _wire(environment)
    if environment.parsed_options is None or isinstance(environment.runner, WorkerRunner):
        return
    try:
        config_from_options(environment.parsed_options)
    except ConfigError as exc:
        _fail(str(exc))


def on_test_start(environment: Any, **_: Any) -> None:
    _wire(environment)
    state = sink_state(environment)
    state.close()
    state.error = None
    state.last_stats = None
    runner = environment.runner
    state.node = _node_name(runner)
    opts = environment.parsed_options
    if opts is None:
        return
    if isinstance(runner, MasterRunner):
        state.workers.clear()
    try:
        cfg = config_from_options(opts)
    except ConfigError as exc:
        state.error = str(exc)
        log.error("InfluxDB sink disabled on %s: %s", state.node, exc)
        return
    if cfg is None:
        return
    run_id = getattr(opts, "run_id", "") or ""
    if not run_id:
        log.warning("no --run-id known at test_start; InfluxDB points are tagged run_id=%s", UNKNOWN_RUN_ID)
        run_id = UNKNOWN_RUN_ID
    state.close_timeout_s = cfg.close_timeout_s
    state.sink = build_sink(cfg, run_id, state.node).start()
    log.info("InfluxDB sink on %s -> %s (run_id=%s)", state.node, state.sink.transport.describe(), run_id)
    if isinstance(runner, MasterRunner | LocalRunner):
        shape = [f"{k}={getattr(opts, k)}" for k in ("num_users", "spawn_rate") if getattr(opts, k, None) is not None]
        detail = f" ({', '.join(shape)})" if shape else ""
        state.sink.submit_event("test_start", "", f"run {run_id} started{detail}")


def on_test_stop(environment: Any, **_: Any) -> None:
    state = sink_state(environment)
    sink = state.sink
    if sink is None:
        return
    if isinstance(environment.runner, MasterRunner | LocalRunner):
        sink.submit_event("test_stop", "", f"run {sink.run_id} stopped")
    state.close()


def on_quitting(environment: Any, **_: Any) -> None:
    sink_state(environment).close()


def install(events: Any) -> None:
    """Register the sink's listeners on Locust's events (idempotent)."""
    if getattr(events, "_loadlib_sinks_installed", False):
        return
    events._loadlib_sinks_installed = True
    events.init_command_line_parser.add_listener(lambda parser, **_: add_arguments(parser))
    events.init.add_listener(on_init)
    events.test_start.add_listener(on_test_start)
    events.test_stop.add_listener(on_test_stop)
    events.quitting.add_listener(on_quitting)
