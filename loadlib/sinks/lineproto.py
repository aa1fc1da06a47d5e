"""InfluxDB line protocol for the three measurements of docs/influxdb.md, built with f-strings (about 1 µs a
point; influxdb-client's Point costs 12-20 µs).

Every field has one fixed type (InfluxDB rejects a later write whose type differs, and InfluxDB 3 also rejects a tag
and a field sharing a name), missing values are omitted rather than written as another type, and nothing secret or
user-content-bearing is written: no prompts, no keys, no error bodies.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from loadlib.records.record import RequestRecord

REQUEST = "llm_request"
WORKER = "llm_worker"
EVENT = "llm_event"

# The fixed schema: measurement -> (tag keys, {field key: type}). Types: "float", "int", "str".
REQUEST_TAGS = ("endpoint", "model", "provider", "run_id", "scenario", "status", "worker")
REQUEST_FIELDS: dict[str, str] = {
    "ttfb_ms": "float",
    "first_event_ms": "float",
    "ttft_ms": "float",
    "ttfo_ms": "float",
    "e2e_ms": "float",
    "tpot_ms": "float",
    "itl_mean_ms": "float",
    "itl_max_ms": "float",
    "schedule_lag_ms": "float",
    "prompt_tokens": "int",
    "completion_tokens": "int",
    "prompt_tokens_est": "int",
    "completion_tokens_est": "int",
    "cached_prompt_tokens": "int",
    "reasoning_tokens": "int",
    "output_tokens": "int",
    "cost_usd": "float",
    "output_events": "int",
    "http_status": "int",
    "finish_reason": "str",
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
EVENT_TAGS = ("endpoint", "kind", "run_id")
EVENT_FIELDS: dict[str, str] = {"message": "str"}
SCHEMA: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    REQUEST: (REQUEST_TAGS, REQUEST_FIELDS),
    WORKER: (WORKER_TAGS, WORKER_FIELDS),
    EVENT: (EVENT_TAGS, EVENT_FIELDS),
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


_tag_cache: dict[tuple[str, ...], str] = {}
_TAG_CACHE_MAX = 4096


def _request_tags(values: tuple[str, ...]) -> str:
    """Escaped tag set of a request point, cached: tag values are bounded sets, so few distinct sets exist."""
    tags = _tag_cache.get(values)
    if tags is None:
        if len(_tag_cache) >= _TAG_CACHE_MAX:
            _tag_cache.clear()
        tags = _tags(zip(REQUEST_TAGS, values, strict=True))
        _tag_cache[values] = tags
    return tags


# Fields written in this order, each only when present: milliseconds as floats, token counts as integers.
_MS_FIELDS = ("ttfb_ms", "first_event_ms", "ttft_ms", "ttfo_ms", "e2e_ms", "tpot_ms")
_TOKEN_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "prompt_tokens_est",
    "completion_tokens_est",
    "cached_prompt_tokens",
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
    for name in _TOKEN_FIELDS:
        n = getattr(r, name)
        if n is not None:
            add(f"{name}={int(n)}i")
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


def event_line(run_id: str, kind: str, endpoint: str, message: str, ts_ns: int) -> str:
    """One `llm_event` point (test_start/stop, circuit state changes, failover, failback); annotations read these."""
    tags = _tags((("endpoint", endpoint), ("kind", kind), ("run_id", run_id)))
    return _line(EVENT, tags, f"message={quote_str(message or kind)}", ts_ns)
