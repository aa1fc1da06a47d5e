"""InfluxDB line protocol for the measurements of docs/influxdb.md, built with f-strings (about 1 µs a point;
influxdb-client's Point costs 12-20 µs).

Every field has one fixed type (InfluxDB rejects a later write whose type differs, and InfluxDB 3 also rejects a tag
and a field sharing a name), missing values are omitted rather than written as another type, and nothing secret or
user-content-bearing is written: no prompts, no keys, no error bodies.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from loadlib.records.record import TIMING_FIELDS, RequestRecord
from loadlib.records.user_request import UserRequest

REQUEST = "llm_request"
WORKER = "llm_worker"
EVENT = "llm_event"
BREAKER = "llm_breaker"
USER_REQUEST = "llm_user_request"
DRILL = "llm_drill"
INCIDENT = "llm_incident"
AMPLIFICATION = "llm_amplification"
CAPACITY_STEP = "llm_capacity_step"
SERVER = "llm_server"

# The fixed schema: measurement -> (tag keys, {field key: type}). Types: "float", "int", "str".
REQUEST_TAGS = ("endpoint", "model", "provider", "run_id", "scenario", "status", "worker")
REQUEST_FIELDS: dict[str, str] = {
    "ttfb_ms": "float",
    "first_event_ms": "float",
    "ttft_ms": "float",
    "ttfo_ms": "float",
    "e2e_ms": "float",
    "tpot_ms": "float",
    "stream_tpot_ms": "float",
    "stream_tail_ms": "float",
    "itl_mean_ms": "float",
    "itl_max_ms": "float",
    "schedule_lag_ms": "float",
    "stale_retry_ms": "float",
    "prompt_tokens": "int",
    "completion_tokens": "int",
    "prompt_tokens_est": "int",
    "completion_tokens_est": "int",
    "cached_prompt_tokens": "int",
    "cache_reported_prompt_tokens": "int",
    "cache_write_tokens": "int",
    "reasoning_tokens": "int",
    "output_tokens": "int",
    "cost_usd": "float",
    "output_events": "int",
    "http_status": "int",
    "finish_reason": "str",
    "usage_source": "str",
    "request_id": "str",
    "server_request_id": "str",
    "attempt": "int",
    "turn": "int",
}
WORKER_TAGS = ("run_id", "worker")
WORKER_FIELDS: dict[str, str] = {
    "users": "int",
    "cpu_percent": "float",
    "loop_lag_ms": "float",
    "sink_buffered": "int",
    "sink_dropped": "int",
}
EVENT_TAGS = ("endpoint", "kind", "run_id", "worker")
EVENT_FIELDS: dict[str, str] = {"message": "str"}
EVENT_KINDS = (
    "test_start",
    "test_stop",
    "circuit_open",
    "circuit_half_open",
    "circuit_closed",
    "failover",
    "failback",
    "hedge",
    "drill_start",
    "drill_stop",
    "worker_lost",
)
BREAKER_TAGS = ("endpoint", "run_id", "worker")
BREAKER_FIELDS: dict[str, str] = {"state": "int"}
BREAKER_CLOSED, BREAKER_HALF_OPEN, BREAKER_OPEN = 0, 1, 2  # the `state` values
USER_REQUEST_TAGS = ("endpoint", "preferred", "run_id", "scenario", "status", "worker")
USER_REQUEST_FIELDS: dict[str, str] = {"e2e_ms": "float", "ttft_ms": "float", "attempts": "int", "failed_over": "int"}
NO_ENDPOINT = "none"  # the `endpoint` tag of a user request no endpoint answered
DRILL_TAGS = ("drill", "endpoint", "fault", "run_id")
DRILL_FIELDS: dict[str, str] = {
    "detect_p50_s": "float",
    "detect_max_s": "float",
    "failover_p50_s": "float",
    "failover_max_s": "float",
    "failback_max_s": "float",
    "user_requests": "int",
    "user_errors": "int",
    "user_error_rate": "float",
    "passed": "int",
}
INCIDENT_TAGS = ("endpoint", "incident", "run_id")
INCIDENT_FIELDS: dict[str, str] = {
    **{k: v for k, v in DRILL_FIELDS.items() if k != "passed"},
    "duration_s": "float",
    "ongoing": "int",
}
AMPLIFICATION_TAGS = ("depth", "run_id", "scenario", "worker")
AMPLIFICATION_FIELDS: dict[str, str] = {
    f"{kind}_{name}": typ
    for kind in ("json", "plain")
    for name, typ in (("output_tokens", "int"), ("cost_usd", "float"), ("ttft_ms", "float"), ("e2e_ms", "float"))
}
CAPACITY_STEP_TAGS = ("run_id",)
CAPACITY_STEP_FIELDS: dict[str, str] = {
    "step": "int",
    "users": "int",
    "rate_per_s": "float",
    "window_s": "float",
    "requests": "int",
    "requests_per_s": "float",
    "output_tokens_per_s": "float",
    **{f"{m}_{q}_ms": "float" for m in ("ttft", "tpot", "e2e") for q in ("p50", "p95")},
    "errors": "int",
    "error_rate": "float",
    "goodput": "float",
    "client_saturated": "int",
    "passed": "int",
    "drain_s": "float",
    "drained": "int",
}
SERVER_TAGS = ("run_id", "source")
SERVER_FIELDS: dict[str, str] = {
    "waiting": "float",
    "running": "float",
    "kv_cache_usage": "float",
    "ttft_count": "int",
    "ttft_mean_ms": "float",
    "ttft_p95_ms": "float",
}
SCHEMA: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    REQUEST: (REQUEST_TAGS, REQUEST_FIELDS),
    WORKER: (WORKER_TAGS, WORKER_FIELDS),
    EVENT: (EVENT_TAGS, EVENT_FIELDS),
    BREAKER: (BREAKER_TAGS, BREAKER_FIELDS),
    USER_REQUEST: (USER_REQUEST_TAGS, USER_REQUEST_FIELDS),
    DRILL: (DRILL_TAGS, DRILL_FIELDS),
    INCIDENT: (INCIDENT_TAGS, INCIDENT_FIELDS),
    AMPLIFICATION: (AMPLIFICATION_TAGS, AMPLIFICATION_FIELDS),
    CAPACITY_STEP: (CAPACITY_STEP_TAGS, CAPACITY_STEP_FIELDS),
    SERVER: (SERVER_TAGS, SERVER_FIELDS),
}

MAX_STRING_FIELD = 1024  # event messages and ids are short; a runaway string must not bloat a batch

_TAG_TABLE = str.maketrans(
    {
        ",": "\\,",
        "=": "\\=",
        " ": "\\ ",
        # InfluxDB 1.x keeps "\\" verbatim and a trailing "\" breaks the line, so backslashes are replaced.
        "\\": "/",
        "\n": "\\ ",
        "\r": "\\ ",
        "\t": "\\ ",
    }
)
_STR_TABLE = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": " ", "\r": " "})


def escape_tag(value: str) -> str:
    """A tag value made safe for line protocol (tag values are bounded labels, never free text)."""
    return value.translate(_TAG_TABLE)


def quote_str(value: str) -> str:
    """A string field value, quoted and escaped, newlines flattened, cut at MAX_STRING_FIELD characters."""
    return '"' + value[:MAX_STRING_FIELD].translate(_STR_TABLE) + '"'


def _f(value: float | int | None) -> str | None:
    if value is None:
        return None
    v = float(value)
    return repr(v) if math.isfinite(v) else None


def _i(value: int | float | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return f"{int(value)}i"


def _tags(pairs: Iterable[tuple[str, str | None]]) -> str:
    """`,k=v` for each non-empty value, in the given (sorted) key order; empty tag values are not allowed."""
    return "".join(f",{k}={escape_tag(v)}" for k, v in pairs if v)


def _fields(pairs: Iterable[tuple[str, str | None]]) -> str:
    return ",".join(f"{k}={v}" for k, v in pairs if v is not None)


def _line(measurement: str, tags: str, fields: str, ts_ns: int | None) -> str:
    ts = f" {int(ts_ns)}" if ts_ns else ""
    return f"{measurement}{tags} {fields}{ts}"


_TAG_CACHE_MAX = 4096


class _TagCache:
    """Escaped tag sets of one measurement by their values, cached (and cleared when full): tag values are bounded
    sets, so few distinct sets exist, and a point is written per request."""

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = keys
        self.sets: dict[tuple[str, ...], str] = {}

    def __call__(self, values: tuple[str, ...]) -> str:
        tags = self.sets.get(values)
        if tags is None:
            if len(self.sets) >= _TAG_CACHE_MAX:
                self.sets.clear()
            tags = self.sets[values] = _tags(zip(self.keys, values, strict=True))
        return tags


_request_tags = _TagCache(REQUEST_TAGS)
_user_request_tags = _TagCache(USER_REQUEST_TAGS)


# Fields written in this order, each only when present: milliseconds as floats, token counts as integers.
_MS_FIELDS = TIMING_FIELDS
_TOKEN_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "prompt_tokens_est",
    "completion_tokens_est",
    "cached_prompt_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


def request_line(record: RequestRecord, run_id: str = "", worker: str = "") -> str:
    """One `llm_request` point for a request attempt, stamped with its start time (ns).

    `run_id`/`worker` fill in when the record's own are empty. `attempt` and `output_events` are always present,
    so every point has at least one field. Written out field by field: this runs once per request.
    """
    r = record
    tags = _request_tags(
        (
            r.endpoint,
            r.model,
            r.provider,
            r.run_id or run_id,
            r.scenario,
            r.status,  # an ErrorClass, which is a str
            r.worker_id or worker,
        )
    )
    out: list[str] = []
    add = out.append
    # ms values keep 3 decimals (1 µs); a finite check is `v - v == 0` (false for inf and nan)
    for name in _MS_FIELDS:
        v = getattr(r, name)
        if v is not None and v - v == 0:
            add(f"{name}={v:.3f}")
    itl = r.itl_ms
    if itl:
        mean, peak = sum(itl) / len(itl), max(itl)
        if mean - mean == 0 and peak - peak == 0:
            add(f"itl_mean_ms={mean:.3f},itl_max_ms={peak:.3f}")
    v = r.schedule_lag_ms
    if v is not None and v - v == 0:
        add(f"schedule_lag_ms={v:.3f}")
    v = r.stale_retry_ms
    if v is not None and v - v == 0:
        add(f"stale_retry_ms={v:.3f}")
    for name in _TOKEN_FIELDS:
        n = getattr(r, name)
        if n is not None:
            add(f"{name}={int(n)}i")
    whole = r.cache_reported_prompt_tokens
    if whole is not None:
        add(f"cache_reported_prompt_tokens={int(whole)}i")
    if r.output_tokens is not None:  # the server's count, else our estimate
        add(f"output_tokens={int(r.output_tokens)}i")
    v = r.cost_usd
    if v is not None and v - v == 0:
        add(f"cost_usd={float(v)!r}")
    add(f"output_events={int(r.output_events)}i")
    if r.http_status is not None:
        add(f"http_status={int(r.http_status)}i")
    if r.finish_reason is not None:
        add(f"finish_reason={quote_str(str(r.finish_reason))}")
    if r.usage_source is not None:
        add(f"usage_source={quote_str(r.usage_source)}")
    if r.request_id:
        add(f"request_id={quote_str(str(r.request_id))}")
    if r.server_request_id is not None:
        add(f"server_request_id={quote_str(str(r.server_request_id))}")
    add(f"attempt={int(r.attempt)}i")
    if r.turn is not None:
        add(f"turn={int(r.turn)}i")
    return _line(REQUEST, tags, ",".join(out), r.start_unix_ns)


def worker_line(
    run_id: str,
    worker: str,
    ts_ns: int,
    users: int | None,
    cpu_percent: float | None,
    loop_lag_ms: float | None,
    sink_buffered: int,
    sink_dropped: int,
) -> str:
    """One `llm_worker` health point; the sink's own buffered/dropped counts are always present."""
    tags = _tags((("run_id", run_id), ("worker", worker)))
    fields = _fields(
        (
            ("users", _i(users)),
            ("cpu_percent", _f(cpu_percent)),
            ("loop_lag_ms", _f(loop_lag_ms)),
            ("sink_buffered", _i(sink_buffered)),
            ("sink_dropped", _i(sink_dropped)),
        )
    )
    return _line(WORKER, tags, fields, ts_ns)


