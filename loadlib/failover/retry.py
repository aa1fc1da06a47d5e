"""Retries of a user-visible request (docs/failover.md, "Retries"): how long to wait before one, and the budget that
keeps a storm of failures from multiplying the load. Runs once per attempt: every call is O(1)."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any

from loadlib.errors import ErrorClass

DEFAULT_RETRYABLE = frozenset(
    {
        ErrorClass.CONNECT_ERROR,
        ErrorClass.TIMEOUT_CONNECT,
        ErrorClass.TIMEOUT_TTFT,
        ErrorClass.HTTP_5XX,
        ErrorClass.STREAM_BROKEN,
        ErrorClass.RATE_LIMITED,
    }
)

BUCKETS = 10  # the budget's window is split into this many time buckets
_MAX_DOUBLINGS = 60  # 2 ** 60 x any sane base is past any cap; keeps the float conversion from overflowing


@dataclass(frozen=True, slots=True)
class RetryConfig:
    """`max_attempts` 1 means no retries (the default: a load test measures the endpoint, not a client's retries)."""

    max_attempts: int = 1
    backoff_base_s: float = 0.1
    backoff_max_s: float = 2.0
    retry_after_max_s: float = 10.0
    budget: float = 0.2
    budget_window_s: float = 10.0
    retry_on: frozenset[ErrorClass] = field(default=DEFAULT_RETRYABLE)
    retry_after_cooldown: bool = False  # an endpoint that asked for a wait gets no new request until it is over


# -- waiting -----------------------------------------------------------------------------------------------------------


def backoff_s(attempt: int, config: RetryConfig, rng: random.Random) -> float:
    """Exponential backoff with full jitter after attempt number `attempt` (1 = the first) failed: a uniform draw
    from [0, min(backoff_max_s, backoff_base_s * 2 ** (attempt - 1))). Full jitter spreads the retries of clients
    that failed together, so they do not come back in a wave."""
    doublings = min(max(attempt - 1, 0), _MAX_DOUBLINGS)
    return rng.random() * min(config.backoff_max_s, config.backoff_base_s * (1 << doublings))


def retry_after_s(headers: Mapping[str, str], now_unix: float) -> float | None:
    """The wait the server asked for, in seconds: `retry-after-ms` (milliseconds, OpenAI's) wins over `retry-after`
    (delta seconds, fractions accepted, or an HTTP-date). Header names are lower-case. A time in the past is 0.0;
    absent or unparseable is None (then the caller backs off on its own)."""
    ms = _number(headers.get("retry-after-ms"))
    if ms is not None:
        return max(0.0, ms / 1000.0)
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is None:
        seconds = _http_date_in(value, now_unix)
    return None if seconds is None else max(0.0, seconds)


def _number(value: str | None) -> float | None:
    """A finite number, or None (absent, garbage, nan, inf)."""
    if value is None:
        return None
    try:
        x = float(value)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _http_date_in(value: str, now_unix: float) -> float | None:
    """Seconds from `now_unix` to an HTTP-date (a date without a zone is taken as UTC), or None."""
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp() - now_unix


def wait_before_retry(
    attempt: int, headers: Mapping[str, str], config: RetryConfig, rng: random.Random, now_unix: float
) -> float:
    """Seconds to wait before retrying after attempt `attempt` failed with `headers`: the server's Retry-After,
    capped at `retry_after_max_s` (a server asking for minutes must not stall the test), else the backoff."""
    asked = asked_wait_s(headers, config, now_unix)
    return backoff_s(attempt, config, rng) if asked is None else asked


def asked_wait_s(headers: Mapping[str, str], config: RetryConfig, now_unix: float) -> float | None:
    """The server's Retry-After capped at `retry_after_max_s`, or None when it asked for nothing."""
    asked = retry_after_s(headers, now_unix) if headers else None
    return None if asked is None else min(asked, config.retry_after_max_s)


# -- budget ------------------------------------------------------------------------------------------------------------


class RetryBudget:
    """Extra attempts (retries and hedges) at most `ratio` x user-visible requests over the last `window_s` seconds.

    Both counts live in the same ring of `BUCKETS` time buckets (the window is the current bucket plus the nine
    before it: between 0.9 and 1.0 x `window_s`), and an extra attempt goes only if, counted over that ring,
    `spent + 1 <= ratio * requests`. O(1) amortised per call.

    Bounds (exact, up to the float rounding of `ratio * requests`):
    - Over the whole run, at every instant: spent <= ratio x requests, so attempts <= (1 + ratio) x user-visible
      requests, however many windows a storm lasts. Bucket rounding does not loosen this: a spend at t is checked
      against the ring starting at some t0, and by induction spent(< t0) <= ratio x requests(< t0); adding the ring's
      own check gives spent(<= t) <= ratio x requests(<= t).
    - Over any stretch [a, b]: spent([a, b]) <= ratio x requests([a - window_s, b]); the same induction stops at the
      first ring reaching back past a, and a ring is at most one window long. So a burst of spending can lean on at
      most one window of earlier requests, never more.
    """

    def __init__(self, ratio: float, window_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.ratio = ratio
        self.clock = clock
        self._width = (window_s if window_s > 0 else 1.0) / BUCKETS
        self._head = int(clock() // self._width)  # number of the current bucket
        self._requests = [0] * BUCKETS
        self._spent = [0] * BUCKETS
        self.window_requests = self.window_spent = 0
        self.requests = self.spent = self.refused = 0

    def request(self) -> None:
        """A user-visible request started: it earns `ratio` of an extra attempt for the next window."""
        self._advance(self.clock())
        self._requests[self._head % BUCKETS] += 1
        self.window_requests += 1
        self.requests += 1

    def try_spend(self) -> bool:
        """May one extra attempt go now? If yes it is counted as spent."""
        self._advance(self.clock())
        if self.window_spent + 1 > self.ratio * self.window_requests:
            self.refused += 1
            return False
        self._spent[self._head % BUCKETS] += 1
        self.window_spent += 1
        self.spent += 1
        return True

    def snapshot(self) -> dict[str, Any]:
        """Totals since the start: user-visible requests, extra attempts spent and refused."""
        return {"requests": self.requests, "spent": self.spent, "refused": self.refused}

    def _advance(self, now: float) -> None:
        """Move the ring to `now`, dropping the buckets that left the window (a clock going back stays put)."""
        n = int(now // self._width)
        if n <= self._head:
            return
        for k in range(self._head + 1, min(n, self._head + BUCKETS) + 1):
            i = k % BUCKETS
            self.window_requests -= self._requests[i]
            self.window_spent -= self._spent[i]
            self._requests[i] = self._spent[i] = 0
        self._head = n
