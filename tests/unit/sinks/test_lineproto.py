"""Line protocol of the three measurements: fixed field types, omitted missing values, escaping, nothing secret."""

from __future__ import annotations

import math
import re

import pytest

from loadlib.errors import ErrorClass
from loadlib.records.record import RequestRecord
from loadlib.sinks import lineproto as lp
from tests.support.records import make_record, make_user_request

TS = 1_764_400_000_123_456_789


def parse_line(line: str) -> tuple[str, dict[str, str], dict[str, tuple[str, object]], int | None]:
    """A strict little line-protocol parser: (measurement, tags, {field: (type, value)}, timestamp)."""
    assert "\n" not in line

    def split_unescaped(text: str, sep: str, *, quotes: bool = False) -> list[str]:
        parts, cur, i, in_q = [], [], 0, False
        while i < len(text):
            ch = text[i]
            if ch == "\\" and i + 1 < len(text):
                cur.append(text[i : i + 2])
                i += 2
                continue
            if quotes and ch == '"':
                in_q = not in_q
            if ch == sep and not in_q:
                parts.append("".join(cur))
                cur = []
            else:
                cur.append(ch)
            i += 1
        parts.append("".join(cur))
        return parts

    sections = split_unescaped(line, " ", quotes=True)
    assert len(sections) in (2, 3), sections
    head = split_unescaped(sections[0], ",")
    measurement, tags = head[0], {}
    for item in head[1:]:
        key, value = split_unescaped(item, "=")
        assert value, f"empty tag value in {line!r}"
        tags[key] = re.sub(r"\\(.)", r"\1", value)
    fields: dict[str, tuple[str, object]] = {}
    for item in split_unescaped(sections[1], ",", quotes=True):
        key, _, raw = item.partition("=")
        if raw.startswith('"'):
            assert raw.endswith('"') and len(raw) >= 2
            fields[key] = ("str", re.sub(r"\\(.)", r"\1", raw[1:-1]))
        elif raw.endswith("i"):
            fields[key] = ("int", int(raw[:-1]))
        else:
            fields[key] = ("float", float(raw))
    ts = int(sections[2]) if len(sections) == 3 else None
    return measurement, tags, fields, ts


def full_record(**overrides: object) -> RequestRecord:
    values: dict[str, object] = {
        "run_id": "20261129-110501-ab12",
        "scenario": "chat",
        "endpoint": "primary",
        "provider": "openai",
        "model": "gpt-4o-mini",
        "worker_id": "host_1a2b",
        "request_id": "req-1",
        "server_request_id": "chatcmpl-9",
        "attempt": 2,
        "turn": 3,
        "start_unix_ns": TS,
        "ttfb_ms": 12.5,
        "first_event_ms": 14.0,
        "ttft_ms": 20.25,
        "ttfo_ms": 21.0,
        "e2e_ms": 812.125,
        "itl_ms": (1.0, 2.0, 6.0),
        "tpot_ms": 7.5,
        "output_events": 40,
        "schedule_lag_ms": 0.5,
        "stale_retry_ms": 0.25,
        "prompt_tokens": 120,
        "completion_tokens": 41,
        "prompt_tokens_est": 118,
        "completion_tokens_est": 40,
        "cached_prompt_tokens": 64,
        "cache_write_tokens": 32,
        "reasoning_tokens": 7,
        "cost_usd": 0.000123,
        "status": ErrorClass.OK,
        "http_status": 200,
        "finish_reason": "stop",
        "error_message": "SECRET-PROMPT-TEXT",
        "ratelimit": {"x-ratelimit-remaining-requests": "99"},
    }
    values.update(overrides)
    return make_record(**values)


def test_full_request_point_has_every_value_with_its_fixed_type() -> None:
    m, tags, fields, ts = parse_line(lp.request_line(full_record()))
    assert m == "llm_request"
    assert tags == {
        "endpoint": "primary",
        "model": "gpt-4o-mini",
        "provider": "openai",
        "run_id": "20261129-110501-ab12",
        "scenario": "chat",
        "status": "ok",
        "worker": "host_1a2b",
    }
    assert ts == TS
    expected = {
        "ttfb_ms": 12.5,
        "first_event_ms": 14.0,
        "ttft_ms": 20.25,
        "ttfo_ms": 21.0,
        "e2e_ms": 812.125,
        "tpot_ms": 7.5,
        "itl_mean_ms": 3.0,
        "itl_max_ms": 6.0,
        "schedule_lag_ms": 0.5,
        "stale_retry_ms": 0.25,
        "prompt_tokens": 120,
        "completion_tokens": 41,
        "prompt_tokens_est": 118,
        "completion_tokens_est": 40,
        "cached_prompt_tokens": 64,
        "cache_reported_prompt_tokens": 120,  # the whole prompt, whatever the provider
        "cache_write_tokens": 32,
        "reasoning_tokens": 7,
        "output_tokens": 41,
        "cost_usd": 0.000123,
        "output_events": 40,
        "http_status": 200,
        "finish_reason": "stop",
        "request_id": "req-1",
        "server_request_id": "chatcmpl-9",
        "attempt": 2,
        "turn": 3,
    }
    assert set(fields) == set(expected)
    for key, value in expected.items():
        kind, got = fields[key]
        assert kind == lp.REQUEST_FIELDS[key], key
        assert got == pytest.approx(value) if kind == "float" else got == value, key


