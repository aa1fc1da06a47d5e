"""Everything that can be known before load is checked before load: provider, model, price table, keys, limits, the
embedded mock's settings, the InfluxDB sink, the scenarios' data, and every file the run will write. A problem is one
line and exit code 2, before any request and before the mock starts (loadlib.locust.install calls `check_run`).

Output paths: a path whose parent is a file, a directory that cannot be written, or a directory given as a file name
is refused; missing parent directories are created, and said so when they lie outside the current directory. A file
is then created (and removed) beside each output, since root passes every permission check yet cannot create files in
/sys or /proc: only an attempt tells, and found after the run the results would be lost.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from loadlib.config import Limits, Timeouts, check_provider, make_endpoint
from loadlib.errors import ConfigError
from loadlib.locust.embedded_mock import mock_config
from loadlib.locust.server_metrics_part import check_url
from loadlib.pacing import PROCESSES
from loadlib.records.pricing import PriceTable
from loadlib.settings import Options, influx_options, limits_of, timeouts_of
from loadlib.sinks.config import config_from_options
from loadlib.transport.open_files import raise_limit, users_problem

PLACEHOLDER_HOST = "http://127.0.0.1:1/v1"  # stands for the embedded mock, which is not started yet


def check_run(options: Options, host: str, worker: str = "master", pooled: bool = False) -> list[str]:
    """Raise ConfigError on the first problem; return notes worth printing (directories created). With a pool
    (`pooled`), its endpoints are checked with it (loadlib.failover.pool.check_pool), not --host."""
    check_endpoint(options, host, pooled)
    config_from_options(influx_options(options))
    check_server_metrics(options)
    return check_outputs(options, worker)


def check_open_files(users: int | None) -> None:
    """The users this process will hold (None: not known here, where a master or a load shape decides) fit under its
    open-file limit, raised first as far as the hard limit allows (Locust gives up below a hard limit of 10,000)."""
    soft = raise_limit()
    problem = users_problem(users, soft) if users else None
    if problem:
        raise ConfigError(problem)


def check_server_metrics(options: Options) -> None:
    """--llm-server-metrics: an http(s) URL, scraped at most every 0.1 s."""
    url = str(options.llm_server_metrics or "")
    if url:
        try:
            check_url(url)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    _at_least(options.llm_server_metrics_interval, 0.1, "--llm-server-metrics-interval")


def check_endpoint(options: Options, host: str, pooled: bool = False) -> tuple[Timeouts, Limits]:
    """Provider, model, key, timeouts, limits, price table, load model; the mock's settings when it will be used."""
    provider = str(options.llm_provider or "").strip().lower()
    check_provider(provider)
    if pooled:
        pass
    elif host:
        make_endpoint(host, provider, options.llm_model, options.llm_api_key_env, options.llm_endpoint_name or None)
    else:
        mock_config(options.llm_mock)
        make_endpoint(PLACEHOLDER_HOST, provider, options.llm_model, "none")
    PriceTable.load(options.llm_price_table or None)
    _at_least(options.llm_stop_on_fatal_s, 0, "--llm-stop-on-fatal-s")
    _at_least(options.llm_keepalive_idle_s, 0, "--llm-keepalive-idle-s")
    _at_least(options.arrival_rate, 0, "--arrival-rate")
    _at_least(options.llm_abort_delay, 0, "--llm-abort-delay")
    if not 0.0 < float(options.llm_confidence) < 1.0:
        raise ConfigError(f"--llm-confidence must be between 0 and 1 (e.g. 0.95), got {options.llm_confidence!r}")
    if options.arrival_process not in PROCESSES:
        raise ConfigError(f"--arrival-process must be one of {', '.join(PROCESSES)}, got {options.arrival_process!r}")
    check_capacity(options)
    return timeouts_of(options), limits_of(options)


