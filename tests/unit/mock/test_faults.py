"""Faults on a timer (pure): admin body validation, kind -> MockConfig overrides, and the window's bookkeeping on an
injected clock."""

from __future__ import annotations

import random

import orjson
import pytest

from loadlib.mock.faults import (
    FAULT_KINDS,
    MAX_FOR_S,
    FaultError,
    FaultSpec,
    FaultState,
    fault_from,
    overrides,
    parse_fault,
)
from loadlib.mock.plan import make_plan
from loadlib.mockapi.config import MockConfig

BASE = MockConfig(ttft_ms=50.0, fault="drop", fault_rate=0.1, stall_ms=2000.0)


class Clock:
    """A hand-driven clock: monotonic and wall time move together."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t

    def wall(self) -> float:
        return 1_700_000_000.0 + self.t


def state(clock: Clock, seed: int = 0) -> FaultState:
    return FaultState(random.Random(seed), clock, clock.wall)


def spec(kind: str, for_s: float = 10.0, **params: float) -> FaultSpec:
    got = fault_from({"kind": kind, "for_s": for_s, **params})
    assert got is not None
    return got


# validation


def test_kinds_are_the_names_the_client_side_uses() -> None:
    assert FAULT_KINDS == ("refuse", "http_500", "http_503", "stall", "rate_limit", "latency", "broken")


def test_parse_defaults_and_none() -> None:
    assert parse_fault(b'{"kind": "http_503", "for_s": 30}') == FaultSpec("http_503", 30.0, 1.0, {})
    assert spec("latency").params == {"delay_ms": 1000.0}
    assert spec("rate_limit").params == {"retry_after_s": 1.0}
    assert spec("broken").params == {"after_tokens": 5}
    assert spec("broken", after_tokens=3.0).params == {"after_tokens": 3}
    assert spec("stall", for_s="2.5").for_s == 2.5  # numeric strings, as a YAML drill file may give
    assert spec("http_500", rate=0.25).rate == 0.25
    assert parse_fault(b'{"kind": "none"}') is None
    assert parse_fault(b'{"kind": "none", "for_s": 3}') is None


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"", "body must be a JSON object"),
        (b"kind=http_503", "body is not JSON"),
        (b"[1, 2]", "body must be a JSON object"),
        (b'{"for_s": 3}', "kind is required; valid kinds: none, refuse, http_500"),
        (b'{"kind": "explode", "for_s": 3}', "unknown kind 'explode'; valid kinds: none, refuse, http_500, http_503"),
        (b'{"kind": "http_503"}', "for_s is required"),
        (b'{"kind": "http_503", "for_s": 0}', "for_s must be a number > 0 and <= 86400, got 0"),
        (b'{"kind": "http_503", "for_s": -1}', "for_s must be a number > 0"),
        (b'{"kind": "http_503", "for_s": 86401}', "<= 86400, got 86401"),
        (b'{"kind": "http_503", "for_s": "soon"}', "for_s must be a number, got 'soon'"),
        (b'{"kind": "http_503", "for_s": "nan"}', "for_s must be a number > 0"),
        (b'{"kind": "http_503", "for_s": true}', "for_s must be a number, got True"),
        (b'{"kind": "http_503", "for_s": null}', "for_s must be a number, got None"),
        (b'{"kind": "http_503", "for_s": 1, "rate": 1.5}', "rate must be a number >= 0 and <= 1, got 1.5"),
        (b'{"kind": "refuse", "for_s": 1, "rate": 0.5}', "refuse takes no rate below 1"),
        (
            b'{"kind": "latency", "for_s": 1, "delay": 5}',
            "unknown parameter 'delay' for latency; it takes: for_s, rate",
        ),
        (b'{"kind": "http_500", "for_s": 1, "delay_ms": 5}', "unknown parameter 'delay_ms' for http_500"),
        (b'{"kind": "latency", "for_s": 1, "delay_ms": -5}', "delay_ms must be a number >= 0"),
        (b'{"kind": "broken", "for_s": 1, "after_tokens": 2.5}', "after_tokens must be an integer >= 0"),
        (b'{"kind": "rate_limit", "for_s": 1, "retry_after_s": "x"}', "retry_after_s must be a number, got 'x'"),
    ],
)
def test_bad_bodies_say_what_is_wrong_in_one_line(body: bytes, fragment: str) -> None:
    with pytest.raises(FaultError) as info:
        parse_fault(body)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_max_window_is_accepted() -> None:
    assert spec("http_503", MAX_FOR_S).for_s == MAX_FOR_S


# kind -> overrides


@pytest.mark.parametrize(
    ("kind", "params", "expected"),
    [
        ("refuse", {}, {}),
        ("http_500", {}, {"fault": "http_500", "fault_rate": 1.0}),
        ("http_503", {}, {"fault": "http_503", "fault_rate": 1.0}),
        ("stall", {}, {"fault": "hang_headers", "fault_rate": 1.0, "stall_ms": 10_000.0}),
        ("rate_limit", {"retry_after_s": 2.5}, {"fault": "rate_limit", "fault_rate": 1.0, "retry_after_s": 2.5}),
        ("latency", {"delay_ms": 300}, {"ttft_ms": 350.0}),
        ("broken", {"after_tokens": 3}, {"fault": "drop", "fault_rate": 1.0, "fault_at": 3}),
    ],
)
def test_overrides(kind: str, params: dict[str, float], expected: dict[str, object]) -> None:
    assert overrides(spec(kind, 10.0, **params), BASE) == expected


def test_overrides_make_valid_plans() -> None:
    """Each faulted config plans what the kind promises: no head for stall, a cut for broken, TTFT + delay."""
    rng = random.Random(1)
    stall = make_plan(BASE.with_overrides(overrides(spec("stall", 4.0), BASE)), None, rng)
    assert (stall.fault, stall.start_ms) == ("hang_headers", 4000.0)
    broken = make_plan(BASE.with_overrides(overrides(spec("broken", after_tokens=3), BASE)), None, rng)
    assert (broken.fault, broken.tokens_before(broken.fault_event)) == ("drop", 3)
    slow = make_plan(BASE.with_overrides(overrides(spec("latency", delay_ms=200), BASE)), None, rng)
    assert slow.ttft_ms == 250.0


# the window


def test_window_reverts_by_itself() -> None:
    clock = Clock()
    faults = state(clock)
    active = faults.start(spec("http_503", 2.0))
    assert active.until == 102.0 and active.until_unix == clock.wall() + 2.0
    assert faults.config_for(BASE).fault == "http_503"
    clock.t = 101.999
    assert faults.current() is active
    clock.t = 102.0
    assert faults.current() is None
    assert faults.config_for(BASE) is BASE
    assert faults.describe(BASE) == {"kind": "none", "until_unix": None, "config": faults.describe(BASE)["config"]}


def test_replaced_fault_reverts_to_the_original_not_to_the_previous_fault() -> None:
    clock = Clock()
    faults = state(clock)
    faults.start(spec("latency", 60.0, delay_ms=500))
    assert faults.config_for(BASE).ttft_ms == 550.0
    clock.t += 1.0
    faults.start(spec("http_500", 1.0))
    hit = faults.config_for(BASE)
    assert (hit.fault, hit.ttft_ms) == ("http_500", 50.0)  # the latency layer is gone, not stacked
    clock.t += 1.0  # the replacement's window is over; the first one's (60 s) would still run
    assert faults.config_for(BASE) is BASE


def test_end_now_and_describe() -> None:
    clock = Clock()
    faults = state(clock)
    assert faults.end() is None
    faults.start(spec("rate_limit", 5.0, retry_after_s=2))
    clock.t += 1.5
    shown = faults.describe(BASE)
    assert shown["kind"] == "rate_limit" and shown["remaining_s"] == 3.5
    assert shown["until_unix"] == round(clock.wall() + 3.5, 3)
    assert shown["params"] == {"retry_after_s": 2.0} and shown["rate"] == 1.0
    assert shown["config"]["fault"] == "rate_limit" and shown["config"]["retry_after_s"] == 2.0
    orjson.dumps(shown)  # the admin answer must serialize
    assert faults.end() is not None
    assert faults.describe(BASE)["kind"] == "none"


def test_refusing_only_while_a_refuse_window_runs() -> None:
    clock = Clock()
    faults = state(clock)
    assert not faults.refusing
    faults.start(spec("refuse", 1.0))
    assert faults.refusing
    assert faults.config_for(BASE) is BASE  # nothing to configure: no request gets through
    clock.t += 1.0
    assert not faults.refusing


def test_rate_hits_that_share_of_requests_with_its_own_dice() -> None:
    clock = Clock()
    faults = state(clock, seed=3)
    faults.start(spec("http_503", 10.0, rate=0.3))
    hits = sum(faults.config_for(BASE).fault == "http_503" for _ in range(2000))
    assert 500 <= hits <= 700
    faults.start(spec("http_503", 10.0, rate=0.0))
    assert all(faults.config_for(BASE) is BASE for _ in range(100))


def test_faulted_config_follows_a_changed_base() -> None:
    """A POST /mock/config during the window changes the base; the fault layers over the new one."""
    clock = Clock()
    faults = state(clock)
    faults.start(spec("latency", 10.0, delay_ms=100))
    first = faults.config_for(BASE)
    assert faults.config_for(BASE) is first  # cached: one replace per base, not per request
    changed = BASE.with_overrides({"ttft_ms": 10.0})
    assert faults.config_for(changed).ttft_ms == 110.0
