"""The wiring of loadlib into Locust's events, installed once when loadlib.locust is imported (as every locustfile
that uses LLMUser does): the options, a run context per environment, start-up checks before any load, the embedded
mock, the web UI tab, and the end-of-run summary. Everything else happens in the run context and its node parts.
"""

from __future__ import annotations

import gevent
from gevent import get_hub
from locust.runners import WorkerRunner

import argparse
import gc
import logging
import os
import sys
import time
import weakref
from typing import Any

from loadlib import options
from loadlib.config import NO_KEY, make_endpoint
from loadlib.errors import LoadlibError
from loadlib.failover.pool import PoolConfig, check_pool
from loadlib.locust import handshake
from loadlib.locust.abort import AbortWatch
from loadlib.locust.checks import PLACEHOLDER_HOST, check_output_path, check_outputs, check_run
from loadlib.locust.context import RunContext, context
from loadlib.locust.drills import DRILL_MESSAGE, DrillDriver, mock_base_url, start_pool_mocks, stop_mocks
from loadlib.locust.embedded_mock import start_embedded_mock
from loadlib.locust.report_out import records_for_report, report_failed, write_report
from loadlib.locust.verdict_part import thresholds_from_options
from loadlib.locust.weblogin import credentials
from loadlib.outputs.junit import write_junit
from loadlib.outputs.markdown import append_step_summary, markdown_summary, write_markdown
from loadlib.outputs.summary import force_exit_code, write_summary
from loadlib.records import tokens
from loadlib.redact import install_log_filter
from loadlib.settings import new_run_id, pool_data, resolve_pool, secrets_of

log = logging.getLogger("loadlib")
FATAL_MESSAGE = "loadlib_fatal"
_INSTALLED: weakref.WeakSet[Any] = weakref.WeakSet()


def install(events: Any) -> None:
    """Register loadlib's listeners on Locust's events (once per events object: a second call is a no-op)."""
    if events in _INSTALLED:
        return
    _INSTALLED.add(events)
    events.init_command_line_parser.add_listener(on_parser)
    events.init.add_listener(on_init)
    events.test_start.add_listener(lambda environment, **_: on_test_start(context(environment)))
    events.test_stop.add_listener(lambda environment, **_: on_test_stop(context(environment)))
    events.quitting.add_listener(lambda environment, **_: on_quitting(context(environment)))


def on_parser(parser: Any, **_: Any) -> None:
    """loadlib's options, and a check of Locust's --csv prefix as it is parsed: Locust creates that directory
    before any other event, so a bad prefix would otherwise end in Locust's traceback."""
    options.add_arguments(parser)
    csv = parser._option_string_actions.get("--csv")
    if csv is not None:
        csv.type = checked_csv_prefix


def checked_csv_prefix(prefix: str) -> str:
    """argparse type of --csv: the prefix, or one line of error (argparse exits 2 with it)."""
    try:
        check_output_path("--csv", f"{prefix}_stats.csv")
    except LoadlibError as exc:
        raise argparse.ArgumentTypeError(
            str(exc).removeprefix("--csv ").replace(f"{prefix}_stats.csv", prefix)
        ) from None
    return prefix


def on_init(environment: Any, **_: Any) -> None:
    """Create the run context, wire the environment's events to it, and check everything before any load."""
    ctx = context(environment)
    if environment.parsed_options is None:
        return
    wire(ctx)
    if ctx.is_worker:
        handshake.say_hello(environment)
        tokens.get_encoding()  # load the tokenizer now: building it holds the GIL for a while
        environment.runner.register_message(DRILL_MESSAGE, lambda msg, **__: ctx.failover.drill(msg.data))
        return
    if ctx.is_master:
        ctx.gate = handshake.Gate(environment)  # first: a worker may say hello while the checks below run
    _prepare_master_or_local(ctx)
    if ctx.is_master:
        environment.runner.register_message(FATAL_MESSAGE, lambda msg, **__: stop_run(ctx, str(msg.data)))
        ctx.workers.attach(environment)
    if environment.web_ui:
        from loadlib.locust.webui import install_tab

        install_tab(environment, ctx)


def wire(ctx: RunContext) -> None:
    """Connect the environment's own events (reports, resets, quit) to its run context, once."""
    if ctx.wired:
        return
    ctx.wired = True
    events = ctx.environment.events
    events.report_to_master.add_listener(lambda data, **__: ctx.report(data))
    events.worker_report.add_listener(lambda client_id, data, **__: ctx.merge(str(client_id), data))
    events.reset_stats.add_listener(lambda **__: ctx.reset())
    events.quit.add_listener(lambda **__: on_quit(ctx))


