"""Every option loadlib adds to Locust, in one registry: the command line, `locust.conf` / `pyproject.toml`, the
environment and the web UI's start form all take the same options, whichever locustfile is run.

One naming rule for the environment: `LLM_` + the option's name without its leading `--` and `llm-`, upper case,
`-` as `_` (`--llm-timeout-total` is `LLM_TIMEOUT_TOTAL`, `--arrival-rate` is `LLM_ARRIVAL_RATE`). Precedence is
Locust's: defaults < config file < environment < command line. Keys are never options: they come from the
environment variable that --llm-api-key-env names (and INFLUX_TOKEN, INFLUX_USER, INFLUX_PASSWORD for InfluxDB).

`python -m loadlib --help` prints this registry (Locust's own `--help` runs before the locustfile is imported), and
`docs/options.md` is generated from it (`python -m loadlib --markdown`; a test keeps the two equal).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from loadlib.outputs.progress import checked_mode as checked_progress
from loadlib.pacing import PROCESSES as ARRIVAL_PROCESSES
from loadlib.providers import registry as providers

ENDPOINT = "LLM endpoint and requests"
LIMITS = "Time and size limits"
OUTPUT = "Outputs"
CLIENT = "Client health"
LOAD = "Load model (any scenario)"
DATA = "Scenario data"
CHAT = "Support chat scenario"
DOC = "Long-document scenario"
COMPLIANCE = "Compliance scenario"
SHAPES = "Load shapes (RampShape, StepShape)"
CAPACITY = "Capacity search (CapacityShape, docs/capacity.md)"
INFLUX = "InfluxDB sink"
FAILOVER = "Failover and drills (docs/failover.md)"
DEFAULT_AUDIT = "results/audit-{run_id}.jsonl"
DOC_MODES = ("whole", "chunked", "probe")


@dataclass(frozen=True)
class Option:
    """One option: its flag, default, type and help, the group it is listed under, and whether the web UI's start
    form offers it (paths and files are left to the command line)."""

    flag: str
    help: str
    group: str
    default: Any = ""
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    flag_only: bool = False  # a switch: present or absent (store_true)
    web_ui: bool = True
    repeatable: bool = False  # each occurrence adds to the list (JoinAction), none is silently dropped

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    @property
    def env_var(self) -> str:
        return "LLM_" + self.flag.removeprefix("--").removeprefix("llm-").replace("-", "_").upper()

    def kwargs(self) -> dict[str, Any]:
        """argparse keyword arguments (Locust's parser also reads `env_var` and `include_in_web_ui`)."""
        kw: dict[str, Any] = {"help": argparse_text(self.help), "default": self.default, "env_var": self.env_var}
        if self.flag_only:
            kw["action"] = "store_true"
        elif self.repeatable:
            kw["action"] = JoinAction
        else:
            kw.update({k: v for k, v in (("type", self.type), ("choices", self.choices)) if v is not None})
        return kw


class JoinAction(argparse.Action):
    """A repeatable option whose value stays one ';'-separated string: `--llm-threshold A --llm-threshold B` is
    'A; B'. argparse's default would keep only B, silently; a string (not a list) is what the web UI's form, the
    environment variable and locust.conf give, and what the master sends its workers."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        before = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, f"{before}; {values}" if before and before != self.default else values)


def argparse_text(text: str) -> str:
    """argparse formats help with %: a literal percent sign (as in 'error_rate < 1%') must be doubled."""
    return text.replace("%", "%%")


def _o(flag: str, group: str, default: Any, help: str, **kw: Any) -> Option:
    kind = kw.pop("type", None) or (type(default) if isinstance(default, int | float) else None)
    return Option(flag, help, group, default, kind if kind is not bool else None, **kw)


OPTIONS: tuple[Option, ...] = (
    # endpoint and requests
    _o(
        "--llm-provider",
        ENDPOINT,
        providers.DEFAULT,
        f"API the endpoint speaks: {providers.providers_help()}. The base URL is Locust's --host (or LLM_BASE_URL); "
        "without one, the embedded mock LLM server is started and targeted.",
    ),
    _o("--llm-model", ENDPOINT, "mock-llm", "Model name sent in every request."),
    _o(
        "--llm-api-key-env",
        ENDPOINT,
        "",
        f"Name of the environment variable holding the API key (default: {providers.key_envs_help()}; "
        "'none' for servers without auth). Keys are never taken from the command line.",
    ),
    _o(
        "--llm-endpoint-name",
        ENDPOINT,
        "",
        "Label for the endpoint (default: its host, with the port when not the scheme's default, e.g. "
        "127.0.0.1:8001; 'mock' for the embedded mock).",
    ),
    _o("--llm-max-tokens", ENDPOINT, 128, "max_tokens per request (scenarios may set their own)."),
    _o(
        "--llm-price-table",
        ENDPOINT,
        "",
        "YAML price table (USD per million input/output/cached-input tokens per model); default: bundled.",
        web_ui=False,
    ),
    _o(
        "--llm-mock",
        ENDPOINT,
        "",
        "Settings of the embedded mock when no --host is given, e.g. 'ttft_ms=200,itl_ms=10,output_tokens=64', or "
        "'engine=batching' for a model of a server under load (keys: docs/mock.md).",
        web_ui=False,  # the mock starts with the process: a value from the start form would change nothing
    ),
    _o("--run-id", ENDPOINT, "", "Run id (default: generated by the master)."),
    _o(
        "--llm-cold-connect",
        ENDPOINT,
        False,
        "Include each user's first TCP/TLS connection set-up in its first request's timings (default: users open "
        "their keep-alive connection when they start, outside any timed request).",
        flag_only=True,
    ),
    _o(
        "--llm-estimate-every",
        ENDPOINT,
        20,
        "Count completion tokens with tiktoken for 1 in N requests that have server usage (0 = never), to record the "
        "usage-vs-estimate deviation; requests without usage are always counted.",
    ),
    # limits
    _o("--llm-timeout-connect", LIMITS, 10.0, "Seconds to open the connection (timeout_connect)."),
    _o("--llm-timeout-ttft", LIMITS, 60.0, "Seconds from send to the first output token (timeout_ttft)."),
    _o("--llm-timeout-idle", LIMITS, 30.0, "Longest silence mid-stream, seconds (timeout_idle)."),
    _o("--llm-timeout-total", LIMITS, 600.0, "Whole request, seconds (timeout_total), however fast data arrives."),
    _o(
        "--llm-max-line-mb",
        LIMITS,
        4.0,
        "Longest SSE line accepted, MiB; a longer one ends the request as `oversized` and closes the connection.",
    ),
    _o("--llm-max-event-mb", LIMITS, 8.0, "Largest SSE event accepted, MiB (`oversized` beyond)."),
    _o(
        "--llm-max-response-mb",
        LIMITS,
        128.0,
        "Largest response accepted, MiB (`oversized` beyond; a 128K-token stream is about 30 MiB).",
    ),
    _o("--llm-max-head-kb", LIMITS, 64, "Largest response head (status line and headers) accepted, KiB (`oversized`)."),
    _o(
        "--llm-max-text-kb",
        LIMITS,
        1024,
        "Most output kept per response for checks and answers, in units of 1,024 characters (text, reasoning, "
        "refusal and tool arguments together); the rest is counted (`text_dropped`), not kept; the request stands.",
    ),
    _o(
        "--llm-stop-on-fatal-s",
        LIMITS,
        5.0,
        "Stop the run (verdict FATAL, exit code 2, one line naming the cause) when every request of its first N "
        "seconds failed in a way that will not heal by itself: TLS certificate, host name, HTTP 401/403/404, or "
        "nothing accepting connections at the address. Users back off after the first kinds either way. 0 = never "
        "stop (to measure exactly that; the thresholds then judge the errors).",
    ),
    # failover
    _o(
        "--llm-pool",
        FAILOVER,
        "",
        "Endpoint pool: a YAML file (or inline YAML/JSON starting with '{') with named endpoints (real or embedded "
        "mocks), the routing policy, circuit breaker, retries, hedging, drills and their targets. Without it the run "
        "targets --host alone (a pool of one).",
        web_ui=False,
    ),
    _o(
        "--llm-policy",
        FAILOVER,
        None,
        "Routing over the pool's healthy endpoints: priority (first healthy) or weighted (spread by weight). "
        "Overrides the pool file.",
        choices=("priority", "weighted"),
        web_ui=False,  # no default to show: the start form would send the text "None" (issue 12 adds typed fields)
    ),
    _o(
        "--llm-max-attempts",
        FAILOVER,
        None,
        "Attempts per user-visible request (1 = no retries, the pool file's default). Retries use exponential "
        "backoff with full jitter and honour Retry-After; never after output has reached the user.",
        type=int,
        web_ui=False,
    ),
    _o(
        "--llm-retry-budget",
        FAILOVER,
        None,
        "Extra attempts (retries and hedges) at most this share of user-visible requests over a 10 s window "
        "(default 0.2), so a 429 storm cannot multiply the load.",
        type=float,
        web_ui=False,
    ),
    _o(
        "--llm-hedge-after-ms",
        FAILOVER,
        None,
        "Hedging: without a first token from the chosen endpoint within this many ms, send the same request to the "
        "next one; the first token wins and the other is cancelled (still counted). 0 = off.",
        type=float,
        web_ui=False,
    ),
    _o(
        "--llm-drill",
        FAILOVER,
        "",
        "Drills, ';'-separated or the flag repeated: 'ENDPOINT:FAULT@AT+FOR' (e.g. 'primary:http_503@20s+20s'). "
        "Faults: refuse, http_500, http_503, stall, rate_limit, latency, broken. Added to the pool file's drills.",
        repeatable=True,
    ),
    # outputs
    _o("--llm-summary", OUTPUT, "", "Write the end-of-run LLM summary as JSON to this file.", web_ui=False),
    _o(
        "--llm-threshold",
        OUTPUT,
        "",
        "Thresholds that decide the exit code, ';'-separated or the flag repeated, e.g. 'ttft p95 < 150ms; "
        "error_rate < 1%; error_rate{class=rate_limited} < 5%' (grammar and metrics: docs/thresholds.md). With any "
        "threshold (or a drill or a scenario SLO) the verdict sets the exit code: 0 pass, 99 failed, 3 run invalid, "
        "130 interrupted, 2 configuration error.",
        repeatable=True,
    ),
    _o(
        "--llm-thresholds-file",
        OUTPUT,
        "",
        "YAML file of thresholds (docs/thresholds.md), added to --llm-threshold.",
        web_ui=False,
    ),
    _o(
        "--llm-abort-on-fail",
        OUTPUT,
        False,
        "Evaluate the thresholds once a second during the run and stop it (every worker, outputs still written, exit "
        "99) as soon as one is lost for good (k6's abortOnFail; docs/thresholds.md).",
        flag_only=True,
    ),
    _o(
        "--llm-abort-delay",
        OUTPUT,
        10.0,
        "Seconds after the test starts before --llm-abort-on-fail may stop it (k6's delayAbortEval): percentiles need "
        "their samples first.",
    ),
    _o(
        "--llm-final-report-wait-s",
        OUTPUT,
        10.0,
        "Distributed runs: at quit, how long the master waits for every live worker's final report (its last "
        "statistics and InfluxDB sink counts; a worker's InfluxDB sink may take --influx-close-timeout to close).",
        web_ui=False,
    ),
    _o(
        "--llm-request-slo",
        OUTPUT,
        "",
        "Per-request SLO for goodput, e.g. 'ttft <= 500ms, tpot <= 50ms': a request is good when it succeeded within "
        "every bound; the summary reports the good share per row and 'goodput >= 95%' can be a threshold.",
    ),
    _o("--llm-junit", OUTPUT, "", "Write JUnit XML (one test case per threshold) to this file.", web_ui=False),
    _o(
        "--llm-markdown",
        OUTPUT,
        "",
        "Write a Markdown summary (verdict, thresholds, table) to this file; inside GitHub Actions it is also "
        "appended to $GITHUB_STEP_SUMMARY.",
        web_ui=False,
    ),
    _o(
        "--llm-report",
        OUTPUT,
        "",
        "Write the HTML run report (plots, tables, verdict; docs/reports.md) to this file when the run ends, from "
        "the run's records (--llm-records; without it they go beside the report). A distributed master builds it "
        "from the workers' files it can see (one machine or a shared volume).",
        web_ui=False,
    ),
    _o(
        "--llm-records",
        OUTPUT,
        "",
        "Write every request's record (timings, ITLs, tokens, cost, status; no prompt or output text) as JSON lines "
        "to this file; {run_id} and {worker} in the path are filled in (workers on one machine may share it).",
        web_ui=False,
    ),
    _o(
        "--llm-progress",
        OUTPUT,
        "auto",
        "Headless runs: what the master (or local runner) shows while the test runs. auto: a live panel on a terminal "
        "(elapsed against -t, users, requests/s, output tokens/s, TTFT p50/p95, errors by class, thresholds so far, "
        "client health), one line every 10 s when stdout is not a terminal (CI logs); bar or lines: that one; "
        "lines:SECONDS (or auto:SECONDS): another line interval; locust: Locust's request table every 2 s instead; "
        "off: nothing until the summary. Locust's table is off unless this is locust or --print-stats is given.",
        type=checked_progress,
        web_ui=False,
    ),
    # client health
    _o("--llm-lag-threshold-ms", CLIENT, 50.0, "Loop-lag p99 above which the run is flagged client-saturated."),
    _o("--llm-cpu-threshold", CLIENT, 90.0, "Worker CPU % above which the run is flagged client-saturated."),
    # load model
    _o(
        "--arrival-rate",
        LOAD,
        0.0,
        "Open loop: target requests/s of the whole run (split evenly over --expect-workers); 0 = closed loop (each "
        "user waits for its answer and its think time).",
    ),
    _o(
        "--arrival-process",
        LOAD,
        "poisson",
        "Open loop: Poisson arrivals or evenly spaced ones.",
        choices=ARRIVAL_PROCESSES,
    ),
    _o(
        "--scenario-slo",
        LOAD,
        "on",
        "The scenarios' SLO defaults as thresholds (on) or not (off). To change one, give a threshold with the "
        "scenario tag, e.g. --llm-threshold 'ttft{scenario=support_chat} p95 < 300ms' (docs/thresholds.md).",
        choices=("on", "off"),
    ),
    # scenario data
    _o("--data-seed", DATA, 1, "Seed of the generated scenario data (same seed, same data)."),
    _o("--data-cache-dir", DATA, "", "Where generated data is cached (default ~/.cache/loadlib/data).", web_ui=False),
    # support chat
    _o("--chat-turns", CHAT, 4, "Customer turns per conversation."),
    _o("--chat-conversations", CHAT, 60, "Distinct generated conversations."),
    _o("--chat-system-tokens", CHAT, 400, "System prompt length in tokens."),
    _o("--chat-think-time", CHAT, "1-3", "Seconds between turns, e.g. 2 or 1-3 (closed loop)."),
    _o(
        "--chat-sweep",
        CHAT,
        "",
        "System-prompt sizes to sweep, e.g. 100,500,2000, or 'on' for 100,250,500,1000,2000 (each new conversation "
        "takes the next size; TTFT is reported per size).",
    ),
    _o("--chat-max-tokens", CHAT, 0, "max_tokens of an answer (0 = --llm-max-tokens)."),
    _o(
        "--chat-data-file",
        CHAT,
        "",
        "JSONL of conversations instead of generated ones (docs/scenarios.md).",
        web_ui=False,
    ),
    # long document
    _o("--doc-mode", DOC, "whole", "whole, chunked or probe.", choices=DOC_MODES),
    _o("--doc-tokens", DOC, "4000,8000,16000,32000,64000,128000", "Target sizes in tokens of the generated documents."),
    _o("--doc-per-size", DOC, 1, "Documents per size."),
    _o("--doc-chunk-tokens", DOC, 4000, "Chunked mode: chunk size in tokens."),
    _o("--doc-overlap-tokens", DOC, 200, "Chunked mode: tokens shared by neighbouring chunks."),
    _o("--doc-max-tokens", DOC, 256, "max_tokens of a summary."),
    _o(
        "--doc-truncation-ratio",
        DOC,
        0.7,
        "Billed/sent prompt tokens below this ratio count as silent truncation.",
    ),
    _o(
        "--doc-canary",
        DOC,
        "on",
        "Whole and probe modes: end each document with a reference code the model is asked to quote first; an "
        "answer without it means the end of the document never reached the model, whatever the usage says. Turn it "
        "off for a model that will not quote it.",
        choices=("on", "off"),
    ),
    _o("--doc-probe-max", DOC, 256000, "Probe mode: largest prompt to try, tokens."),
    _o("--doc-probe-resolution", DOC, 1000, "Probe mode: precision of the limit, tokens."),
    _o("--doc-data-file", DOC, "", "JSONL of documents instead of generated ones.", web_ui=False),
    # compliance
    _o("--compliance-cases", COMPLIANCE, 60, "Distinct generated cases."),
    _o(
        "--compliance-repeat-share",
        COMPLIANCE,
        0.2,
        "Share of cases sent twice in a row to check that temperature-0 answers are identical.",
    ),
    _o("--compliance-max-tokens", COMPLIANCE, 1024, "max_tokens of the JSON findings."),
    _o("--compliance-data-file", COMPLIANCE, "", "JSONL of cases instead of generated ones.", web_ui=False),
    _o(
        "--audit-file",
        COMPLIANCE,
        DEFAULT_AUDIT,
        "Audit trail, one JSONL line per request ({run_id} and {worker} are filled in; 'none' turns it off).",
        web_ui=False,
    ),
    # shapes
    _o("--shape-ramp-s", SHAPES, 0.0, "RampShape: seconds to reach the user count (0 = half the run time)."),
    _o("--shape-steps", SHAPES, 5, "StepShape: number of steps."),
    _o("--shape-step-s", SHAPES, 30.0, "StepShape: seconds per step."),
    # capacity search
    _o("--llm-capacity-start", CAPACITY, 1, "Users of the search's first step."),
    _o("--llm-capacity-max", CAPACITY, 1000, "Most users tried; when they hold, the answer is a lower bound."),
    _o(
        "--llm-capacity-precision",
        CAPACITY,
        0.05,
        "Relative precision: the search ends when the smallest failing load is within it of the largest that held, "
        "and a step's window may end early once each threshold's percentile is known within it.",
    ),
    _o("--llm-capacity-warmup-s", CAPACITY, 10.0, "Seconds of each step left out before its window opens."),
    _o("--llm-capacity-window-s", CAPACITY, 30.0, "Longest measuring window of a step, seconds."),
    _o("--llm-capacity-min", CAPACITY, 0, "CI gate: exit code 99 when the capacity found is below this (0: none)."),
    # InfluxDB
    _o(
        "--influx-url",
        INFLUX,
        "",
        "InfluxDB base URL, e.g. http://127.0.0.1:8086; empty = no InfluxDB output. Credentials come only from the "
        "environment: INFLUX_TOKEN (v2) or INFLUX_USER + INFLUX_PASSWORD (v1).",
    ),
    _o("--influx-api", INFLUX, "v2", "v2 (InfluxDB 2.x/3.x /api/v2/write) or v1 (/write)."),
    _o("--influx-db", INFLUX, "locust", "v1: database."),
    _o("--influx-rp", INFLUX, "", "v1: retention policy (default: the database's)."),
    _o("--influx-org", INFLUX, "", "v2: organisation (any value, e.g. '-', for v3)."),
    _o("--influx-bucket", INFLUX, "locust", "v2: bucket."),
    _o(
        "--influx-buffer",
        INFLUX,
        100_000,
        "Most points buffered per node while InfluxDB is slow or down; beyond it the oldest are dropped and counted.",
        web_ui=False,
    ),
    _o("--influx-batch", INFLUX, 5000, "Points per write request.", web_ui=False),
    _o(
        "--llm-grafana-url",
        INFLUX,
        "",
        "Grafana's base URL (e.g. http://localhost:3000): the web UI's LLM charts link to the overview dashboard "
        "filtered to this run.",
        web_ui=False,
    ),
    _o("--influx-flush-interval", INFLUX, 1.0, "Seconds between flushes.", web_ui=False),
    _o(
        "--influx-close-timeout",
        INFLUX,
        5.0,
        "Seconds the last flush may take at test stop; what is left is counted as dropped.",
        web_ui=False,
    ),
)
PATH_OPTIONS = ("llm_summary", "llm_records", "audit_file")  # files loadlib writes: checked before any load


def groups() -> Iterator[tuple[str, list[Option]]]:
    """The options by group, in registry order."""
    seen: dict[str, list[Option]] = {}
    for option in OPTIONS:
        seen.setdefault(option.group, []).append(option)
    yield from seen.items()


def add_arguments(parser: Any) -> None:
    """Register every option on Locust's parser (`init_command_line_parser`), grouped as in --help."""
    for title, options in groups():
        group = parser.add_argument_group(f"{title} (loadlib)")
        for option in options:
            action = group.add_argument(option.flag, **option.kwargs())
            action.include_in_web_ui = option.web_ui  # argument groups do not take Locust's keywords
            action.is_secret = action.is_required = action.is_multiple = False
