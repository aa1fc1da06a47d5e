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
import secrets
import sys
import time
import weakref
from typing import Any

from loadlib import options
from loadlib.errors import LoadlibError
from loadlib.locust.checks import check_output_path, check_outputs, check_run
from loadlib.locust.context import RunContext, context
from loadlib.locust.embedded_mock import start_embedded_mock
from loadlib.outputs.summary import force_exit_code, write_summary
from loadlib.records import tokens
from loadlib.redact import install_log_filter
from loadlib.settings import secrets_of

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
    events.test_stop.add_listener(lambda environment, **_: context(environment).stop())
    events.quitting.add_listener(lambda environment, **_: context(environment).sinks.close())


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
        tokens.get_encoding()  # load the tokenizer now: building it holds the GIL for a while
        return
    _prepare_master_or_local(ctx)
    if ctx.is_master:
        environment.runner.register_message(FATAL_MESSAGE, lambda msg, **__: stop_run(ctx, str(msg.data)))
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
        opts.run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
    host = environment.host or os.environ.get("LLM_BASE_URL", "")
    try:
        notes = check_run(opts, host)
        ctx.scenarios.check(opts, load=not ctx.is_master)
        ctx.redact = secrets_of(opts)
        install_log_filter(ctx.redact)
        if host:
            environment.host = host
        else:
            ctx.mock = start_embedded_mock(environment)
    except LoadlibError as exc:
        fail(str(exc))
    for note in notes:
        print(note, flush=True)
    get_hub().loop.update_now()  # the checks and data preparation above blocked the loop: refresh its clock


def on_test_start(ctx: RunContext) -> None:
    wire(ctx)
    try:
        if ctx.is_worker:
            check_outputs(ctx.options, ctx.worker_id())
        ctx.start()
    except LoadlibError as exc:
        log.error("loadlib: %s", exc)
        ctx.environment.runner.quit()
        return
    install_log_filter(ctx.redact)
    if ctx.generates_load:
        _quiet_gc()
    get_hub().loop.update_now()  # Locust arms -t from the loop's cached clock, stale after the blocking work above


def _quiet_gc() -> None:
    """Move everything allocated at start-up (Locust, Flask, data sets) out of the collector's reach and collect
    less often: a full collection over that heap stalls every stream on the worker for milliseconds."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)


def on_quit(ctx: RunContext) -> None:
    """Close every part; on the master or a local runner print the summary and write it (a failed write keeps the
    printed table and fails the run), then stop the embedded mock."""
    ctx.close()
    if ctx.is_worker or ctx.options is None:
        return
    if ctx.stopped_at is None:
        ctx.stopped_at = time.time()
    summary = ctx.summary()
    print("\n".join(ctx.lines(summary)), flush=True)
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
    gevent.spawn(runner.quit if getattr(ctx.options, "headless", False) else runner.stop)


def fail(message: str) -> None:
    """A user mistake at start-up: one line on stderr and exit code 2, no traceback."""
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    sys.exit(2)
