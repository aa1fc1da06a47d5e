"""Drills as configured: the `drills:` entries of a pool file and `--llm-drill`, validated with one-line errors
(docs/failover.md, "Drills"). Also the small value checkers the pool file shares (`Place`, `number`, `duration`...),
so a drill and an endpoint report a mistake the same way: the source, the place, what it must be, what it was.

Two command-line forms, both accepted:

    primary:http_503@20s+20s                      ENDPOINT:FAULT@AT+FOR, optionally followed by ,KEY=VALUE params
    endpoint=primary,fault=rate_limit,at=20,for=20,retry_after_s=2

Durations are numbers (seconds) or strings with a unit: `250ms`, `20s`, `1.5m`; no unit means seconds. A fault takes
only the parameters the mock's admin API accepts for it (loadlib.mockapi.faults.PARAMS, plus `rate`), so a drill the
pool accepts is never refused by a mock mid-run, and a typo cannot silently run with a default.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from loadlib.errors import ConfigError
from loadlib.mockapi.faults import MAX_FOR_S, PARAMS

DRILL_FAULTS = ("refuse", "http_500", "http_503", "stall", "rate_limit", "latency", "broken")
CLIENT_SIDE_FAULTS = ("refuse", "http_500", "http_503", "stall", "rate_limit", "latency")  # 'broken' needs a mock
DRILL_KEYS = ("endpoint", "fault", "at", "for")
PARAM_KEYS = ("rate", "retry_after_s", "delay_ms", "after_tokens")
DRILL_EXAMPLE = "primary:http_503@20s+20s"
_COMPACT = re.compile(r"^(?P<endpoint>[^:=@]+):(?P<fault>[^@]+)@(?P<at>[^+]+)\+(?P<for>.+)$")
_DURATION = re.compile(r"^([0-9]*\.?[0-9]+(?:[eE][-]?[0-9]+)?)\s*(ms|s|m)?$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0}


@dataclass(frozen=True, slots=True)
class DrillSpec:
    """One outage: `fault` on `endpoint` from `at_s` for `for_s` seconds after the test's start. `params` holds only
    the parameters given (retry_after_s, delay_ms, after_tokens, rate): each side that applies the fault (the mock,
    loadlib.failover.client_faults) owns its defaults. `origin` names where the drill was written, for messages."""

    endpoint: str
    fault: str
    at_s: float
    for_s: float
    params: Mapping[str, float] = field(default_factory=dict)
    origin: str = field(default="", compare=False)

    @property
    def until_s(self) -> float:
        return self.at_s + self.for_s

    def overlaps(self, other: DrillSpec) -> bool:
        """Two windows on the same endpoint that share an instant: an endpoint takes one fault at a time."""
        return self.endpoint == other.endpoint and self.at_s < other.until_s and other.at_s < self.until_s


# -- places and values ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Place:
    """Where a value sits: the source (a file name, `--llm-pool`, `--llm-drill '...'`) and the path inside it
    (`endpoints[1].weight`). Every message starts with it, so a user finds the line to fix."""

    source: str
    path: str = ""

    def key(self, name: str) -> Place:
        return Place(self.source, f"{self.path}.{name}" if self.path else name)

    def item(self, index: int) -> Place:
        return Place(self.source, f"{self.path}[{index}]")

    def __str__(self) -> str:
        return f"{self.source}: {self.path}" if self.path else self.source

    def fail(self, problem: str) -> NoReturn:
        """Raise the one-line error `<source>: <path> <problem>`."""
        raise ConfigError(" ".join(f"{self} {problem}".split()))


def show(value: Any, limit: int = 60) -> str:
    """A value as a message quotes it: repr (so one line), at most `limit` characters; a whole number as one."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_keys(data: Mapping[Any, Any], allowed: Sequence[str], place: Place) -> None:
    """An unknown key is an error naming it and the allowed ones: a typo must not be silently ignored."""
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"{place}: unknown key {show(str(key))}{hint}; allowed: {', '.join(allowed)}")


