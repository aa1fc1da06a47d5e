"""The wiring of loadlib into Locust's events, installed once when loadlib.locust is imported (as every locustfile
that uses LLMUser does): the options, a run context per environment, start-up checks before any load, the embedded
mock, the web UI tab, and the end-of-run summary. Everything else happens in the run context and its node parts.
"""

from __future__ import annotations

import gevent
from gevent import get_hub
from locust import log as locust_log
from locust.runners import STATE_RUNNING, STATE_SPAWNING, LocalRunner, WorkerRunner

import argparse
import gc
import logging
import os
import signal
import sys
import time
import weakref
from typing import Any

from loadlib import options
from loadlib.config import NO_KEY, make_endpoint
from loadlib.errors import LoadlibError
from loadlib.failover.pool import PoolConfig, check_pool
from loadlib.locust import handshake, progress, worker_options
from loadlib.locust.abort import AbortWatch
from loadlib.locust.capacity_shape import CapacityShape
from loadlib.locust.checks import PLACEHOLDER_HOST, check_open_files, check_output_path, check_outputs, check_run
from loadlib.locust.context import RunContext, context
from loadlib.locust.csv_final import write_final_csv
from loadlib.locust.drills import DRILL_MESSAGE, DrillDriver, start_pool_mocks, stop_mocks
from loadlib.locust.embedded_mock import start_embedded_mock
from loadlib.locust.report_out import records_for_report, write_report
from loadlib.locust.verdict_part import failure_samples, thresholds_from_options
from loadlib.locust.weblogin import credentials
from loadlib.metrics.summary import with_histograms
from loadlib.outputs.junit import write_junit
from loadlib.outputs.markdown import append_step_summary, markdown_summary, write_markdown
from loadlib.outputs.summary import force_exit_code, write_summary
from loadlib.providers import registry
from loadlib.records import tokens
from loadlib.redact import install_log_filter
from loadlib.settings import new_run_id, pool_data, resolve_pool, secrets_of
from loadlib.verdicts import verdict as verdicts

log = logging.getLogger("loadlib")
FATAL_MESSAGE = "loadlib_fatal"
LOCUST_ENDED = (
    "Locust ended the run before its end: its own greenlets failed (the error is logged above), no signal came; "
    "the numbers describe a shorter run than intended"
)
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
    if not ctx.has_options:
        return
    wire(ctx)
    worker_options.install(ctx)  # a worker's own options, kept before any spawn; the master's as started
    if ctx.is_worker:
        check_open_files(None)  # its users come from the master: only the limit is raised here
        handshake.say_hello(environment)
        tokens.get_encoding()  # load the tokenizer now: building it holds the GIL for a while
        environment.runner.register_message(DRILL_MESSAGE, lambda msg, **__: ctx.failover.drill(msg.data))
        return
    progress.prepare(ctx)  # before Locust spawns its request-table printer
    if ctx.is_master:
        ctx.gate = handshake.Gate(environment)  # first: a worker may say hello while the checks below run
    _interrupt_in_main()
    previous = signal.signal(signal.SIGTERM, _terminated)  # Locust handles SIGTERM only once init is over
    try:
        _prepare_master_or_local(ctx)
    except KeyboardInterrupt:
        _interrupted_at_start(ctx)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if ctx.generates_load:
        tokens.get_encoding()  # as on a worker: the first request would otherwise build it inside the timed loop
    # registered after the runner's own listener, so it runs first (quitting fires in reverse): a master's listener
    # stops the test, after which a signal could no longer be told from a run that ended on its own
    environment.events.quitting.add_listener(lambda **__: _note_interruption(ctx))
    if ctx.is_master:
        environment.runner.register_message(FATAL_MESSAGE, lambda msg, **__: stop_run(ctx, str(msg.data["message"])))
        ctx.workers.attach(environment)
        _watch_worker_wait(ctx)
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
    events.spawning_complete.add_listener(lambda **__: ctx.warmup.spawned(time.time_ns()))  # --llm-warmup spawned