def event_line(run_id: str, kind: str, endpoint: str, message: str, ts_ns: int, worker: str = "") -> str:
    """One `llm_event` point (one of EVENT_KINDS); annotations read these. `worker` is the node that saw it (a worker
    id, "master" or "local"); an empty one writes no tag."""
    tags = _tags((("endpoint", endpoint), ("kind", kind), ("run_id", run_id), ("worker", worker)))
    return _line(EVENT, tags, f"message={quote_str(message or kind)}", ts_ns)


def breaker_line(run_id: str, worker: str, endpoint: str, state: int, ts_ns: int) -> str:
    """One `llm_breaker` point: the circuit state of `endpoint` on node `worker` (0 closed, 1 half open, 2 open)."""
    tags = _tags((("endpoint", endpoint), ("run_id", run_id), ("worker", worker)))
    return _line(BREAKER, tags, f"state={int(state)}i", ts_ns)


def user_request_line(user: UserRequest, run_id: str, worker: str) -> str:
    """One `llm_user_request` point: a request as its user saw it, from the first attempt's start to the final
    answer, over one or more attempts or a hedge, written for node `worker` of run `run_id`. Its endpoint is the one
    that answered (NO_ENDPOINT when none did), `preferred` the one the policy chose first; `failed_over` is written as
    0/1 so `sum()` counts failovers.
    """
    values = (user.endpoint or NO_ENDPOINT, user.preferred, run_id, user.scenario, str(user.status), worker)
    e2e_ms, ttft_ms = user.e2e_ms, user.ttft_ms
    out: list[str] = []
    if e2e_ms is not None and e2e_ms - e2e_ms == 0:
        out.append(f"e2e_ms={float(e2e_ms):.3f}")
    if ttft_ms is not None and ttft_ms - ttft_ms == 0:
        out.append(f"ttft_ms={float(ttft_ms):.3f}")
    out.append(f"attempts={int(user.attempts)}i,failed_over={1 if user.failed_over else 0}i")
    return _line(USER_REQUEST, _user_request_tags(values), ",".join(out), user.start_unix_ns)