def test_missing_values_are_omitted_never_written_as_another_type() -> None:
    rec = make_record(scenario="s", endpoint="e", provider="p", model="m", request_id="id", start_unix_ns=TS)
    _, _, fields, _ = parse_line(lp.request_line(rec))
    assert set(fields) == {"output_events", "attempt", "request_id"}
    assert fields["output_events"] == ("int", 0)
    assert fields["attempt"] == ("int", 1)


def test_types_do_not_follow_the_python_value() -> None:
    """An int where a float belongs is still written as a float, and vice versa: a field never changes type."""
    rec = full_record(e2e_ms=800, ttft_ms=20, cost_usd=0, prompt_tokens=12.0, http_status=200.0)
    _, _, fields, _ = parse_line(lp.request_line(rec))
    assert fields["e2e_ms"] == ("float", 800.0)
    assert fields["ttft_ms"][0] == "float"
    assert fields["cost_usd"] == ("float", 0.0)
    assert fields["prompt_tokens"] == ("int", 12)
    assert fields["http_status"] == ("int", 200)


def test_non_finite_floats_are_omitted() -> None:
    rec = full_record(ttft_ms=math.nan, e2e_ms=math.inf, cost_usd=-math.inf, itl_ms=(1.0, math.nan))
    _, _, fields, _ = parse_line(lp.request_line(rec))
    assert not {"ttft_ms", "e2e_ms", "cost_usd", "itl_mean_ms", "itl_max_ms"} & set(fields)
    assert "ttfb_ms" in fields


def test_output_tokens_fall_back_to_the_estimate() -> None:
    _, _, fields, _ = parse_line(lp.request_line(full_record(completion_tokens=None, completion_tokens_est=33)))
    assert fields["output_tokens"] == ("int", 33)
    assert "completion_tokens" not in fields


def test_nothing_secret_or_user_content_bearing_is_written() -> None:
    line = lp.request_line(full_record())
    assert "SECRET-PROMPT-TEXT" not in line
    assert "ratelimit" not in line and "x-ratelimit" not in line


def test_error_status_is_the_error_class_value() -> None:
    _, tags, _, _ = parse_line(lp.request_line(full_record(status=ErrorClass.RATE_LIMITED, http_status=429)))
    assert tags["status"] == "rate_limited"


def test_empty_tags_are_omitted_and_defaults_fill_in() -> None:
    rec = full_record(run_id="", worker_id="", model="")
    _, tags, _, _ = parse_line(lp.request_line(rec))
    assert "run_id" not in tags and "worker" not in tags and "model" not in tags
    _, tags, _, _ = parse_line(lp.request_line(rec, run_id="run-9", worker="w-3"))
    assert tags["run_id"] == "run-9" and tags["worker"] == "w-3"


@pytest.mark.parametrize(
    ("raw", "stored"),
    [
        ("a,b c=d", "a,b c=d"),
        ("back\\slash", "back/slash"),
        ("trailing\\", "trailing/"),
        ("new\nline\ttab", "new line tab"),
        ("café", "café"),
    ],
)
def test_tag_values_are_escaped(raw: str, stored: str) -> None:
    _, tags, _, _ = parse_line(lp.request_line(full_record(scenario=raw)))
    assert tags["scenario"] == stored


def test_string_fields_are_quoted_escaped_and_bounded() -> None:
    line = lp.event_line("r", "failover", "primary", 'he said "hi" \\ bye\nnext', TS)
    _, tags, fields, ts = parse_line(line)
    assert fields == {"message": ("str", 'he said "hi" \\ bye next')}
    assert tags == {"endpoint": "primary", "kind": "failover", "run_id": "r"}
    assert ts == TS
    _, _, fields, _ = parse_line(lp.event_line("r", "failover", "e", "x" * 5000, TS))
    assert len(fields["message"][1]) == lp.MAX_STRING_FIELD  # type: ignore[arg-type]