def as_mapping(value: Any, place: Place, example: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        place.fail(f"must be a mapping like {example}, got {show(value)}")
    return value


def text(value: Any, place: Place) -> str:
    if not isinstance(value, str) or not value.strip():
        place.fail(f"must be a non-empty string, got {show(value)}")
    return value.strip()


def number(
    value: Any, place: Place, low: float, high: float | None = None, *, open_low: bool = False, given: Any = None
) -> float:
    """A finite number (numeric strings too, as `key=value` drills give them) within [low, high] (or (low, high])."""
    try:
        if isinstance(value, bool):
            raise TypeError
        x = float(value)
    except (TypeError, ValueError):
        place.fail(f"must be a number, got {show(value)}")
    if not math.isfinite(x) or (x <= low if open_low else x < low) or (high is not None and x > high):
        place.fail(f"must be a number {_bounds(low, high, open_low)}, got {show(value if given is None else given)}")
    return x


def flag(value: Any, place: Place) -> bool:
    if not isinstance(value, bool):
        place.fail(f"must be true or false, got {show(value)}")
    return value


def integer(value: Any, place: Place, low: int, high: int | None = None) -> int:
    x = number(value, place, low, high)
    if not x.is_integer():
        place.fail(f"must be a whole number {_bounds(low, high, False)}, got {show(value)}")
    return int(x)


def duration(
    value: Any, place: Place, low: float = 0.0, high: float | None = None, *, open_low: bool = False, unit: str = "s"
) -> float:
    """A duration in `unit` ("s" or "ms"): a bare number is already in `unit`; a string may carry ms, s or m."""
    if isinstance(value, str) and value.strip():
        m = _DURATION.match(value.strip().lower())
        if m is None:
            place.fail(f"must be a duration like 20s, 250ms or 1.5m (a bare number is {unit}), got {show(value)}")
        seconds = float(m.group(1)) * _UNIT_S[m.group(2) or unit]
        return number(seconds / _UNIT_S[unit], place, low, high, open_low=open_low, given=value)
    return number(value, place, low, high, open_low=open_low)


def _bounds(low: float, high: float | None, open_low: bool) -> str:
    lower = f"> {low:g}" if open_low else f">= {low:g}"
    return f"{lower} and <= {high:g}" if high is not None else lower


# -- drills --------------------------------------------------------------------------------------------------------


def allowed_params(fault: str) -> tuple[str, ...]:
    """`rate` and the fault's own parameters, as the mock's admin API takes them."""
    return ("rate", *PARAMS.get(fault, {}))


def drill_from_mapping(data: Any, place: Place) -> DrillSpec:
    """One drill from a mapping (a pool file's `drills:` item, or the key=value form of --llm-drill)."""
    data = as_mapping(data, place, "{endpoint: primary, fault: http_503, at: 20s, for: 20s}")
    check_keys(data, (*DRILL_KEYS, *PARAM_KEYS), place)
    for key in DRILL_KEYS:
        if data.get(key) is None:
            place.fail(f"lacks {key!r}; a drill needs endpoint, fault, at and for (e.g. {DRILL_EXAMPLE})")
    fault = _fault(data["fault"], place.key("fault"))
    at_s = duration(data["at"], place.key("at"))
    for_s = duration(data["for"], place.key("for"), 0.0, MAX_FOR_S, open_low=True)
    params = {k: _param(fault, k, v, place) for k, v in data.items() if k in PARAM_KEYS}
    return DrillSpec(text(data["endpoint"], place.key("endpoint")), fault, at_s, for_s, params, str(place))


def parse_drill(spec: str, where: str = "--llm-drill") -> DrillSpec:
    """A drill from the command line: `primary:http_503@20s+20s[,key=value...]` or
    `endpoint=primary,fault=http_503,at=20s,for=20s[,key=value...]`."""
    place = Place(f"{where} {show(spec, 160)}")
    items = [i.strip() for i in str(spec).split(",") if i.strip()]
    if not items:
        place.fail(f"is empty; write ENDPOINT:FAULT@AT+FOR, e.g. {DRILL_EXAMPLE}")
    data: dict[str, str] = {}
    if "=" not in items[0]:
        m = _COMPACT.match(items.pop(0))
        if m is None:
            place.fail(
                f"is not a drill; write ENDPOINT:FAULT@AT+FOR (e.g. {DRILL_EXAMPLE}) or "
                "endpoint=primary,fault=http_503,at=20s,for=20s"
            )
        data = {k: v.strip() for k, v in m.groupdict().items()}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().lower().replace("-", "_")
        if not sep or not key:
            place.fail(f"item {show(item)} is not key=value (e.g. retry_after_s=2)")
        if key in data:
            place.fail(f"gives {key!r} twice")
        data[key] = value.strip()
    return drill_from_mapping(data, place)


def _fault(value: Any, place: Place) -> str:
    fault = text(value, place).lower()
    if fault not in DRILL_FAULTS:
        place.fail(f"must be one of {', '.join(DRILL_FAULTS)}, got {show(value)}")
    return fault


def _param(fault: str, key: str, value: Any, place: Place) -> float:
    """A parameter the fault takes, in the range the mock's admin API accepts."""
    if key not in allowed_params(fault):
        place.fail(f"gives {key!r}, which fault {fault!r} does not take; it takes: {', '.join(allowed_params(fault))}")
    at = place.key(key)
    if key == "rate":
        return number(value, at, 0.0, 1.0)
    if key == "retry_after_s":
        return duration(value, at, 0.0, MAX_FOR_S)
    if key == "delay_ms":
        return duration(value, at, 0.0, MAX_FOR_S * 1000.0, unit="ms")
    return integer(value, at, 0, 1_000_000_000)  # after_tokens


def check_drill(
    drill: DrillSpec, earlier: Sequence[DrillSpec], names: Sequence[str], server_side: bool, source: str
) -> None:
    """The drill's endpoint is one of `names`, can take its fault (`server_side`: a mock or an endpoint with an
    admin_url), and has no other fault in the same window among the `earlier` drills."""
    at = Place(drill.origin or f"{source}: drill")
    if drill.fault not in DRILL_FAULTS:
        at.fail(f"has an unknown fault {show(drill.fault)}; use one of {', '.join(DRILL_FAULTS)}")
    if drill.endpoint not in names:
        at.fail(f"names endpoint {show(drill.endpoint)}, which is not in the pool; known: {', '.join(names)}")
    if drill.fault not in CLIENT_SIDE_FAULTS and not server_side:
        at.fail(
            f"asks for fault {drill.fault!r}, which needs a mock endpoint or admin_url: {drill.endpoint!r} is drilled "
            "on the client side, which cannot cut a real stream; drill a mock endpoint or give the endpoint's admin_url"
        )
    if drill.fault == "refuse" and server_side and drill.params.get("rate", 1.0) < 1.0:
        at.fail("gives refuse a rate below 1 on a mock endpoint; a closed listener refuses every client: drop rate")
    for other in earlier:
        if drill.overlaps(other):
            at.fail(
                f"overlaps {other.origin or 'another drill'} on endpoint {drill.endpoint!r} "
                f"({drill.at_s:g}-{drill.until_s:g} s vs {other.at_s:g}-{other.until_s:g} s); an endpoint takes "
                "one fault at a time: move or shorten one"
            )
