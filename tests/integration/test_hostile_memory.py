"""A firehose stream's memory is bounded (docs/metrics.md, "Memory"): a real Locust process against the hostile
server's firehose-tiny (the most output events per MiB), at a 16 MiB response cap and a 64 Ki-character text cap. Its
ITL list is capped at 4,096 gaps per record while the rest reach the statistics, its text at the cap while the rest
is counted, so the process stays within its idle size, the one-time costs and one stream's stated worst case. The
run ends within 1 s of its -t, and Locust's table, its CSV, the summary and the records count the same attempts.
Numbers are printed (run with -s to see them)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadlib.transport.stream import MAX_ITL
from tests.integration.hostile_runs import Hostile, LiveRun, records
from tests.integration.locust_runs import headless, locust_cmd
from tests.integration.test_hostile import END_MARGIN_S, aggregated_count

pytestmark = [pytest.mark.integration, pytest.mark.alone]  # a stream must reach its cap within -t: CPU-bound
CAP_MIB = 16
RUN_S = 5
TEXT_KB = 64
# Locust with loadlib idle (~135 MiB here), the one-time costs of the first stream (~40 MiB: the tokenizer, the
# parsers) and one stream's worst case at these caps (4 + 2 x 8 + 8 x 64/1024 + 1 MiB), as docs/metrics.md states.
RSS_BOUND_MIB = 135 + 40 + (4 + 2 * 8 + 8 * TEXT_KB / 1024 + 1)


@pytest.fixture
def firehose() -> Iterator[Hostile]:
    server = Hostile("firehose-tiny")
    yield server
    server.stop()


def test_a_firehose_stream_stays_within_its_memory_bound(firehose: Hostile, tmp_path: Path) -> None:
    path, summary, prefix = tmp_path / "records.jsonl", tmp_path / "summary.json", tmp_path / "locust"
    outputs = ["--llm-records", str(path), "--llm-summary", str(summary)]
    outputs += ["--csv", str(prefix), "--json-file", str(prefix)]
    args = ["--host", firehose.url + "/v1", "--llm-api-key-env", "none", "--llm-max-response-mb", str(CAP_MIB)]
    args += ["--llm-max-text-kb", str(TEXT_KB)]
    run = LiveRun(locust_cmd(*headless(1, RUN_S), *args, *outputs), sample_s=0.05)
    try:
        ramp = run.line_at("Ramping to", 60)
        rc = run.wait(60)
    finally:
        run.close()
    took = (run.ended_at or 0.0) - ramp
    recs = records(path)
    locust = sum(entry["num_requests"] for entry in json.loads(Path(f"{prefix}.json").read_text()))
    csv_count, total = aggregated_count(Path(f"{prefix}_stats.csv")), json.loads(summary.read_text())["total"]["count"]
    print(
        f"\nfirehose-tiny, 1 user, -t {RUN_S}s, cap {CAP_MIB} MiB: ended {took:.2f} s after 'Ramping to'; Locust "
        f"{locust} (CSV {csv_count}), summary {total}, records {len(recs)}; peak RSS {run.peak_rss >> 20} MiB"
    )
    assert took <= RUN_S + END_MARGIN_S
    assert locust == csv_count == total == len(recs)
    assert rc in (0, 1) and "Traceback" not in run.stderr, run.stderr[-3000:]
    capped = [r for r in recs if r["status"] == "oversized"]  # the one the run's end cut off is `cut_off`
    assert capped and {r["status"] for r in recs} <= {"oversized", "cut_off"}
    assert all(len(r["itl_ms"]) == MAX_ITL and r["itl_dropped"] > 300_000 for r in capped)
    assert all(r["text_dropped"] > r["output_events"] - TEXT_KB * 1024 - 10 for r in capped)
    assert all(len(r["itl_ms"]) <= MAX_ITL for r in recs)
    assert run.peak_rss < RSS_BOUND_MIB * (1 << 20)
