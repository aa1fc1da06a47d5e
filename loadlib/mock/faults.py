"""Faults on a timer for failover drills: `POST /mock/fault` breaks every later LLM request for a window, then the
server reverts by itself, so a drill ends even when its driver dies.

Pure bookkeeping, kept apart from the server so it can be tested with an injected clock: validation of the admin body,
the mapping of each kind to MockConfig overrides, and the window. The overrides are a layer over the server defaults,
never written into them: reverting is dropping the layer (so a replaced fault cannot leak into the revert, and a
`POST /mock/config` made meanwhile survives). The server owns the timer that ends a window and the listener that
`refuse` closes.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from loadlib.mockapi.config import MockConfig
from loadlib.mockapi.faults import FAULT_KINDS, MAX_FOR_S, NONE, PARAMS

_PARAM_MAX = {"retry_after_s": MAX_FOR_S, "delay_ms": MAX_FOR_S * 1000.0, "after_tokens": 1e9}
_INTEGER_PARAMS = frozenset({"after_tokens"})
_EXAMPLE = '{"kind": "http_503", "for_s": 30}'


class FaultError(ValueError):
    """A bad admin body; the message is the one line of the 400 answer."""


@dataclass(frozen=True, slots=True)
class FaultSpec:
    """A validated fault request: kind, window length, share of requests hit, and the kind's parameters."""

    kind: str
    for_s: float
    rate: float = 1.0
    params: Mapping[str, float] = field(default_factory=dict)


def parse_fault(body: bytes) -> FaultSpec | None:
    """The admin body -> a spec, or None for `{"kind": "none"}` (end the running fault)."""
    try:
        data = orjson.loads(body) if body.strip() else None
    except orjson.JSONDecodeError:
        raise FaultError(f"body is not JSON; send an object like {_EXAMPLE}") from None
    if not isinstance(data, dict):
        raise FaultError(f"body must be a JSON object like {_EXAMPLE}")
    return fault_from(data)


def fault_from(data: Mapping[str, Any]) -> FaultSpec | None:
    """Validate a decoded body; every message names the field and what it accepts."""
    kind = data.get("kind")
    valid = ", ".join((NONE, *FAULT_KINDS))
    if kind is None:
        raise FaultError(f"kind is required; valid kinds: {valid}")
    if kind == NONE:
        return None
    if kind not in FAULT_KINDS:
        raise FaultError(f"unknown kind {kind!r}; valid kinds: {valid}")
    if "for_s" not in data:
        raise FaultError(f"for_s is required: the window in seconds, > 0 and <= {MAX_FOR_S:g}")
    for_s = _number("for_s", data["for_s"], 0.0, MAX_FOR_S, open_low=True)
    rate = _number("rate", data.get("rate", 1.0), 0.0, 1.0)
    if kind == "refuse" and rate < 1.0:
        raise FaultError("refuse takes no rate below 1: a closed listener refuses every client")
    return FaultSpec(kind, for_s, rate, _params(kind, data))


def _params(kind: str, data: Mapping[str, Any]) -> dict[str, float]:
    """The kind's parameters with their defaults; a parameter the kind does not take is an error (a typo would
    otherwise run the drill with a default the caller did not mean)."""
    defaults = PARAMS.get(kind, {})
    extra = sorted(set(data) - {"kind", "for_s", "rate", *defaults})
    if extra:
        takes = ", ".join(["for_s", "rate", *defaults])
        raise FaultError(f"unknown parameter {extra[0]!r} for {kind}; it takes: {takes}")
    return {
        name: _number(name, data.get(name, default), 0.0, _PARAM_MAX[name], integer=name in _INTEGER_PARAMS)
        for name, default in defaults.items()
    }


def _number(name: str, value: Any, low: float, high: float, *, open_low: bool = False, integer: bool = False) -> float:
    """A finite number (or numeric string, as YAML drill specs may send) within bounds."""
    kind = "an integer" if integer else "a number"
    try:
        if isinstance(value, bool):
            raise TypeError
        number = float(value)
    except (TypeError, ValueError):
        raise FaultError(f"{name} must be {kind}, got {value!r}") from None
    too_low = number <= low if open_low else number < low
    if math.isnan(number) or too_low or number > high or (integer and not number.is_integer()):
        low_text = f"> {low:g}" if open_low else f">= {low:g}"
        raise FaultError(f"{name} must be {kind} {low_text} and <= {high:g}, got {value!r}")
    return int(number) if integer else number


