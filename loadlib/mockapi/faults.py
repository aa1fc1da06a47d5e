"""The timed faults the mock's admin API (`POST /mock/fault`) accepts: kinds, their parameters and the longest window.

A drill of a pool (loadlib/failover/drills_config.py) is checked against the same table the server validates with
(loadlib/mock/faults.py), so a drill the server would refuse fails at start-up instead."""

from __future__ import annotations

FAULT_KINDS = ("refuse", "http_500", "http_503", "stall", "rate_limit", "latency", "broken")
NONE = "none"
MAX_FOR_S = 86400.0
# Parameters each kind takes besides `rate`, with their defaults.
PARAMS: dict[str, dict[str, float]] = {
    "rate_limit": {"retry_after_s": 1.0},
    "latency": {"delay_ms": 1000.0},
    "broken": {"after_tokens": 5},
}
