"""Drills as written on the command line and in a pool file: both --llm-drill forms, durations, the parameters each
fault takes (the mock's admin API must accept every drill the pool accepts), and one-line errors."""

from __future__ import annotations

import pytest

from loadlib.errors import ConfigError
from loadlib.failover.drills_config import (
    CLIENT_SIDE_FAULTS,
    DRILL_FAULTS,
    DrillSpec,
    Place,
    allowed_params,
    drill_from_mapping,
    duration,
    parse_drill,
)
from loadlib.mock.faults import FAULT_KINDS, PARAMS, fault_from


def error_of(spec: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_drill(spec)
    message = str(info.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("primary:http_503@20s+20s", ("primary", "http_503", 20.0, 20.0, {})),
        ("primary:http_503@20+20", ("primary", "http_503", 20.0, 20.0, {})),
        ("b:stall@1m+500ms", ("b", "stall", 60.0, 0.5, {})),
        ("b:STALL@0+1.5m", ("b", "stall", 0.0, 90.0, {})),
        (" b : latency @ 2s + 3s , delay_ms=250 ", ("b", "latency", 2.0, 3.0, {"delay_ms": 250.0})),
        ("b:latency@2s+3s,delay_ms=1s", ("b", "latency", 2.0, 3.0, {"delay_ms": 1000.0})),
        (
            "b:rate_limit@60s+10s,retry_after_s=2,rate=0.5",
            ("b", "rate_limit", 60.0, 10.0, {"retry_after_s": 2.0, "rate": 0.5}),
        ),
        ("b:broken@1+1,after-tokens=3", ("b", "broken", 1.0, 1.0, {"after_tokens": 3})),
        (
            "endpoint=primary,fault=rate_limit,at=20,for=20,retry_after_s=2",
            ("primary", "rate_limit", 20.0, 20.0, {"retry_after_s": 2.0}),
        ),
        ("fault=refuse,endpoint=x,for=250ms,at=1.5", ("x", "refuse", 1.5, 0.25, {})),
    ],
)
def test_both_forms(spec: str, expected: tuple[object, ...]) -> None:
    d = parse_drill(spec)
    assert (d.endpoint, d.fault, d.at_s, d.for_s, dict(d.params)) == expected
    assert d.origin == f"--llm-drill {spec!r}"


def test_where_names_the_source() -> None:
    assert parse_drill("a:refuse@1+1", where="LLM_DRILL").origin == "LLM_DRILL 'a:refuse@1+1'"
    with pytest.raises(ConfigError, match=r"^LLM_DRILL 'a:refuse@1\+0': for must be"):
        parse_drill("a:refuse@1+0", where="LLM_DRILL")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("", "--llm-drill '' is empty"),
        ("primary", "--llm-drill 'primary' is not a drill; write ENDPOINT:FAULT@AT+FOR"),
        ("primary:http_503@20s", "is not a drill"),
        ("primary:http_503+20s", "is not a drill"),
        ("primary:boom@1+1", "--llm-drill 'primary:boom@1+1': fault must be one of refuse, http_500"),
        ("primary:stall@soon+1", "--llm-drill 'primary:stall@soon+1': at must be a duration like 20s"),
        ("primary:stall@5h+1", "at must be a duration like 20s, 250ms or 1.5m"),
        ("primary:stall@-1+1", "at must be a duration"),
        ("primary:stall@1+0", "for must be a number > 0 and <= 86400, got '0'"),
        ("primary:stall@1+2d", "for must be a duration"),
        ("primary:stall@1+100000", "for must be a number > 0 and <= 86400"),
        (
            "primary:stall@1+1,retry_after_s=2",
            "gives 'retry_after_s', which fault 'stall' does not take; it takes: rate",
        ),
        ("primary:latency@1+1,retry_after_s=2", "it takes: rate, delay_ms"),
        ("primary:rate_limit@1+1,rate=2", "rate must be a number >= 0 and <= 1, got '2'"),
        ("primary:broken@1+1,after_tokens=2.5", "after_tokens must be a whole number >= 0"),
        ("primary:stall@1+1,rate", "item 'rate' is not key=value"),
        ("primary:stall@1+1,colour=red", "unknown key 'colour'; allowed: endpoint, fault, at, for, rate"),
        ("endpoint=a,fault=stall,at=1", "lacks 'for'; a drill needs endpoint, fault, at and for"),
        ("endpoint=a,fault=stall,at=1,for=1,at=2", "gives 'at' twice"),
        ("primary:stall@1+1,at=2", "gives 'at' twice"),
        ("endpoint=,fault=stall,at=1,for=1", "endpoint must be a non-empty string"),
    ],
)
def test_bad_drills_are_one_line(spec: str, expected: str) -> None:
    message = error_of(spec)
    assert message.startswith("--llm-drill ")
    assert expected in message