def check_capacity(options: Options) -> None:
    """The capacity search's loads, precision and times (docs/capacity.md), whether or not the run uses the shape."""
    start = float(options.llm_capacity_start)
    if not start > 0:
        raise ConfigError(f"--llm-capacity-start must be > 0, got {options.llm_capacity_start!r}")
    _at_least(options.llm_capacity_max, start, "--llm-capacity-max")
    precision = options.llm_capacity_precision
    if not 0 < float(precision) <= 1:  # 1: the bracket only (a failing load at most twice one that held)
        raise ConfigError(f"--llm-capacity-precision must be above 0 and at most 1, got {precision!r}")
    for value, flag in (
        (options.llm_capacity_warmup_s, "--llm-capacity-warmup-s"),
        (options.llm_capacity_window_s, "--llm-capacity-window-s"),
        (options.llm_capacity_min, "--llm-capacity-min"),
        (options.llm_capacity_inflight_s, "--llm-capacity-inflight-s"),
        (options.llm_capacity_confirm_s, "--llm-capacity-confirm-s"),
    ):
        _at_least(value, 0, flag)


def _at_least(value: Any, minimum: float, flag: str) -> None:
    if value is None or float(value) < minimum:
        raise ConfigError(f"{flag} must be >= {minimum:g}, got {value!r}")


def output_paths(options: Options) -> list[tuple[str, str]]:
    """(flag, path) of every file this run writes that the user named: loadlib's outputs and Locust's HTML report
    (Locust creates its --csv directory itself, before loadlib is asked)."""
    named = [
        ("--llm-summary", options.llm_summary),
        ("--llm-records", options.llm_records),
        ("--llm-junit", options.llm_junit),
        ("--llm-markdown", options.llm_markdown),
        ("--llm-report", options.llm_report),
        ("--html", options.locust.html_file),
    ]
    audit = str(options.audit_file or "")
    if audit.lower() not in ("", "none", "off"):
        named.append(("--audit-file", audit))
    return [(flag, str(path)) for flag, path in named if path]


def check_outputs(options: Options, worker: str = "master") -> list[str]:
    """Check (and create the parents of) every output path; notes for directories created outside the cwd."""
    notes = []
    for flag, template in output_paths(options):
        note = check_output_path(flag, template, worker)
        if note:
            notes.append(note)
    return notes


def check_output_path(flag: str, template: str, worker: str = "master") -> str | None:
    """One line of ConfigError when `template` cannot be written; a note when a directory outside the current one
    had to be created. `{run_id}` and `{worker}` in the path are filled in."""
    path = Path(template.replace("{run_id}", "run").replace("{worker}", worker)).expanduser().absolute()
    if path.is_dir():
        raise ConfigError(f"{flag} {template}: is a directory; name a file in it")
    existing = next(p for p in (path.parent, *path.parent.parents) if p.exists())
    if not existing.is_dir():
        raise ConfigError(f"{flag} {template}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise ConfigError(f"{flag} {template}: cannot write there (permission denied)")
    note = None if existing == path.parent else _make_parents(flag, template, path)
    try_writing(flag, template, path)
    return note


def _make_parents(flag: str, template: str, path: Path) -> str | None:
    """Create the missing parents of `path`; a note when they lie outside the current directory."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{flag} {template}: cannot create {path.parent} ({exc.strerror})") from None
    if Path.cwd() in path.parent.parents or Path.cwd() == path.parent:
        return None
    return f"loadlib: created {path.parent} for {flag} (outside the current directory)"


def try_writing(flag: str, template: str, path: Path) -> None:
    """Create and remove a hidden file beside `path`, and open an existing regular `path` for appending (nothing is
    written, nothing truncated): what os.access cannot tell, e.g. for root, who passes it even in /sys or /proc."""
    try:
        fd, probe = tempfile.mkstemp(dir=path.parent, prefix=".loadlib-check-")
        try:
            os.close(fd)
        finally:
            os.unlink(probe)
        if path.is_file():
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"{flag} {template}: cannot create a file in {path.parent} ({reason})") from None
