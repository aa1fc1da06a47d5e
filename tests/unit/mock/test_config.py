"""Mock settings: per-request override parsing (header and model suffix), CLI flags, and the request plan."""

from __future__ import annotations

import random

import pytest

from loadlib.errors import ConfigError
from loadlib.mock.cli import build_parser
from loadlib.mock.httpwire import HttpError, parse_head
from loadlib.mock.plan import make_plan
from loadlib.mockapi.config import KEYS, MockConfig, MockConfigError, parse_overrides, resolve, split_model


def test_parse_overrides_types() -> None:
    got = parse_overrides("ttft_ms=200, itl_ms=7.5,output_tokens=3,usage=FINISH,fault=drop,fault_rate=0.25")
    assert got == {
        "ttft_ms": 200.0,
        "itl_ms": 7.5,
        "output_tokens": 3,
        "usage": "finish",
        "fault": "drop",
        "fault_rate": 0.25,
    }
    assert isinstance(got["output_tokens"], int)
    assert isinstance(got["ttft_ms"], float)


def test_parse_overrides_accepts_dashes_and_ignores_empty_items() -> None:
    assert parse_overrides("ttft-ms=1,,") == {"ttft_ms": 1.0}
    assert parse_overrides("") == {}


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("bogus=1", "unknown key 'bogus'"),
        ("ttft_ms", "is not key=value"),
        ("ttft_ms=fast", "ttft_ms must be a number"),
        ("output_tokens=2.5", "output_tokens must be an integer"),
        ("ttft_ms=-1", "ttft_ms must be >= 0"),
        ("tokens_per_event=0", "tokens_per_event must be >= 1"),
        ("fault_rate=1.5", "fault_rate must be >= 0 and <= 1"),
        ("fault=explode", "fault must be one of"),
        ("usage=sometimes", "usage must be one of"),
        ("itl_ms=nan", "itl_ms must be >= 0"),
    ],
)
def test_parse_overrides_errors(spec: str, fragment: str) -> None:
    with pytest.raises(MockConfigError) as info:
        parse_overrides(spec)
    assert fragment in str(info.value)
    assert str(info.value).startswith("x-mock: ")
    assert isinstance(info.value, ConfigError)


def test_unknown_key_message_lists_known_keys() -> None:
    with pytest.raises(MockConfigError) as info:
        parse_overrides("ttft=5")
    for key in KEYS:
        assert key in str(info.value)


def test_split_model() -> None:
    assert split_model("gpt-4o") == ("gpt-4o", None)
    assert split_model("gpt-4o::ttft_ms=5") == ("gpt-4o", "ttft_ms=5")
    assert split_model("org/model:v1::fault=drop") == ("org/model:v1", "fault=drop")


def test_resolve_precedence_defaults_then_model_then_header() -> None:
    base = MockConfig(ttft_ms=50, itl_ms=10, output_tokens=64)
    cfg, model = resolve(base, "itl_ms=3", "gpt-4o::ttft_ms=5,itl_ms=4")
    assert model == "gpt-4o"
    assert (cfg.ttft_ms, cfg.itl_ms, cfg.output_tokens) == (5.0, 3.0, 64)
    assert resolve(base, None, "m") == (base, "m")


def test_resolve_names_the_source_of_a_bad_key() -> None:
    with pytest.raises(MockConfigError, match="model suffix: unknown key 'nope'"):
        resolve(MockConfig(), None, "m::nope=1")
    with pytest.raises(MockConfigError, match="x-mock: unknown key 'nope'"):
        resolve(MockConfig(), "nope=1", "m")


def test_effective_fault_rate() -> None:
    assert MockConfig().effective_fault_rate == 0.0
    assert MockConfig(fault="drop").effective_fault_rate == 1.0
    assert MockConfig(fault="drop", fault_rate=0.3).effective_fault_rate == 0.3


def test_to_args_round_trips_through_the_cli_parser() -> None:
    cfg = MockConfig(ttft_ms=200, itl_ms=2.5, output_tokens=9, usage="finish", fault="stall", fault_rate=0.5)
    args = build_parser().parse_args(cfg.to_args())
    assert MockConfig(**{k: getattr(args, k) for k in KEYS}) == cfg
    assert MockConfig().to_args() == []