def drill_line(run_id: str, index: int | str, endpoint: str, fault: str, figures: Mapping[str, Any], ts_ns: int) -> str:
    """One `llm_drill` point with a drill's final figures, written once by the master.

    `figures` has `detect_s`, `failover_s`, `failback_s` (each {"p50", "max"} in seconds, or None), `user_requests`,
    `user_errors`, `user_error_rate` and `passed`; missing or None values are omitted, `passed` is written as 1/0.
    `user_requests` is always written (0 when missing), so every point has a field.
    """
    passed = figures.get("passed")
    tags = _tags((("drill", str(index)), ("endpoint", endpoint), ("fault", fault), ("run_id", run_id)))
    fields = _outage_fields(figures, ("passed", None if passed is None else _i(1 if passed else 0)))
    return _line(DRILL, tags, fields, ts_ns)


def incident_line(run_id: str, figures: Mapping[str, Any], ts_ns: int) -> str:
    """One `llm_incident` point with an incident's figures (docs/failover.md, "Incidents"), written by the master at
    test stop: the drill's fields but `passed`, and `duration_s` and `ongoing` (1/0)."""
    tags = _tags(
        (("endpoint", str(figures.get("endpoint"))), ("incident", str(figures.get("index"))), ("run_id", run_id))
    )
    fields = _outage_fields(
        figures, ("duration_s", _f(figures.get("duration_s"))), ("ongoing", _i(1 if figures.get("ongoing") else 0))
    )
    return _line(INCIDENT, tags, fields, ts_ns)


