"""Locust wiring of loadlib: options, run id, embedded mock, LLM statistics merged on the master, web UI tab,
end-of-run summary. Importing `loadlib.locust` (what locustfiles do) installs it once.
"""

from __future__ import annotations

import gevent
from locust.runners import MasterRunner, WorkerRunner

import gc
import json
import logging
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any

from loadlib import config
from loadlib.errors import LoadlibError
from loadlib.fatal import FatalStop
from loadlib.health import HealthSampler
from loadlib.hooks import hooks
from loadlib.metrics.histogram import Histogram
from loadlib.metrics.saturation import SaturationThresholds, saturation_verdict
from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary, render_table
from loadlib.records_export import open_export
from loadlib.redact import Redactor, install_log_filter
from loadlib.runtime import build_runtime
from loadlib.scenarios.results import print_scenarios, scenario_summary
from loadlib.sinks.plugin import install as install_sinks
from loadlib.sinks.plugin import sink_stats

log = logging.getLogger("loadlib")
REPORT_KEY = "llm_stats"
HEALTH_KEY = "llm_health"
FATAL_MESSAGE = "loadlib_fatal"


class LLMRun:
    """State of loadlib on one node: statistics (per node; merged on the master), health, the mock it started."""

    def __init__(self, environment: Any) -> None:
        self.environment = environment
        self.stats = LLMStats()
        self.loop_lag = Histogram()
        self.cpu = Histogram()
        self.sampler: HealthSampler | None = None
        self.mock: Any = None
        self.export: Any = None
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self.summary: dict[str, Any] | None = None
        self.fatal = FatalStop(0.0)
        self.redact = Redactor()

    def add_health(self, data: dict[str, Any]) -> None:
        self.loop_lag.merge(Histogram.from_dict(data["loop_lag_ms"]))
        self.cpu.merge(Histogram.from_dict(data["cpu_percent"]))

    def reset(self) -> None:
        self.stats.reset()
        self.loop_lag = Histogram()
        self.cpu = Histogram()

    def duration_s(self) -> float:
        if self.started_at is None:
            return 0.0
        return max((self.stopped_at or time.time()) - self.started_at, 1e-9)

    def build_summary(self) -> dict[str, Any]:
        env = self.environment
        opts = env.parsed_options
        if self.sampler is not None:  # local runner: fold in this node's own latest samples
            self.add_health(self.sampler.take())
        thresholds = SaturationThresholds(loop_lag_p99_ms=opts.llm_lag_threshold_ms, cpu_percent=opts.llm_cpu_threshold)
        itl_p50 = self.stats.total.itl_ms.percentile(50.0)
        verdict = saturation_verdict(self.loop_lag, self.cpu, thresholds, itl_p50) if self.loop_lag.count else None
        meta = {
            "run_id": opts.run_id,
            "host": env.host,
            "provider": opts.llm_provider,
            "model": opts.llm_model,
            "started_at": self.started_at,
            "stopped_at": self.stopped_at,
            "duration_s": round(self.duration_s(), 3),
        }
        self.summary = build_summary(self.stats, self.duration_s(), verdict, meta)
        self.summary["sink"] = sink_stats(env)
        self.summary["scenarios"] = scenario_summary(env, self.summary)
        return self.summary


def llm_run(environment: Any) -> LLMRun:
    run = getattr(environment, "_llm_run", None)
    if run is None:
        run = environment._llm_run = LLMRun(environment)
    return run


def fatal_stop(environment: Any) -> FatalStop:
    """This node's watch for runs that can only fail (reset at every test start)."""
    return llm_run(environment).fatal


def stop_run(environment: Any, message: str) -> None:
    """Stop a run that cannot succeed: one line and exit code 2 (headless) or a stopped test (web UI). A worker
    hands the verdict to its master, which stops every worker."""
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        runner.send_message(FATAL_MESSAGE, message)
        return
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    environment.process_exit_code = 2
    opts = environment.parsed_options
    gevent.spawn(runner.quit if opts is not None and opts.headless else runner.stop)


def _fail(message: str) -> None:
    """A user mistake: one line on stderr and a non-zero exit, no traceback."""
    sys.stderr.write(f"error: {message}\n")
    sys.stderr.flush()
    sys.exit(2)


def _mock_args(spec: str) -> list[str]:
    args: list[str] = []
    for item in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise config.ConfigError(f"--llm-mock item {item!r} is not key=value (e.g. ttft_ms=200,itl_ms=10)")
        args += [f"--{key.strip().replace('_', '-')}", value.strip()]
    return args


def _start_embedded_mock(environment: Any, run: LLMRun) -> None:
    from loadlib.mock import start_subprocess

    opts = environment.parsed_options
    run.mock = start_subprocess(extra_args=_mock_args(opts.llm_mock))
    base = run.mock.url if opts.llm_provider == "anthropic" else run.mock.url + "/v1"
    environment.host = base
    if opts.llm_api_key_env == "":
        opts.llm_api_key_env = config.NO_KEY
    if not opts.llm_endpoint_name:
        opts.llm_endpoint_name = "mock"
    print(
        f"loadlib: no --host given, targeting the embedded mock LLM server at {base} (pass --host URL for a real "
        "endpoint)",
        flush=True,
    )


