"""Exercises the InfluxDB sink's node part (loadlib.locust.sink_part) through loadlib's wiring inside Locust (which
monkey-patches gevent on import, so test_plugin.py runs this in a subprocess). Prints one JSON object with what it
observed: the HTTP bodies a recording server received, sink stats, report payloads and configuration errors."""

from locust.argument_parser import get_parser
from locust.env import Environment
from locust.event import Events

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

from loadlib.errors import ConfigError, ErrorClass
from loadlib.locust import install as wiring
from loadlib.locust.context import context
from loadlib.records.record import RequestRecord
from loadlib.settings import influx_options, resolve
from loadlib.sinks.config import config_from_options
from tests.support.locust_env import FakeMasterRunner, FakeWorkerRunner

HOST = "http://127.0.0.1:9/v1"

BODIES: list[str] = []


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.startswith("/write"):
            BODIES.append(body.decode())
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def parse(args: list[str]) -> Any:
    events = Events()
    wiring.install(events)
    wiring.install(events)  # idempotent: options are added once
    parser = get_parser()
    events.init_command_line_parser.fire(parser=parser)
    web_ui = {a.dest: a.include_in_web_ui for a in parser._actions if a.dest.startswith("influx_")}
    return events, parser.parse_args(args), web_ui


def record(i: int) -> RequestRecord:
    return RequestRecord(
        run_id="",  # filled in by the sink
        scenario="chat",
        endpoint="primary",
        provider="openai",
        model="mock-llm",
        worker_id="",
        request_id=f"r{i}",
        start_unix_ns=time.time_ns(),
        e2e_ms=10.0 + i,
        status=ErrorClass.OK,
    )


def local_run(url: str) -> dict[str, Any]:
    events, opts, web_ui = parse(
        ["--influx-url", url, "--influx-api", "v1", "--influx-flush-interval", "0.05", "--llm-api-key-env", "none"]
    )
    opts.run_id = "run-7"  # set by the core plugin's --run-id in real runs
    env = Environment(events=events, parsed_options=opts, host=HOST)
    runner = env.create_local_runner()
    events.init.fire(environment=env, runner=runner, web_ui=None)
    events.test_start.fire(environment=env)
    ctx = context(env)
    for i in range(20):
        ctx.record(record(i))
    ctx.events.worker_health.fire(users=3, cpu_percent=12.5, loop_lag_ms=0.75)
    ctx.events.endpoint_event.fire(kind="failover", endpoint="backup", message="primary open")
    during = ctx.sinks.totals()
    events.test_stop.fire(environment=env)
    events.quitting.fire(environment=env)  # a second close is a no-op
    return {
        "opts": {k: v for k, v in vars(opts).items() if k.startswith("influx_")},
        "web_ui": web_ui,
        "during": during,
        "after": ctx.sinks.totals(),
    }


def distributed(url: str) -> dict[str, Any]:
    events, opts, _ = parse(["--influx-url", url, "--influx-api", "v1", "--llm-api-key-env", "none"])
    opts.run_id = "run-8"
    worker_env = Environment(events=events, parsed_options=opts, host=HOST)
    worker_env.runner = FakeWorkerRunner("host_abc123")
    events.test_start.fire(environment=worker_env)
    for i in range(5):
        context(worker_env).record(record(i))
    data: dict[str, Any] = {}
    events.report_to_master.fire(client_id="host_abc123", data=data)
    events.test_stop.fire(environment=worker_env)
    final: dict[str, Any] = {}
    events.report_to_master.fire(client_id="host_abc123", data=final)

    m_events, m_opts, _ = parse(["--influx-url", url, "--influx-api", "v1", "--llm-api-key-env", "none"])
    m_opts.run_id = "run-8"
    master_env = Environment(events=m_events, parsed_options=m_opts)
    master_env.runner = FakeMasterRunner()
    m_events.test_start.fire(environment=master_env)
    m_events.worker_report.fire(client_id="host_abc123", data=final)
    m_events.worker_report.fire(client_id="host_def456", data={"llm_sink": {"error": "no token", "dropped": 0}})
    m_events.worker_report.fire(client_id="host_ghi789", data={"stats": []})  # a worker without the sink
    m_events.test_stop.fire(environment=master_env)

    # a worker whose own environment lacks the v2 token: the sink is off there, and the master is told why
    v2_events, v2_opts, _ = parse(["--influx-url", url, "--influx-org", "o", "--llm-api-key-env", "none"])
    v2_opts.run_id = "run-8"
    v2_env = Environment(events=v2_events, parsed_options=v2_opts, host=HOST)
    v2_env.runner = FakeWorkerRunner("host_notoken")
    v2_events.test_start.fire(environment=v2_env)
    no_token: dict[str, Any] = {}
    v2_events.report_to_master.fire(client_id="host_notoken", data=no_token)
    return {
        "worker_report": data.get("llm_sink"),
        "worker_final": final.get("llm_sink"),
        "master": context(master_env).sinks.totals(),
        "no_token_report": no_token.get("llm_sink"),
    }


