"""Logging that a hostile server cannot flood: a repeated problem is logged once per interval with a count."""

from __future__ import annotations

import logging
from time import monotonic
from typing import Any


class RateLimitedLog:
    """`error(...)` logs at most once per `interval_s` (with its traceback when given), then says how many
    occurrences were not logged since."""

    def __init__(self, logger: logging.Logger, interval_s: float = 30.0) -> None:
        self.logger = logger
        self.interval_s = interval_s
        self.last = -float("inf")
        self.suppressed = 0

    def error(self, message: str, *args: Any, exc_info: BaseException | bool | None = None) -> bool:
        """Log now if the interval has passed since the last line; returns whether it logged."""
        now = monotonic()
        if now - self.last < self.interval_s:
            self.suppressed += 1
            return False
        if self.suppressed:
            message += f" ({self.suppressed} more like it since the last report)"
        self.logger.error(message, *args, exc_info=exc_info)
        self.last, self.suppressed = now, 0
        return True