def on_init(environment: Any, **_: Any) -> None:
    run = llm_run(environment)
    runner = environment.runner
    opts = environment.parsed_options
    if opts is None:
        return
    is_worker = isinstance(runner, WorkerRunner)
    if not is_worker:
        if not opts.run_id:
            opts.run_id = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
        try:
            if not environment.host:
                environment.host = os.environ.get("LLM_BASE_URL", "")
            if not environment.host:
                _start_embedded_mock(environment, run)
            rt = build_runtime(environment, require_key=True)  # validates endpoint, key variable, price table
            run.redact = rt.redact
            install_log_filter(rt.redact)
        except LoadlibError as exc:
            if run.mock is not None:
                run.mock.stop()
            _fail(str(exc))
    if isinstance(runner, MasterRunner):
        runner.register_message(FATAL_MESSAGE, lambda msg, **__: stop_run(environment, str(msg.data)))
    if environment.web_ui and not is_worker:
        from loadlib.webui import install_tab

        install_tab(environment, run)


def on_test_start(environment: Any, **_: Any) -> None:
    run = llm_run(environment)
    run.started_at = time.time()
    run.stopped_at = None
    run.fatal = FatalStop(float(getattr(environment.parsed_options, "llm_stop_on_fatal_s", 0.0) or 0.0))
    if isinstance(environment.runner, MasterRunner):
        return
    try:
        rt = environment._llm_runtime = build_runtime(environment, require_key=True)
    except LoadlibError as exc:
        log.error("loadlib: %s", exc)
        environment.runner.quit()
        return
    run.redact = rt.redact
    install_log_filter(rt.redact)
    if run.sampler is None:
        run.sampler = HealthSampler(environment)
    run.sampler.start()
    template = environment.parsed_options.llm_records
    if template and run.export is None:
        rt = environment._llm_runtime
        run.export = open_export(template, rt.run_id, rt.worker_id)
    _quiet_gc()


def _quiet_gc() -> None:
    """Move everything allocated at start-up (Locust, Flask, data sets) out of the collector's reach and collect
    less often: a full collection over that heap stalls every stream on the worker for milliseconds."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 50, 100)


def on_test_stop(environment: Any, **_: Any) -> None:
    run = llm_run(environment)
    run.stopped_at = time.time()
    if run.export is not None:
        run.export.flush()


def on_record(environment: Any, record: Any) -> None:
    run = llm_run(environment)
    run.stats.add(record)
    if run.export is not None:
        run.export.add(record)


def on_report_to_master(environment: Any, data: dict[str, Any], **_: Any) -> None:
    run = llm_run(environment)
    data[REPORT_KEY] = run.stats.serialize()
    run.stats.reset()
    if run.sampler is not None:
        data[HEALTH_KEY] = run.sampler.take()


def on_worker_report(environment: Any, data: dict[str, Any], **_: Any) -> None:
    run = llm_run(environment)
    if REPORT_KEY in data:
        run.stats.merge_serialized(data[REPORT_KEY])
    if HEALTH_KEY in data:
        run.add_health(data[HEALTH_KEY])


def on_quit(environment: Any) -> None:
    run = llm_run(environment)
    if run.export is not None:
        run.export.close()
        run.export = None
    if isinstance(environment.runner, WorkerRunner) or environment.parsed_options is None:
        return
    if run.stopped_at is None:
        run.stopped_at = time.time()
    summary = run.build_summary()
    print(run.redact(render_table(summary)), flush=True)
    print_scenarios(summary)
    sink = summary.get("sink")
    if sink:
        print(
            f"InfluxDB sink: {sink['written']} points written, {sink['dropped']} dropped, "
            f"{sink['buffered']} still buffered" + (f"; problems: {sink['errors']}" if sink["errors"] else ""),
            flush=True,
        )
    path = environment.parsed_options.llm_summary
    if path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(run.redact(json.dumps(summary, indent=2, default=str)) + "\n")
        print(f"loadlib: LLM summary written to {target}", flush=True)
    if run.mock is not None:
        run.mock.stop()


def install(events: Any) -> None:
    """Register loadlib's listeners on Locust's events (idempotent)."""
    if getattr(events, "_loadlib_installed", False):
        return
    events._loadlib_installed = True
    events.init_command_line_parser.add_listener(config.add_arguments)
    events.init.add_listener(on_init)

    def _init_hooks(environment: Any, **_: Any) -> None:
        hooks(environment).record.add_listener(lambda record, **__: on_record(environment, record))

        def _quit(exit_code: int = 0, **__: Any) -> None:
            on_quit(environment)

        environment.events.quit.add_listener(_quit)
        environment.events.reset_stats.add_listener(lambda **__: llm_run(environment).reset())
        environment.events.report_to_master.add_listener(lambda data, **__: on_report_to_master(environment, data))
        environment.events.worker_report.add_listener(lambda data, **__: on_worker_report(environment, data))

    events.init.add_listener(_init_hooks)
    events.test_start.add_listener(on_test_start)
    events.test_stop.add_listener(on_test_stop)
    install_sinks(events)