def test_worker_point() -> None:
    m, tags, fields, ts = parse_line(lp.worker_line("r", "host_1", TS, 12, 55.5, 3.25, 7, 2))
    assert m == "llm_worker"
    assert tags == {"run_id": "r", "worker": "host_1"}
    assert fields == {
        "users": ("int", 12),
        "cpu_percent": ("float", 55.5),
        "loop_lag_ms": ("float", 3.25),
        "sink_buffered": ("int", 7),
        "sink_dropped": ("int", 2),
    }
    assert ts == TS
    _, _, fields, _ = parse_line(lp.worker_line("r", "w", TS, None, None, None, 0, 0))
    assert set(fields) == {"sink_buffered", "sink_dropped"}


def test_event_point_without_endpoint_and_message() -> None:
    m, tags, fields, _ = parse_line(lp.event_line("r", "test_start", "", "", TS))
    assert m == "llm_event"
    assert tags == {"kind": "test_start", "run_id": "r"}
    assert fields == {"message": ("str", "test_start")}


def test_no_timestamp_when_unknown() -> None:
    _, _, _, ts = parse_line(lp.request_line(full_record(start_unix_ns=0)))
    assert ts is None


def test_schema_has_no_tag_field_name_clash_and_known_types() -> None:
    for tags, fields in lp.SCHEMA.values():
        assert not set(tags) & set(fields)
        assert list(tags) == sorted(tags)
        assert set(fields.values()) <= {"float", "int", "str"}
    assert "request_id" not in lp.REQUEST_TAGS and "server_request_id" not in lp.REQUEST_TAGS


def test_every_written_field_matches_the_schema_type() -> None:
    variants = [
        full_record(),
        full_record(status=ErrorClass.TIMEOUT_TTFT, ttft_ms=None, ttfo_ms=None, itl_ms=(), http_status=None),
        full_record(turn=None, finish_reason=None, server_request_id=None, cost_usd=None),
    ]
    for rec in variants:
        _, tags, fields, _ = parse_line(lp.request_line(rec))
        assert set(tags) <= set(lp.REQUEST_TAGS)
        for key, (kind, _) in fields.items():
            assert lp.REQUEST_FIELDS[key] == kind, key


# ---- failover measurements --------------------------------------------------------------------------------------


def assert_schema_types(measurement: str, tags: dict[str, str], fields: dict[str, tuple[str, object]]) -> None:
    schema_tags, schema_fields = lp.SCHEMA[measurement]
    assert set(tags) <= set(schema_tags)
    for key, (kind, _) in fields.items():
        assert schema_fields[key] == kind, key


def test_event_point_carries_the_node_that_saw_it() -> None:
    m, tags, fields, ts = parse_line(lp.event_line("r", "circuit_open", "primary", "5 failures", TS, worker="host_1"))
    assert m == "llm_event"
    assert tags == {"endpoint": "primary", "kind": "circuit_open", "run_id": "r", "worker": "host_1"}
    assert fields == {"message": ("str", "5 failures")} and ts == TS
    _, tags, _, _ = parse_line(lp.event_line("r", "drill_start", "primary", "", TS, "master"))
    assert tags["worker"] == "master"
    assert {"drill_start", "hedge", "worker_lost"} <= set(lp.EVENT_KINDS) and len(set(lp.EVENT_KINDS)) == 11


@pytest.mark.parametrize("state", [lp.BREAKER_CLOSED, lp.BREAKER_HALF_OPEN, lp.BREAKER_OPEN])
def test_breaker_point(state: int) -> None:
    m, tags, fields, ts = parse_line(lp.breaker_line("r", "host_1", "primary", state, TS))
    assert m == "llm_breaker"
    assert tags == {"endpoint": "primary", "run_id": "r", "worker": "host_1"}
    assert fields == {"state": ("int", state)} and ts == TS
    assert (lp.BREAKER_CLOSED, lp.BREAKER_HALF_OPEN, lp.BREAKER_OPEN) == (0, 1, 2)


def test_breaker_state_is_always_an_int() -> None:
    _, _, fields, _ = parse_line(lp.breaker_line("r", "w", "e", 2.0, TS))  # type: ignore[arg-type]
    assert fields == {"state": ("int", 2)}