def _outage_fields(figures: Mapping[str, Any], *more: tuple[str, str | None]) -> str:
    """The times and user-visible counts a drill and an incident share, then `more`."""

    def stat(key: str, which: str) -> str | None:
        figure = figures.get(key)
        return _f(figure.get(which)) if isinstance(figure, Mapping) else None

    return _fields(
        (
            ("detect_p50_s", stat("detect_s", "p50")),
            ("detect_max_s", stat("detect_s", "max")),
            ("failover_p50_s", stat("failover_s", "p50")),
            ("failover_max_s", stat("failover_s", "max")),
            ("failback_max_s", stat("failback_s", "max")),
            ("user_requests", _i(figures.get("user_requests") or 0)),
            ("user_errors", _i(figures.get("user_errors"))),
            ("user_error_rate", _f(figures.get("user_error_rate"))),
            *more,
        )
    )


def amplification_line(run_id: str, worker: str, depth: int, structured: RequestRecord, plain: RequestRecord) -> str:
    """One `llm_amplification` point: a compliance case answered as JSON and as prose, at the JSON request's start,
    so a dashboard divides the sums of the two (the summary's `scenarios.compliance.amplification`)."""
    tags = _tags((("depth", str(depth)), ("run_id", run_id), ("scenario", structured.scenario), ("worker", worker)))
    fields = []
    for kind, r in (("json", structured), ("plain", plain)):
        fields += [
            (f"{kind}_output_tokens", _i(r.completion_tokens)),
            (f"{kind}_cost_usd", _f(r.cost_usd)),
            (f"{kind}_ttft_ms", _f(r.ttft_ms)),
            (f"{kind}_e2e_ms", _f(r.e2e_ms)),
        ]
    return _line(AMPLIFICATION, tags, _fields(fields), structured.start_unix_ns or None)