def _prepare_master_or_local(ctx: RunContext) -> None:
    """Check the run, then start the embedded mock if there is no target: a mistake stops here, before any load."""
    environment, opts = ctx.environment, ctx.options
    if not opts.run_id:
        opts.run_id = new_run_id()
    host = environment.host or os.environ.get("LLM_BASE_URL", "")
    try:
        data = _pool_source(ctx)
        if data is None and not host and not opts.llm_endpoint_name:
            opts.llm_endpoint_name = "mock"
        records_note = records_for_report(opts)
        notes = check_run(opts, host, pooled=data is not None) + ([records_note] if records_note else [])
        if getattr(opts, "web_login", False) and environment.web_ui:
            credentials()  # a UI that would refuse everyone stops here, in one line
        ctx.pool = checked_pool(opts, host, data)
        thresholds_from_options(opts, ctx.verdicts.slos)
        ctx.scenarios.check(opts, load=not ctx.is_master)
        ctx.redact = secrets_of(opts, ctx.pool)
        install_log_filter(ctx.redact)
        _start_targets(ctx, host, data)
        ctx.drills = DrillDriver(ctx, ctx.pool, _admin_urls(ctx))
    except LoadlibError as exc:
        fail(str(exc))
    for note in notes:
        print(note, flush=True)
    get_hub().loop.update_now()  # the checks and data preparation above blocked the loop: refresh its clock


def _pool_source(ctx: RunContext) -> Any:
    """The pool's raw configuration: --llm-pool, else the locustfile's `pool`; kept in the options, which the master
    sends to every worker (a worker needs no copy of the file)."""
    opts = ctx.options
    data = pool_data(opts)
    if data is None:
        data = next((c.pool for c in ctx.environment.user_classes or () if getattr(c, "pool", None)), None)
    if data is not None:
        opts.llm_pool_data = data
    return data


def checked_pool(opts: Any, host: str, data: Any) -> PoolConfig:
    """The run's pool, checked before any load: bad endpoints, policies, drills or targets stop here."""
    endpoint = None
    if data is None:
        if not host:
            opts.llm_admin_url = PLACEHOLDER_HOST  # the embedded mock's, once started: drills break it on the server
        key_env = opts.llm_api_key_env if host else NO_KEY
        name = opts.llm_endpoint_name or None
        endpoint = make_endpoint(host or PLACEHOLDER_HOST, opts.llm_provider, opts.llm_model, key_env, name)
    pool = resolve_pool(opts, endpoint, data)
    check_pool(pool)
    return pool


def _start_targets(ctx: RunContext, host: str, data: Any) -> None:
    """Point the run at its target: the pool (its mocks started), --host, or the embedded mock."""
    environment, opts = ctx.environment, ctx.options
    if data is None:
        if host:
            environment.host = host
        else:
            ctx.mock = start_embedded_mock(environment)
            opts.llm_admin_url = ctx.mock.url
        return
    ctx.mocks = start_pool_mocks(ctx.pool)
    specs = {s.name: s for s in ctx.pool.endpoints}
    opts.llm_pool_urls = {n: mock_base_url(m, specs[n].provider) for n, m in ctx.mocks.items()}
    first = ctx.pool.endpoints[0]
    environment.host = first.base_url or opts.llm_pool_urls[first.name]
    if ctx.mocks:
        listed = ", ".join(f"{n} at {u}" for n, u in opts.llm_pool_urls.items())
        print(f"loadlib: started the pool's embedded mocks: {listed}", flush=True)


def _admin_urls(ctx: RunContext) -> dict[str, str]:
    """Endpoints a drill breaks on the server: the pool's mocks, endpoints with an admin_url, the embedded mock."""
    urls = {s.name: s.admin_url for s in ctx.pool.endpoints if s.admin_url}
    urls.update({name: mock.url for name, mock in ctx.mocks.items()})
    if ctx.mock is not None:
        urls[ctx.pool.endpoints[0].name] = ctx.mock.url
    return urls


def on_test_start(ctx: RunContext) -> None:
    wire(ctx)
    if ctx.gate is not None:
        ctx.gate.await_hellos()
    try:
        if ctx.is_worker:
            check_outputs(ctx.options, ctx.worker_id())
        ctx.start()
    except LoadlibError as exc:
        log.error("loadlib: %s", exc)
        ctx.environment.runner.quit()
        return
    install_log_filter(ctx.redact)
    if ctx.drills is not None:
        ctx.drills.start()
    _watch_thresholds(ctx)
    if ctx.generates_load:
        _quiet_gc()
    get_hub().loop.update_now()  # Locust arms -t from the loop's cached clock, stale after the blocking work above