def test_user_request_point() -> None:
    user = make_user_request(endpoint="backup", e2e_ms=812.1256, ttft_ms=40.5, attempts=2, start_unix_ns=TS)
    line = lp.user_request_line(user, "r", "host_1")
    m, tags, fields, ts = parse_line(line)
    assert m == "llm_user_request"
    assert tags == {
        "endpoint": "backup",
        "preferred": "primary",
        "run_id": "r",
        "scenario": "chat",
        "status": "ok",
        "worker": "host_1",
    }
    assert fields == {
        "e2e_ms": ("float", 812.126),
        "ttft_ms": ("float", 40.5),
        "attempts": ("int", 2),
        "failed_over": ("int", 1),
    }
    assert ts == TS
    assert_schema_types(m, tags, fields)


def test_user_request_that_no_endpoint_answered() -> None:
    failed = {"status": ErrorClass.HTTP_5XX, "e2e_ms": 120, "ttft_ms": None, "attempts": 3, "start_unix_ns": TS}
    line = lp.user_request_line(make_user_request(endpoint="", **failed), "r", "w")
    _, tags, fields, _ = parse_line(line)
    assert tags["endpoint"] == lp.NO_ENDPOINT == "none" and tags["status"] == "http_5xx"
    assert fields == {"e2e_ms": ("float", 120.0), "attempts": ("int", 3), "failed_over": ("int", 0)}
    line = lp.user_request_line(make_user_request(endpoint=None, status=ErrorClass.CONNECT_ERROR), "r", "w")
    assert parse_line(line)[1]["endpoint"] == "none"


def test_user_request_types_never_follow_the_python_value() -> None:
    user = make_user_request(e2e_ms=math.nan, ttft_ms=math.inf, attempts=1.0, endpoint="e", preferred="p")
    line = lp.user_request_line(user, "r", "w")
    _, _, fields, _ = parse_line(line)
    assert fields == {"attempts": ("int", 1), "failed_over": ("int", 1)}


def test_user_request_tags_are_escaped() -> None:
    line = lp.user_request_line(make_user_request(scenario="a,b c=d", endpoint="back\\up"), "r", "w")
    _, tags, _, _ = parse_line(line)
    assert tags["scenario"] == "a,b c=d" and tags["endpoint"] == "back/up"


FIGURES = {
    "detect_s": {"p50": 1.5, "max": 2.25},
    "failover_s": {"p50": 1.75, "max": 3.0},
    "failback_s": {"p50": 4.0, "max": 6.5},
    "user_requests": 480,
    "user_errors": 3,
    "user_error_rate": 0.00625,
    "passed": True,
}


def test_drill_point() -> None:
    m, tags, fields, ts = parse_line(lp.drill_line("r", 0, "primary", "http_503", FIGURES, TS))
    assert m == "llm_drill"
    assert tags == {"drill": "0", "endpoint": "primary", "fault": "http_503", "run_id": "r"}
    assert fields == {
        "detect_p50_s": ("float", 1.5),
        "detect_max_s": ("float", 2.25),
        "failover_p50_s": ("float", 1.75),
        "failover_max_s": ("float", 3.0),
        "failback_max_s": ("float", 6.5),
        "user_requests": ("int", 480),
        "user_errors": ("int", 3),
        "user_error_rate": ("float", 0.00625),
        "passed": ("int", 1),
    }
    assert ts == TS
    assert set(fields) == set(lp.DRILL_FIELDS)
    assert_schema_types(m, tags, fields)


def test_drill_figures_that_are_missing_are_omitted() -> None:
    figures = {
        "detect_s": {"p50": 2, "max": None},
        "failover_s": None,
        "failback_s": {"p50": None, "max": math.nan},
        "user_requests": 0,
        "user_errors": 0,
        "user_error_rate": None,
        "passed": False,
    }
    _, tags, fields, _ = parse_line(lp.drill_line("r", 3, "backup", "", figures, TS))
    assert tags == {"drill": "3", "endpoint": "backup", "run_id": "r"}
    assert fields == {
        "detect_p50_s": ("float", 2.0),
        "user_requests": ("int", 0),
        "user_errors": ("int", 0),
        "passed": ("int", 0),
    }
    _, _, fields, _ = parse_line(lp.drill_line("r", 1, "e", "f", {}, TS))
    assert fields == {"user_requests": ("int", 0)}


def test_incident_point() -> None:
    figures = {**FIGURES, "index": 2, "endpoint": "primary", "duration_s": 4.5, "ongoing": False}
    del figures["passed"]
    m, tags, fields, ts = parse_line(lp.incident_line("r", figures, TS))
    assert (m, ts) == ("llm_incident", TS)
    assert tags == {"endpoint": "primary", "incident": "2", "run_id": "r"}
    assert fields["duration_s"] == ("float", 4.5) and fields["ongoing"] == ("int", 0)
    assert fields["detect_max_s"] == ("float", 2.25) and fields["user_errors"] == ("int", 3)
    assert set(fields) == set(lp.INCIDENT_FIELDS)
    assert_schema_types(m, tags, fields)
    _, _, fields, _ = parse_line(lp.incident_line("r", {"index": 1, "endpoint": "e", "ongoing": True}, TS))
    assert fields == {"user_requests": ("int", 0), "ongoing": ("int", 1)}