def test_cli_rejects_bad_values_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["--fault", "explode"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert "fault must be one of" in err


# plan


def test_plan_defaults_without_jitter_are_exact() -> None:
    plan = make_plan(MockConfig(ttft_ms=100, itl_ms=10, output_tokens=4), None, random.Random(0))
    assert plan.offsets_ms == (100.0, 110.0, 120.0, 130.0)
    assert plan.end_ms == 130.0
    assert plan.itl_ms == (10.0, 10.0, 10.0)
    assert (plan.fault, plan.finish_reason, plan.output_tokens, plan.fault_event) == ("none", "stop", 4, -1)


def test_plan_caps_at_max_tokens() -> None:
    plan = make_plan(MockConfig(output_tokens=64), 5, random.Random(0))
    assert (plan.output_tokens, plan.finish_reason, plan.events) == (5, "length", 5)
    plan = make_plan(MockConfig(output_tokens=4), 5, random.Random(0))
    assert (plan.output_tokens, plan.finish_reason) == (4, "stop")


def test_plan_tokens_per_event_groups_tokens() -> None:
    plan = make_plan(MockConfig(ttft_ms=0, itl_ms=1, output_tokens=7, tokens_per_event=3), None, random.Random(0))
    assert plan.events == 3
    assert [plan.event_tokens(i) for i in range(3)] == [3, 3, 1]
    assert plan.tokens_before(2) == 6 and plan.tokens_before(3) == 7


def test_plan_stall_shifts_later_events() -> None:
    cfg = MockConfig(ttft_ms=10, itl_ms=1, output_tokens=5, fault="stall", fault_at=2, stall_ms=100)
    plan = make_plan(cfg, None, random.Random(0))
    assert plan.offsets_ms == (10.0, 11.0, 112.0, 113.0, 114.0)
    assert plan.fault_event == 2
    assert plan.end_ms == 114.0


def test_plan_hang_headers_delays_everything() -> None:
    cfg = MockConfig(ttft_ms=10, itl_ms=1, output_tokens=2, fault="hang_headers", stall_ms=50)
    plan = make_plan(cfg, None, random.Random(0))
    assert plan.start_ms == 50.0
    assert plan.offsets_ms == (60.0, 61.0)


def test_plan_empty_has_no_events() -> None:
    plan = make_plan(MockConfig(ttft_ms=10, output_tokens=9, fault="empty"), None, random.Random(0))
    assert (plan.events, plan.output_tokens, plan.end_ms, plan.ttft_ms) == (0, 0, 10.0, 10.0)


def test_plan_fault_event_rounds_up_to_whole_events_and_caps() -> None:
    cfg = MockConfig(output_tokens=10, tokens_per_event=4, fault="drop", fault_at=5)
    assert make_plan(cfg, None, random.Random(0)).fault_event == 2
    cfg = MockConfig(output_tokens=3, fault="drop", fault_at=50)
    assert make_plan(cfg, None, random.Random(0)).fault_event == 3


def test_plan_jitter_stays_in_bounds_and_is_seeded() -> None:
    cfg = MockConfig(ttft_ms=100, itl_ms=10, ttft_jitter_ms=5, itl_jitter_ms=2, output_tokens=50)
    a = make_plan(cfg, None, random.Random(3))
    b = make_plan(cfg, None, random.Random(3))
    assert a == b
    assert 95 <= a.ttft_ms <= 105
    assert all(8 <= gap <= 12 for gap in a.itl_ms)
    assert len(set(a.itl_ms)) > 1


def test_plan_fault_rate_is_a_share() -> None:
    cfg = MockConfig(fault="http_500", fault_rate=0.3)
    rng = random.Random(1)
    faults = sum(make_plan(cfg, None, rng).fault == "http_500" for _ in range(2000))
    assert 500 < faults < 700
    never = MockConfig(fault="http_500", fault_rate=0.0)
    assert make_plan(never, None, rng).fault == "none"


# request head parsing


def test_parse_head() -> None:
    head = parse_head(b"POST /v1/messages?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\nX-Mock: ttft_ms=1")
    assert (head.method, head.path, head.query, head.content_length) == ("POST", "/v1/messages", {"x": ["1"]}, 12)
    assert head.headers["x-mock"] == "ttft_ms=1"
    assert head.keep_alive
    assert not parse_head(b"GET / HTTP/1.1\r\nConnection: close").keep_alive
    assert not parse_head(b"GET / HTTP/1.0").keep_alive


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"GARBAGE", 400),
        (b"GET / HTTP/2.0", 505),
        (b"POST / HTTP/1.1\r\nContent-Length: x", 400),
        (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked", 501),
        (b"GET / HTTP/1.1\r\nno colon here", 400),
    ],
)
def test_parse_head_errors(raw: bytes, status: int) -> None:
    with pytest.raises(HttpError) as info:
        parse_head(raw)
    assert info.value.status == status