def overrides(spec: FaultSpec, base: MockConfig) -> dict[str, Any]:
    """The MockConfig fields a request hit by the fault gets. The window's own dice picks the requests (`rate`), so
    a fault sets `fault_rate` 1 and a base `--fault-rate` cannot thin it out."""
    kind, params = spec.kind, spec.params
    if kind == "refuse":
        return {}  # the server closes its listener; no request gets through to be configured
    if kind == "latency":
        return {"ttft_ms": base.ttft_ms + params["delay_ms"]}
    if kind == "rate_limit":
        return {"fault": "rate_limit", "fault_rate": 1.0, "retry_after_s": params["retry_after_s"]}
    if kind == "stall":  # no response head at all: the client's TTFT timeout, not the window, ends the request
        return {"fault": "hang_headers", "fault_rate": 1.0, "stall_ms": spec.for_s * 1000.0}
    if kind == "broken":
        return {"fault": "drop", "fault_rate": 1.0, "fault_at": int(params["after_tokens"])}
    return {"fault": kind, "fault_rate": 1.0}  # http_500, http_503


def config_dict(cfg: MockConfig) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


@dataclass(frozen=True, slots=True)
class ActiveFault:
    """A running window: `until` on the monotonic clock (expiry), `until_unix` for humans and drill logs."""

    spec: FaultSpec
    until: float
    until_unix: float


class FaultState:
    """The one running fault of a server, if any. It expires lazily on its own clock as well as by the server's
    timer, so a late timer (a busy loop) never stretches the window for requests."""

    def __init__(
        self,
        rng: random.Random | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.rng = rng or random.Random(0)
        self.clock = clock
        self.wall = wall
        self._active: ActiveFault | None = None
        self._cache: tuple[MockConfig, MockConfig] | None = None  # (base, faulted): one replace per base, not per call

    def start(self, spec: FaultSpec) -> ActiveFault:
        """Run `spec` from now, replacing any running fault (the layer is swapped, so the revert is to the base)."""
        self._active = ActiveFault(spec, self.clock() + spec.for_s, self.wall() + spec.for_s)
        self._cache = None
        return self._active

    def end(self) -> ActiveFault | None:
        """End the running fault now; returns it (None when nothing ran)."""
        ended, self._active, self._cache = self._active, None, None
        return ended

    def current(self) -> ActiveFault | None:
        active = self._active
        if active is not None and self.clock() >= active.until:
            self.end()
            return None
        return active

    @property
    def refusing(self) -> bool:
        active = self.current()
        return active is not None and active.spec.kind == "refuse"

    def faulted(self, base: MockConfig) -> MockConfig:
        """`base` with the running fault's overrides (no dice): what a hit request gets."""
        active = self.current()
        if active is None:
            return base
        cache = self._cache
        if cache is None or cache[0] is not base:
            cache = self._cache = (base, base.with_overrides(overrides(active.spec, base)))
        return cache[1]

    def config_for(self, base: MockConfig) -> MockConfig:
        """The config of one LLM request: faulted, or `base` when a rate below 1 spares it."""
        active = self.current()
        if active is None:
            return base
        rate = active.spec.rate
        if rate < 1.0 and self.rng.random() >= rate:
            return base
        return self.faulted(base)

    def describe(self, base: MockConfig) -> dict[str, Any]:
        """The admin view: kind, window end and the config a hit request gets (`base` when none runs)."""
        active = self.current()
        if active is None:
            return {"kind": NONE, "until_unix": None, "config": config_dict(base)}
        spec = active.spec
        return {
            "kind": spec.kind,
            "for_s": spec.for_s,
            "rate": spec.rate,
            "params": dict(spec.params),
            "until_unix": round(active.until_unix, 3),
            "remaining_s": round(max(0.0, active.until - self.clock()), 3),
            "config": config_dict(self.faulted(base)),
        }
