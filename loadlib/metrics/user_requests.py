"""Statistics of user-visible requests (docs/metrics.md, "Attempts and user-visible requests").

A user-visible request is one question a user asked, however many attempts it took (retries, a hedge). Attempts are
counted in loadlib.metrics.stats and in Locust's own table; this collection counts the other population, so the
summary can show both without counting anything twice: requests and their outcomes by class, attempts they used,
retries and hedges, answers a hedge won and failed-over answers (never both: docs/failover.md, "Hedging"), and TTFT
and E2E as the user saw them (successful requests only, as for attempts). Mergeable like LLMStats: workers ship, the
master merges.
"""

from __future__ import annotations

from typing import Any

from loadlib.errors import ErrorClass
from loadlib.histogram import Histogram
from loadlib.records.user_request import UserRequest

_COUNTS = ("requests", "ok", "attempts", "retried", "hedged", "hedged_won", "failed_over")


class UserRequestStats:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.counts = dict.fromkeys(_COUNTS, 0)
        self.errors: dict[str, int] = {}
        self.by_endpoint: dict[str, int] = {}
        self.ttft = Histogram()
        self.e2e = Histogram()

    def add(self, user: UserRequest) -> None:
        c = self.counts
        c["requests"] += 1
        c["attempts"] += user.attempts
        c["retried"] += user.attempts > 1 and not user.hedged
        c["hedged"] += user.hedged
        endpoint = user.endpoint or "none"
        self.by_endpoint[endpoint] = self.by_endpoint.get(endpoint, 0) + 1
        if user.status is not ErrorClass.OK:
            self.errors[user.status.value] = self.errors.get(user.status.value, 0) + 1
            return
        c["ok"] += 1
        c["hedged_won"] += user.hedged_won
        c["failed_over"] += user.failed_over
        self.e2e.record(user.e2e_ms)
        if user.ttft_ms is not None:
            self.ttft.record(user.ttft_ms)

    def serialize(self) -> dict[str, Any]:
        return {
            "counts": dict(self.counts),
            "errors": dict(self.errors),
            "by_endpoint": dict(self.by_endpoint),
            "ttft": self.ttft.to_dict(),
            "e2e": self.e2e.to_dict(),
        }

    def merge_serialized(self, data: dict[str, Any]) -> None:
        for key, n in data["counts"].items():
            self.counts[key] = self.counts.get(key, 0) + int(n)
        for mine, theirs in ((self.errors, data["errors"]), (self.by_endpoint, data["by_endpoint"])):
            for key, n in theirs.items():
                mine[key] = mine.get(key, 0) + int(n)
        self.ttft.merge(Histogram.from_dict(data["ttft"]))
        self.e2e.merge(Histogram.from_dict(data["e2e"]))

    def summary(self, attempts_counted: int) -> dict[str, Any]:
        """The figures for the summary; `attempts_counted` is the attempt population's total (LLM statistics), so
        a reader sees both numbers side by side."""
        c = self.counts
        n = c["requests"]
        errors = n - c["ok"]
        return {
            **c,
            "errors": errors,
            "error_rate": errors / n if n else None,
            "errors_by_class": dict(sorted(self.errors.items())),
            "answered_by": dict(sorted(self.by_endpoint.items())),
            "attempts_per_request": c["attempts"] / n if n else None,
            "attempt_records": attempts_counted,
            "ttft_ms": _percentiles(self.ttft),
            "e2e_ms": _percentiles(self.e2e),
        }


def _percentiles(h: Histogram) -> dict[str, float | None]:
    p50, p95, p99 = h.percentiles((50, 95, 99))
    return {"p50": p50, "p95": p95, "p99": p99, "count": h.count}
