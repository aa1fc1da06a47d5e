"""The printed "fallback quality" lines appear only when some user request was answered by a fallback endpoint: a
weighted pool where nothing failed over printed one per endpoint, read as if a failover had happened."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from loadlib.locust.failover_part import FailoverPart

QUALITY = {
    "checked": 32,
    "ok": 32,
    "schema_valid_share": 1.0,
    "deterministic_share": 1.0,
    "truncated_share": 0.0,
    "output_tokens_p50": 64.0,
    "output_tokens_mean": 64.0,
}


def part() -> FailoverPart:
    hooks = SimpleNamespace(add_listener=lambda listener: None)
    return FailoverPart(SimpleNamespace(endpoint_event=hooks, worker_health=hooks), sinks=None)


def summary(failed_over: int) -> dict[str, Any]:
    users = {"requests": 98, "errors": 0, "error_rate": 0.0, "attempts": 98, "attempts_per_request": 1.0}
    users |= {"retried": 0, "hedged": 0, "hedged_won": 0, "failed_over": failed_over}
    quality = {name: QUALITY for name in ("fast", "middle", "slow")}
    return {"failover": {"user_requests": users, "breakers": {}, "drills": [], "quality": quality}}


def test_a_weighted_pool_where_nothing_failed_over_prints_no_fallback_quality() -> None:
    printed = part().lines(summary(failed_over=0))
    assert len(printed) == 1 and printed[0].startswith("User-visible requests: 98 (0 failed, 0.00 %)")


def test_once_a_fallback_answered_every_checked_endpoint_has_its_line() -> None:
    printed = part().lines(summary(failed_over=3))
    assert [line.split(":")[0] for line in printed[1:]] == [f"fallback quality {n}" for n in ("fast", "middle", "slow")]