def test_amplification_point() -> None:
    structured = make_record(completion_tokens=211, cost_usd=0.002, ttft_ms=60.0, e2e_ms=300.0, start_unix_ns=TS)
    plain = make_record(completion_tokens=100, cost_usd=None, ttft_ms=50.0, e2e_ms=150.0)
    m, tags, fields, ts = parse_line(lp.amplification_line("r", "w1", 3, structured, plain))
    assert m == "llm_amplification" and ts == TS
    assert tags == {"depth": "3", "run_id": "r", "scenario": structured.scenario, "worker": "w1"}
    assert fields["json_output_tokens"] == ("int", 211) and fields["plain_output_tokens"] == ("int", 100)
    assert fields["json_e2e_ms"] == ("float", 300.0) and "plain_cost_usd" not in fields
    assert_schema_types(m, tags, fields)


def test_the_hit_rate_weighs_the_whole_prompt_of_every_provider() -> None:
    """The record's prompt is the whole one for Anthropic too (its input_tokens + cache read + cache write)."""
    rec = make_record(provider="anthropic", prompt_tokens=910, cached_prompt_tokens=900, start_unix_ns=TS)
    _, _, fields, _ = parse_line(lp.request_line(rec))
    assert fields["cache_reported_prompt_tokens"] == ("int", 910) and fields["prompt_tokens"] == ("int", 910)
    _, _, fields, _ = parse_line(lp.request_line(make_record(prompt_tokens=10, start_unix_ns=TS)))
    assert "cache_reported_prompt_tokens" not in fields, "no cached count reported: no hit rate to weigh"


# ---- capacity steps and server scrapes ---------------------------------------------------------------------------


def test_capacity_step_point_has_every_figure_of_the_step() -> None:
    row = {
        "step": 3,
        "users": 16,
        "window_s": 4.25,
        "requests": 212,
        "requests_per_s": 49.9,
        "output_tokens_per_s": 199.5,
        "ttft_ms": {"p50": 210.0, "p95": 640.5},
        "tpot_ms": {"p50": 3.0, "p95": None},
        "e2e_ms": {"p50": 230.0, "p95": 700},
        "errors": 2,
        "error_rate": 2 / 212,
        "goodput": None,
        "client_saturated": False,
        "passed": False,
    }
    m, tags, fields, ts = parse_line(lp.capacity_step_line("r", row, TS))
    assert (m, tags, ts) == ("llm_capacity_step", {"run_id": "r"}, TS)
    assert_schema_types(m, tags, fields)
    assert fields["users"] == ("int", 16) and fields["ttft_p95_ms"] == ("float", 640.5)
    assert fields["e2e_p95_ms"] == ("float", 700.0) and fields["passed"] == ("int", 0)
    assert "tpot_p95_ms" not in fields and "goodput" not in fields and "rate_per_s" not in fields
    assert "drain_s" not in fields and "drained" not in fields, "no drain before the step"
    _, _, fields, _ = parse_line(lp.capacity_step_line("r", row | {"drain_s": 2.0, "drained": False}, TS))
    assert_schema_types(m, tags, fields)
    assert fields["drain_s"] == ("float", 2.0) and fields["drained"] == ("int", 0)


def test_server_point() -> None:
    ttft = {"count": 4, "mean_ms": 45.0, "p95_ms": 88.5}
    m, tags, fields, ts = parse_line(
        lp.server_line("r", "vllm", {"waiting": 3, "running": 8, "kv_cache": None}, ttft, TS)
    )
    assert (m, tags, ts) == ("llm_server", {"run_id": "r", "source": "vllm"}, TS)
    assert_schema_types(m, tags, fields)
    assert fields == {
        "waiting": ("float", 3.0),
        "running": ("float", 8.0),
        "ttft_count": ("int", 4),
        "ttft_mean_ms": ("float", 45.0),
        "ttft_p95_ms": ("float", 88.5),
    }
    _, _, fields, _ = parse_line(lp.server_line("r", "tgi", {"waiting": 1}, {"count": None}, TS))
    assert fields == {"waiting": ("float", 1.0), "ttft_count": ("int", 0)}