def capacity_step_line(run_id: str, row: Mapping[str, Any], ts_ns: int) -> str:
    """One `llm_capacity_step` point: a decided step of the capacity search (a row of the summary's
    `capacity.steps`), written once by the master; `passed` and `client_saturated` as 1/0 so a panel can sum them."""
    fields: list[tuple[str, str | None]] = [
        ("step", _i(row.get("step"))),
        ("users", _i(row.get("users"))),
        ("rate_per_s", _f(row.get("rate_per_s"))),
        ("window_s", _f(row.get("window_s"))),
        ("requests", _i(row.get("requests") or 0)),
        ("requests_per_s", _f(row.get("requests_per_s"))),
        ("output_tokens_per_s", _f(row.get("output_tokens_per_s"))),
    ]
    for metric in ("ttft", "tpot", "e2e"):
        pair = row.get(f"{metric}_ms") or {}
        fields += [(f"{metric}_{q}_ms", _f(pair.get(q))) for q in ("p50", "p95")]
    fields += [
        ("errors", _i(row.get("errors"))),
        ("error_rate", _f(row.get("error_rate"))),
        ("goodput", _f(row.get("goodput"))),
        ("client_saturated", _i(1 if row.get("client_saturated") else 0)),
        ("passed", _i(1 if row.get("passed") else 0)),
        ("drain_s", _f(row.get("drain_s"))),
        ("drained", _i(None if row.get("drained") is None else int(bool(row["drained"])))),
    ]
    return _line(CAPACITY_STEP, _tags((("run_id", run_id),)), _fields(fields), ts_ns)


def server_line(
    run_id: str, source: str, gauges: Mapping[str, float | None], ttft: Mapping[str, Any], ts_ns: int
) -> str:
    """One `llm_server` point: a scrape of the server's Prometheus endpoint (`source` the server whose names it
    spoke): its gauges, and the TTFT of the requests it counted since the previous scrape. `ttft_count` is always
    written (0 without a histogram), so every point has a field."""
    fields = (
        ("waiting", _f(gauges.get("waiting"))),
        ("running", _f(gauges.get("running"))),
        ("kv_cache_usage", _f(gauges.get("kv_cache"))),
        ("ttft_count", _i(ttft.get("count") or 0)),
        ("ttft_mean_ms", _f(ttft.get("mean_ms"))),
        ("ttft_p95_ms", _f(ttft.get("p95_ms"))),
    )
    return _line(SERVER, _tags((("run_id", run_id), ("source", source))), _fields(fields), ts_ns)
