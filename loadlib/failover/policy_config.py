"""The pool file's `breaker` and `retry` sections, checked into their configs (docs/failover.md, "The pool file";
every mistake is one line naming its place, as in loadlib.failover.pool)."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any

from loadlib.errors import ErrorClass
from loadlib.failover.breaker import DEFAULT_COUNTED, BreakerConfig
from loadlib.failover.drills_config import Place, duration, flag, integer, number, show, text
from loadlib.failover.retry import DEFAULT_RETRYABLE, RetryConfig

BREAKER_KEYS: tuple[str, ...] = ("failures", "failure_rate", "window_s", "min_calls", "cooldown_s", "probes", "count")
BREAKER_KEYS += ("slow_call_s", "slow_call_rate", "max_cooldown_s", "max_open_share", "success_rate_stdev")
BREAKER_KEYS += ("success_rate_min_endpoints",)
RETRY_KEYS: tuple[str, ...] = ("max_attempts", "backoff_base_s", "backoff_max_s", "retry_after_max_s", "budget")
RETRY_KEYS += ("budget_window_s", "retry_on", "retry_after_cooldown")
# Classes a breaker may count or a retry may follow: not a success, a lost hedge, or a refusal that sent nothing.
FAILURE_CLASSES = tuple(
    c for c in ErrorClass if c not in (ErrorClass.OK, ErrorClass.CANCELLED, ErrorClass.CIRCUIT_OPEN)
)


def breaker_config(data: Mapping[str, Any], place: Place) -> BreakerConfig:
    d = BreakerConfig()
    return BreakerConfig(
        failures=integer(data.get("failures", d.failures), place.key("failures"), 0),
        failure_rate=number(data.get("failure_rate", d.failure_rate), place.key("failure_rate"), 0.0, 1.0),
        window_s=duration(data.get("window_s", d.window_s), place.key("window_s"), open_low=True),
        min_calls=integer(data.get("min_calls", d.min_calls), place.key("min_calls"), 0),
        cooldown_s=duration(data.get("cooldown_s", d.cooldown_s), place.key("cooldown_s")),
        probes=integer(data.get("probes", d.probes), place.key("probes"), 1),
        counted=_classes(data["count"], place.key("count")) if "count" in data else DEFAULT_COUNTED,
        **_outliers(data, place, d),
    )


def _outliers(data: Mapping[str, Any], place: Place, d: BreakerConfig) -> dict[str, Any]:
    """Slow calls, growing cool-downs, the share of the pool open at once, success-rate ejection."""

    def get(key: str) -> Any:
        return data.get(key, getattr(d, key))

    out = {
        "slow_call_s": duration(get("slow_call_s"), place.key("slow_call_s")),
        "slow_call_rate": number(get("slow_call_rate"), place.key("slow_call_rate"), 0.0, 1.0),
        "max_cooldown_s": duration(get("max_cooldown_s"), place.key("max_cooldown_s")),
        "max_open_share": number(get("max_open_share"), place.key("max_open_share"), 0.0, 1.0),
        "success_rate_stdev": number(get("success_rate_stdev"), place.key("success_rate_stdev"), 0.0),
        "success_rate_min_endpoints": integer(
            get("success_rate_min_endpoints"), place.key("success_rate_min_endpoints"), 2
        ),
    }
    if out["slow_call_rate"] > 0 and out["slow_call_s"] <= 0:
        place.key("slow_call_s").fail("must be > 0 when slow_call_rate is set (the TTFT above which a call is slow)")
    return out


def retry_config(data: Mapping[str, Any], place: Place) -> RetryConfig:
    d = RetryConfig()
    return RetryConfig(
        max_attempts=integer(data.get("max_attempts", d.max_attempts), place.key("max_attempts"), 1),
        backoff_base_s=duration(data.get("backoff_base_s", d.backoff_base_s), place.key("backoff_base_s")),
        backoff_max_s=duration(data.get("backoff_max_s", d.backoff_max_s), place.key("backoff_max_s")),
        retry_after_max_s=duration(data.get("retry_after_max_s", d.retry_after_max_s), place.key("retry_after_max_s")),
        budget=number(data.get("budget", d.budget), place.key("budget"), 0.0),
        budget_window_s=duration(
            data.get("budget_window_s", d.budget_window_s), place.key("budget_window_s"), open_low=True
        ),
        retry_on=_classes(data["retry_on"], place.key("retry_on")) if "retry_on" in data else DEFAULT_RETRYABLE,
        retry_after_cooldown=flag(data.get("retry_after_cooldown", False), place.key("retry_after_cooldown")),
    )


def _classes(value: Any, place: Place) -> frozenset[ErrorClass]:
    """Error class names (ErrorClass values, any case), `timeout_*`-style globs allowed; each must match one."""
    if not isinstance(value, list):
        place.fail(f"must be a list of error classes like [connect_error, timeout_*, http_5xx], got {show(value)}")
    out: set[ErrorClass] = set()
    for i, item in enumerate(value):
        pattern = text(item, place.item(i)).lower()
        matched = fnmatch.filter(FAILURE_CLASSES, pattern)
        if not matched:
            place.item(i).fail(f"{show(item)} names no error class; use: {', '.join(FAILURE_CLASSES)}")
        out.update(ErrorClass(m) for m in matched)
    return frozenset(out)