def test_file_drills_name_their_place() -> None:
    place = Place("pool.yaml").key("drills").item(2)
    drill = drill_from_mapping({"endpoint": "a", "fault": "http_500", "at": 0, "for": "1m"}, place)
    assert drill.origin == "pool.yaml: drills[2]" and drill.for_s == 60.0
    with pytest.raises(ConfigError, match=r"^pool\.yaml: drills\[2\]\.at must be a number >= 0, got -3$"):
        drill_from_mapping({"endpoint": "a", "fault": "http_500", "at": -3, "for": 1}, place)
    with pytest.raises(ConfigError, match=r"^pool\.yaml: drills\[2\] must be a mapping"):
        drill_from_mapping("a:http_500@1+1", place)
    with pytest.raises(ConfigError, match=r"^pool\.yaml: drills\[2\]\.endpoint must be a non-empty string"):
        drill_from_mapping({"endpoint": 3, "fault": "http_500", "at": 0, "for": 1}, place)


def test_durations() -> None:
    at = Place("x", "d")
    assert duration(3, at) == 3.0
    assert duration("250ms", at) == 0.25
    assert duration("2m", at) == 120.0
    assert duration("1.5 s", at) == 1.5
    assert duration(300, at, unit="ms") == 300.0
    assert duration("0.3s", at, unit="ms") == pytest.approx(300.0)
    for bad in (True, None, "fast", "inf", float("nan"), [1]):
        with pytest.raises(ConfigError, match=r"^x: d must be"):
            duration(bad, at)


def test_faults_match_the_mock_admin_api() -> None:
    assert DRILL_FAULTS == FAULT_KINDS
    assert set(CLIENT_SIDE_FAULTS) == set(DRILL_FAULTS) - {"broken"}
    for fault in DRILL_FAULTS:
        assert allowed_params(fault) == ("rate", *PARAMS.get(fault, {}))


@pytest.mark.parametrize(
    "spec",
    [
        "m:rate_limit@1+30,retry_after_s=2,rate=0.5",
        "m:latency@1+30,delay_ms=1500",
        "m:broken@1+30,after_tokens=7",
        "m:http_500@1+30,rate=0.1",
        "m:http_503@1+30",
        "m:stall@1+30",
        "m:refuse@1+30",
    ],
)
def test_a_drill_the_pool_accepts_is_a_body_the_mock_accepts(spec: str) -> None:
    """The drill driver posts {kind, for_s, **params} to /mock/fault: it must never be refused mid-run."""
    d = parse_drill(spec)
    fault = fault_from({"kind": d.fault, "for_s": d.for_s, **d.params})
    assert fault is not None and fault.kind == d.fault and fault.for_s == d.for_s


def test_overlaps() -> None:
    a = DrillSpec("e", "http_503", 10.0, 10.0)
    assert a.until_s == 20.0
    assert a.overlaps(DrillSpec("e", "stall", 19.9, 5.0))
    assert a.overlaps(DrillSpec("e", "stall", 5.0, 30.0))
    assert not a.overlaps(DrillSpec("e", "stall", 20.0, 5.0))
    assert not a.overlaps(DrillSpec("e", "stall", 0.0, 10.0))
    assert not a.overlaps(DrillSpec("other", "stall", 12.0, 5.0))