def config_errors() -> dict[str, str | None]:
    base = {
        "influx_url": "http://127.0.0.1:8086",
        "influx_api": "v2",
        "influx_db": "locust",
        "influx_rp": "",
        "influx_org": "org",
        "influx_bucket": "locust",
        "influx_buffer": 100_000,
        "influx_batch": 5000,
        "influx_flush_interval": 1.0,
        "influx_close_timeout": 5.0,
    }
    cases: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
        "ok_v2": ({}, {"INFLUX_TOKEN": "t"}),
        "ok_v1": ({"influx_api": "v1"}, {}),
        "ok_v1_auth": ({"influx_api": "v1"}, {"INFLUX_USER": "u", "INFLUX_PASSWORD": "p"}),
        "ok_strings_from_web_ui": ({"influx_buffer": "500", "influx_batch": "50"}, {"INFLUX_TOKEN": "t"}),
        "off": ({"influx_url": ""}, {}),
        "v2_no_token": ({}, {}),
        "v2_no_org": ({"influx_org": ""}, {"INFLUX_TOKEN": "t"}),
        "v1_user_only": ({"influx_api": "v1"}, {"INFLUX_USER": "u"}),
        "v1_no_db": ({"influx_api": "v1", "influx_db": ""}, {}),
        "bad_api": ({"influx_api": "v3"}, {"INFLUX_TOKEN": "t"}),
        "bad_url": ({"influx_url": "influxdb:8086"}, {"INFLUX_TOKEN": "t"}),
        "creds_in_url": ({"influx_url": "http://u:p@influxdb:8086"}, {"INFLUX_TOKEN": "t"}),
        "batch_over_buffer": ({"influx_buffer": 10, "influx_batch": 20}, {"INFLUX_TOKEN": "t"}),
        "zero_buffer": ({"influx_buffer": 0}, {"INFLUX_TOKEN": "t"}),
        "bad_number": ({"influx_batch": "lots"}, {"INFLUX_TOKEN": "t"}),
        "zero_flush": ({"influx_flush_interval": 0}, {"INFLUX_TOKEN": "t"}),
        "negative_close": ({"influx_close_timeout": -1}, {"INFLUX_TOKEN": "t"}),
    }
    out: dict[str, str | None] = {}
    for name, (overrides, environ) in cases.items():
        try:
            cfg = config_from_options(influx_options(resolve(SimpleNamespace(**{**base, **overrides}))), environ)
            out[name] = None if cfg is None else f"ok {cfg.api} {cfg!r}"
        except ConfigError as exc:
            out[name] = f"error {exc}"
    return out


def init_exit() -> dict[str, Any]:
    events, opts, _ = parse(["--influx-url", "http://127.0.0.1:1", "--influx-api", "v3"])
    env = Environment(events=events, parsed_options=opts)
    runner = env.create_local_runner()
    try:
        events.init.fire(environment=env, runner=runner, web_ui=None)
    except SystemExit as exc:
        return {"exit_code": exc.code}
    return {"exit_code": None}


def main() -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    result = {"local": local_run(url)}
    local_bodies = list(BODIES)
    result["distributed"] = distributed(url)
    result["config"] = config_errors()
    result["init"] = init_exit()
    result["bodies"] = local_bodies
    httpd.shutdown()
    sys.stdout.write(json.dumps(result, default=str) + "\n")


if __name__ == "__main__":
    main()