def _terminated(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _interrupt_in_main() -> None:
    """Ctrl-C (SIGINT) as Locust expects it: a KeyboardInterrupt in the main greenlet, thrown by the hub. Python's own
    handler raises it in whichever greenlet runs when the signal lands; raised in a request's greenlet, it reached
    the main greenlet a second time during the shutdown and cut the run off before its verdict line."""
    main = get_hub().parent
    gevent.signal_handler(signal.SIGINT, lambda: main.throw(KeyboardInterrupt))


def _interrupted_at_start(ctx: RunContext) -> None:
    """A signal during the checks and start-up, before any load: the verdict line, exit code 130, no traceback."""
    if ctx.mock is not None:
        ctx.mock.stop()
    stop_mocks(ctx.mocks)
    outcome: dict[str, Any] = {"status": "interrupted", "exit_code": verdicts.EXIT_CODES["interrupted"]}
    print(verdicts.verdict_line({**outcome, "reasons": ["a signal stopped the run during start-up"]}), flush=True)
    sys.exit(outcome["exit_code"])


def _watch_worker_wait(ctx: RunContext) -> None:
    """Locust's headless master gives up waiting for --expect-workers with a quit and exit code 1, before any event
    a summary could hang on: catch that quit and end `not_started` (exit code 2), with every output written."""
    runner = ctx.environment.runner
    quit_runner = runner.quit

    def quit_or_give_up() -> None:
        reason = _workers_missing(ctx)
        quit_runner()
        if reason is None:
            return
        ctx.verdicts.not_started = reason
        on_quitting(ctx)
        on_quit(ctx)
        raise SystemExit(verdicts.EXIT_CODES["not_started"])  # in place of Locust's exit code 1

    runner.quit = quit_or_give_up


def _workers_missing(ctx: RunContext) -> str | None:
    """Why a headless master quits before its test started, when that is the workers it waited for (a signal while
    waiting is an interruption instead)."""
    opts, runner = ctx.options.locust, ctx.environment.runner
    expected = int(opts.expect_workers or 1)
    ready = len(runner.clients.ready)
    if ctx.started_at is not None or ctx.verdicts.interrupted or not opts.headless or ready >= expected:
        return None
    wait = opts.expect_workers_max_wait or 0
    return (
        f"only {ready} of {expected} workers connected within {wait:g} s (--expect-workers-max-wait): the test "
        f"never started; check that every worker is running and reaches the master on port {opts.master_bind_port}"
    )


def _prepare_master_or_local(ctx: RunContext) -> None:
    """Check the run, then start the embedded mock if there is no target: a mistake stops here, before any load."""
    environment = ctx.environment
    if not ctx.options.run_id:
        ctx.amend(run_id=new_run_id())
    host = environment.host or os.environ.get("LLM_BASE_URL", "")
    try:
        data = _pool_source(ctx)
        if data is None and not host and not ctx.options.llm_endpoint_name:
            ctx.amend(llm_endpoint_name="mock")
        notes = _records_for_report(ctx)
        notes = check_run(ctx.options, host, pooled=data is not None) + notes
        check_open_files(_local_users(ctx))
        if ctx.options.locust.web_login and environment.web_ui:
            credentials()  # a UI that would refuse everyone stops here, in one line
        ctx.pool = pool = checked_pool(ctx, host, data)
        thresholds_from_options(ctx.options, ctx.verdicts.slos)
        ctx.scenarios.check(ctx.options, load=not ctx.is_master)
        ctx.redact = secrets_of(ctx.options, pool)
        install_log_filter(ctx.redact)
        _start_targets(ctx, pool, host, data)
        ctx.drills = DrillDriver(ctx, pool, _admin_urls(ctx, pool))
    except LoadlibError as exc:
        fail(str(exc))
    for note in notes:
        print(note, flush=True)
    get_hub().loop.update_now()  # the checks and data preparation above blocked the loop: refresh its clock


def _local_users(ctx: RunContext) -> int | None:
    """-u when this process will hold every user (a headless local run without a load shape), else None."""
    opts, environment = ctx.options.locust, ctx.environment
    if ctx.is_master or not opts.headless or getattr(environment, "shape_class", None) is not None:
        return None
    return opts.num_users


def _records_for_report(ctx: RunContext) -> list[str]:
    """--llm-report without --llm-records: the records go beside the report; the note to print."""
    records = records_for_report(ctx.options)
    if records is None:
        return []
    ctx.amend(llm_records=records)
    return [f"loadlib: --llm-report builds from the run's records: writing them to {records}"]


def _pool_source(ctx: RunContext) -> Any:
    """The pool's raw configuration: --llm-pool, else the locustfile's `pool`; kept in the options, which the master
    sends to every worker (a worker needs no copy of the file)."""
    data = pool_data(ctx.options)
    if data is None:
        data = next((c.pool for c in ctx.environment.user_classes or () if getattr(c, "pool", None)), None)
    if data is not None:
        ctx.amend(llm_pool_data=data)
    return data


def checked_pool(ctx: RunContext, host: str, data: Any) -> PoolConfig:
    """The run's pool, checked before any load: bad endpoints, policies, drills or targets stop here."""
    endpoint = None
    if data is None:
        if not host:
            ctx.amend(llm_admin_url=PLACEHOLDER_HOST)  # the embedded mock's, once started: drills break it there
        opts = ctx.options
        key_env = opts.llm_api_key_env if host else NO_KEY
        name = opts.llm_endpoint_name or None
        endpoint = make_endpoint(host or PLACEHOLDER_HOST, opts.llm_provider, opts.llm_model, key_env, name)
    pool = resolve_pool(ctx.options, endpoint, data)
    check_pool(pool)
    return pool


def _start_targets(ctx: RunContext, pool: PoolConfig, host: str, data: Any) -> None:
    """Point the run at its target: the pool (its mocks started), --host, or the embedded mock."""
    environment = ctx.environment
    if data is None:
        if host:
            environment.host = host
        else:
            ctx.mock = start_embedded_mock(ctx)
            ctx.amend(llm_admin_url=ctx.mock.url)
        return
    ctx.mocks = start_pool_mocks(pool)
    specs = {s.name: s for s in pool.endpoints}
    urls = {n: registry.base_url_at(m.url, specs[n].provider) for n, m in ctx.mocks.items()}
    ctx.amend(llm_pool_urls=urls)
    first = pool.endpoints[0]
    environment.host = first.base_url or urls[first.name]
    if ctx.mocks:
        listed = ", ".join(f"{n} at {u}" for n, u in urls.items())
        print(f"loadlib: started the pool's embedded mocks: {listed}", flush=True)


def _admin_urls(ctx: RunContext, pool: PoolConfig) -> dict[str, str]:
    """Endpoints a drill breaks on the server: the pool's mocks, endpoints with an admin_url, the embedded mock."""
    urls = {s.name: s.admin_url for s in pool.endpoints if s.admin_url}
    urls.update({name: mock.url for name, mock in ctx.mocks.items()})
    if ctx.mock is not None:
        urls[pool.endpoints[0].name] = ctx.mock.url
    return urls


def on_test_start(ctx: RunContext) -> None:
    wire(ctx)
    ctx.reread()
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
    progress.start(ctx)
    if ctx.generates_load:
        _quiet_gc()
    get_hub().loop.update_now()  # Locust arms -t from the loop's cached clock, stale after the blocking work above


def _watch_thresholds(ctx: RunContext) -> None:
    """When a threshold may abort the run (its own abortOnFail, else --llm-abort-on-fail), the master (or local
    runner) evaluates the thresholds during the run (loadlib.locust.abort)."""
    if ctx.is_worker:
        return
    on_fail = bool(ctx.options.llm_abort_on_fail)
    delay = float(ctx.options.llm_abort_delay or 0.0)
    watch = AbortWatch(ctx, delay, lambda: end_run(ctx), on_fail=on_fail)
    if watch.rules and isinstance(getattr(ctx.environment, "shape_class", None), CapacityShape):
        log.warning(
            "note: abort on fail does not apply to a capacity search: its steps fail on purpose and each step's "
            "SLOs decide the search (docs/capacity.md)"
        )
    elif watch.rules:
        ctx.abort = watch
        watch.start()


def _quiet_gc() -> None:
    """Move everything allocated at start-up (Locust, Flask, data sets) out of the collector's reach and collect
    less often: a full collection over that heap stalls every stream on the worker for milliseconds."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)


def on_test_stop(ctx: RunContext) -> None:
    progress.stop(ctx)  # first: the display ends before anything else prints
    if ctx.abort is not None:
        ctx.abort.stop()
    if ctx.drills is not None:
        ctx.drills.stop()
        ctx.failover.write_drills()
    ctx.stop()


def _note_interruption(ctx: RunContext) -> None:
    """Quitting while the test runs (or, headless, before it started) is a signal: -t, an abort, a fatal stop and
    the web UI's stop button all stop the test first. Unless the runner's own greenlets are all gone: then Locust's
    main loop ended by itself because they failed (its CPU monitor, for one, dies on an OSError), and no signal
    came."""
    runner = ctx.environment.runner
    running = runner.state in (STATE_SPAWNING, STATE_RUNNING)
    waiting = ctx.started_at is None and bool(ctx.options.locust.headless)
    if not (running or waiting) or ctx.verdicts.fatal or ctx.verdicts.not_started:
        return
    if running and not len(runner.greenlet):
        ctx.verdicts.fatal = LOCUST_ENDED
    else:
        ctx.verdicts.interrupted = True


def on_quitting(ctx: RunContext) -> None:
    """Before Locust settles its exit code: the final summary and its verdict, which sets the exit code. With
    thresholds, drills, an incomplete run or a stop of ours, the verdict decides (Locust's any-failure rule would
    fail every drill and every run that expects some errors); without, Locust's rule, stated as a verdict line."""
    ctx.sinks.close()
    if ctx.is_worker or not ctx.has_options:
        return
    _stop_local_users(ctx)
    if ctx.stopped_at is None:  # an interruption was noted first (_note_interruption)
        ctx.stopped_at = time.time()
    ctx.final_summary = ctx.summary()
    outcome = ctx.final_summary.get("verdict") or _locust_rule(ctx)
    ctx.final_summary["verdict"] = outcome
    ctx.environment.process_exit_code = outcome["exit_code"]


def _stop_local_users(ctx: RunContext) -> None:
    """A signal reaches a local runner with its users still running (Locust stops them only after quitting): stop
    them now, so the attempts they had in flight record themselves `cut_off` before the summary counts them (they
    reached the records and Locust's table, but not the summary)."""
    runner = ctx.environment.runner
    if isinstance(runner, LocalRunner) and runner.state in (STATE_SPAWNING, STATE_RUNNING):
        runner.stop()


def _locust_rule(ctx: RunContext) -> dict[str, Any]:
    """Locust's own exit code for a run without a verdict (its shutdown's rule), as a verdict to print."""
    runner = ctx.environment.runner
    code = 0
    if len(runner.errors) or len(runner.exceptions):
        code = int(ctx.options.locust.exit_code_on_error)
    elif locust_log.unhandled_greenlet_exception:
        code = 2
    samples = failure_samples(runner.stats.errors)
    return verdicts.no_verdict(int(runner.stats.total.num_failures), code, ctx.final_summary, samples)


def on_quit(ctx: RunContext) -> None:
    """Close every part; on the master or a local runner write the outputs, then print the summary with the verdict
    the process exits with (an output that could not be written makes it exit 2, and the verdict line says so),
    then stop the embedded mocks."""
    ctx.close()
    if ctx.is_worker or not ctx.has_options:
        return
    write_final_csv(ctx.environment, ctx.options.locust.csv_prefix)  # Locust's own misses the last second
    if ctx.stopped_at is None:
        ctx.stopped_at = time.time()
    summary = ctx.final_summary if ctx.final_summary is not None else ctx.summary()
    problems, notes = _write_outputs(ctx, summary)
    if problems:
        summary["verdict"] = _output_failed(problems, summary.get("verdict"))
        force_exit_code(2)  # Locust has settled its exit code by now
    print("\n".join([*ctx.lines(summary), *notes]), flush=True)
    for problem in problems:
        sys.stderr.write(f"error: {problem}\n")
    if ctx.mock is not None:
        ctx.mock.stop()
    stop_mocks(ctx.mocks)


def _write_outputs(ctx: RunContext, summary: dict[str, Any]) -> tuple[list[str], list[str]]:
    """JUnit, Markdown (also to GitHub's step summary inside Actions), the HTML report and the JSON summary, each
    when asked for: the problems (one line each) and the notes to print."""
    opts = ctx.options
    problems: list[str | None] = []
    notes = []
    for path, what, write in (
        (opts.llm_junit, "JUnit report", write_junit),
        (opts.llm_markdown, "Markdown summary", write_markdown),
    ):
        if path:
            problems.append(write(path, summary, redact=ctx.redact))
            notes += [] if problems[-1] else [f"loadlib: {what} written to {path}"]
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        problems.append(append_step_summary(ctx.redact(markdown_summary(summary))))
    problems.append(write_report(opts, summary, ctx.redact))
    if opts.llm_summary:
        stats = getattr(getattr(ctx, "stats", None), "stats", None)  # the run's StatsPart: its histograms
        kept = with_histograms(summary, stats) if stats is not None else summary
        problem = write_summary(opts.llm_summary, kept, ctx.redact)
        problems.append(problem)
        notes += [] if problem else [f"loadlib: LLM summary written to {opts.llm_summary}"]
    return [p for p in problems if p], notes


def _output_failed(problems: list[str], outcome: dict[str, Any] | None) -> dict[str, Any]:
    """The verdict once an output could not be written: exit code 2, the run's own verdict kept among the reasons."""
    own = [f"the run itself: {verdicts.verdict_line(outcome)}"] if outcome else []
    return {"status": "config_error", "exit_code": verdicts.EXIT_CODES["config_error"], "reasons": [*problems, *own]}


def stop_run(ctx: RunContext, message: str) -> None:
    """Stop a run that cannot succeed: one line now, and the verdict `fatal` with exit code 2 (headless) or a stopped
    test (web UI). A worker hands the line to its master, which stops every worker."""
    runner = ctx.environment.runner
    if isinstance(runner, WorkerRunner):
        runner.send_message(FATAL_MESSAGE, {"message": message})
        return
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    if not ctx.verdicts.fatal:
        ctx.verdicts.fatal = message  # the verdict: `fatal`, exit code 2
    end_run(ctx)


def end_run(ctx: RunContext) -> None:
    """End the test from inside: quit a headless run (every worker with it), stop a web UI one."""
    runner = ctx.environment.runner
    gevent.spawn(runner.quit if ctx.options.locust.headless else runner.stop)


def fail(message: str) -> None:
    """A user mistake at start-up: one line on stderr and exit code 2, no traceback; the verdict line on stdout too,
    as on every other path, for a pipeline that reads only that."""
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    outcome: dict[str, Any] = {
        "status": "config_error",
        "exit_code": verdicts.EXIT_CODES["config_error"],
        "reasons": ["nothing was sent (the error above)"],
    }
    print(verdicts.verdict_line(outcome), flush=True)
    sys.exit(outcome["exit_code"])
