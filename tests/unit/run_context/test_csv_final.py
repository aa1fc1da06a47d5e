"""Locust's --csv snapshot files are written once more at quit (loadlib.locust.csv_final), so they hold every request
the final table does, even while Locust's own writer still has the old files open."""

from __future__ import annotations

from locust.env import Environment
from locust.stats import PERCENTILES_TO_REPORT, StatsCSVFileWriter

import csv
from pathlib import Path

from loadlib.locust.csv_final import write_final_csv


def aggregated(path: Path) -> int:
    with path.open(newline="") as f:
        return next(int(r["Request Count"]) for r in csv.DictReader(f) if r["Name"] == "Aggregated")


def test_the_final_csv_counts_every_request_and_locusts_late_flush_cannot_spoil_it(tmp_path: Path) -> None:
    env = Environment()
    prefix = str(tmp_path / "run")
    locusts = StatsCSVFileWriter(env, PERCENTILES_TO_REPORT, prefix)
    locusts.requests_csv(locusts.requests_csv_writer)  # its last snapshot, one second before the end
    env.stats.log_request("primary", "chat", 120.0, 10)
    env.stats.log_request("primary", "chat (cut off)", 900.0, 10)
    env.stats.log_error("primary", "chat", "http_5xx: HTTP 503")
    write_final_csv(env, prefix)
    locusts.close_files()  # flushes its stale buffer into the file it opened, which is no longer the one at the path
    assert aggregated(Path(f"{prefix}_stats.csv")) == 2
    assert "http_5xx" in Path(f"{prefix}_failures.csv").read_text()
    assert not list(tmp_path.glob("*.tmp"))


def test_without_csv_nothing_is_written(tmp_path: Path) -> None:
    write_final_csv(Environment(), None)
    assert not list(tmp_path.iterdir())