def _watch_thresholds(ctx: RunContext) -> None:
    """With --llm-abort-on-fail, the master (or local runner) evaluates the thresholds during the run."""
    if ctx.is_worker or not getattr(ctx.options, "llm_abort_on_fail", False) or not ctx.verdicts.thresholds:
        return
    delay = float(getattr(ctx.options, "llm_abort_delay", 10.0) or 0.0)
    ctx.abort = AbortWatch(ctx, delay, lambda: end_run(ctx))
    ctx.abort.start()


def _quiet_gc() -> None:
    """Move everything allocated at start-up (Locust, Flask, data sets) out of the collector's reach and collect
    less often: a full collection over that heap stalls every stream on the worker for milliseconds."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)


def on_test_stop(ctx: RunContext) -> None:
    if ctx.abort is not None:
        ctx.abort.stop()
    if ctx.drills is not None:
        ctx.drills.stop()
        ctx.failover.write_drills()
    ctx.stop()


def on_quitting(ctx: RunContext) -> None:
    """Before Locust settles its exit code: the final summary, and when it has a verdict (thresholds, drills, or an
    incomplete distributed run) the verdict sets the exit code (Locust's any-failure rule would fail every drill and
    every run that expects some errors), unless loadlib already set one (a start-up or fatal stop)."""
    ctx.sinks.close()
    if ctx.is_worker or ctx.options is None:
        return
    if ctx.stopped_at is None and ctx.started_at is not None:
        ctx.verdicts.interrupted = True  # quitting while the test runs: a signal, not -t, an abort or a stop
    if ctx.stopped_at is None:
        ctx.stopped_at = time.time()
    ctx.final_summary = ctx.summary()
    outcome = ctx.final_summary.get("verdict")
    if outcome is not None and ctx.environment.process_exit_code is None:
        ctx.environment.process_exit_code = outcome["exit_code"]


def on_quit(ctx: RunContext) -> None:
    """Close every part; on the master or a local runner print the summary and write it (a failed write keeps the
    printed table and fails the run), then stop the embedded mock."""
    ctx.close()
    if ctx.is_worker or ctx.options is None:
        return
    if ctx.stopped_at is None:
        ctx.stopped_at = time.time()
    final = ctx.final_summary  # with a verdict, print what set the exit code; else the latest (late worker reports)
    summary = final if final is not None and final.get("verdict") else ctx.summary()
    print("\n".join(ctx.lines(summary)), flush=True)
    _write_ci_outputs(ctx, summary)
    problem = write_report(ctx.options, summary, ctx.redact)
    if problem:
        report_failed(problem)
        force_exit_code(2)
    path = ctx.options.llm_summary
    if path:
        problem = write_summary(path, summary, ctx.redact)
        if problem:
            sys.stderr.write(f"error: {problem}\n")
            force_exit_code(2)
        else:
            print(f"loadlib: LLM summary written to {path}", flush=True)
    if ctx.mock is not None:
        ctx.mock.stop()
    stop_mocks(ctx.mocks)


def _write_ci_outputs(ctx: RunContext, summary: dict[str, Any]) -> None:
    """JUnit and Markdown when asked for; the Markdown also goes to GitHub's step summary inside Actions. A file that
    cannot be written is one line and exit code 2, like the JSON summary."""
    opts = ctx.options
    problems = []
    if opts.llm_junit:
        problems.append(write_junit(opts.llm_junit, summary, redact=ctx.redact))
    if opts.llm_markdown:
        problems.append(write_markdown(opts.llm_markdown, summary, redact=ctx.redact))
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        problems.append(append_step_summary(ctx.redact(markdown_summary(summary))))
    for problem in filter(None, problems):
        sys.stderr.write(f"error: {problem}\n")
        force_exit_code(2)


def stop_run(ctx: RunContext, message: str) -> None:
    """Stop a run that cannot succeed: one line and exit code 2 (headless) or a stopped test (web UI). A worker
    hands the verdict to its master, which stops every worker."""
    runner = ctx.environment.runner
    if isinstance(runner, WorkerRunner):
        runner.send_message(FATAL_MESSAGE, message)
        return
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    ctx.environment.process_exit_code = 2
    end_run(ctx)


def end_run(ctx: RunContext) -> None:
    """End the test from inside: quit a headless run (every worker with it), stop a web UI one."""
    runner = ctx.environment.runner
    gevent.spawn(runner.quit if getattr(ctx.options, "headless", False) else runner.stop)


def fail(message: str) -> None:
    """A user mistake at start-up: one line on stderr and exit code 2, no traceback."""
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    sys.exit(2)
