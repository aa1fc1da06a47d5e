"""Locust's --csv files as they stand at the end of the run.

Locust's CSV writer rewrites PREFIX_stats.csv, _failures.csv and _exceptions.csv every second and never at exit, so
they missed the run's last second (and every attempt cut off by its end): 8 requests against 9 in the table, the
summary and the records. At quit, after the last reports, they are written once more with Locust's own StatsCSV,
each to a new file moved into place: Locust's writer still holds the old file open and may flush into it at close,
which must not scribble over the final one. The history file (_stats_history.csv) only appends and is left alone.
"""

from __future__ import annotations

from locust.stats import PERCENTILES_TO_REPORT, StatsCSV

import csv
import logging
import os
from collections.abc import Callable
from typing import Any

log = logging.getLogger("loadlib")


def write_final_csv(environment: Any, prefix: str | None) -> None:
    """Rewrite Locust's three snapshot CSV files under `prefix` (nothing without --csv); a failure is logged."""
    if not prefix:
        return
    writer = StatsCSV(environment, PERCENTILES_TO_REPORT)
    for suffix, write in (
        ("_stats.csv", writer.requests_csv),
        ("_failures.csv", writer.failures_csv),
        ("_exceptions.csv", writer.exceptions_csv),
    ):
        try:
            _replace(f"{prefix}{suffix}", write)
        except OSError as exc:
            log.error("loadlib: could not write the final %s%s (%s)", prefix, suffix, exc)


def _replace(path: str, write: Callable[[Any], None]) -> None:
    """Write through a temporary file in the same directory, then move it over `path` (a new inode)."""
    tmp = f"{path}.final.tmp"
    with open(tmp, "w", newline="") as f:
        write(csv.writer(f))
    os.replace(tmp, path)
