"""Real Locust processes against the real mock: the demo, distributed merging, accuracy, clear errors."""

from __future__ import annotations

import json
import math
import shutil
import time
import urllib.request

import pytest

from loadlib.histogram import RELATIVE_ERROR
from loadlib.mock import MockConfig, start_subprocess
from tests.integration.locust_runs import completed, env, headless, load, locust_cmd, run, run_distributed

pytestmark = pytest.mark.integration  # the tests that time against ground truth are marked `alone` one by one


def locust_total(stats_json: list[dict]) -> int:
    return sum(e["num_requests"] for e in stats_json)


def test_headless_demo_targets_the_embedded_mock(tmp_path):
    summary, stats = tmp_path / "s.json", tmp_path / "locust"
    p = run(locust_cmd(*headless(6, 4), "--llm-summary", str(summary), "--json-file", str(stats)))
    assert p.returncode == 0, p.stderr[-3000:]
    assert "embedded mock LLM server" in p.stdout
    assert "LLM summary of run" in p.stdout and "TTFT" in p.stdout
    s = load(summary)
    total = s["total"]
    assert total["count"] > 10 and total["errors_total"] == 0
    # LLM stats and Locust's own table count the same requests
    assert total["count"] == locust_total(load(str(stats) + ".json"))
    assert total["cost_usd"] > 0 and total["completion_tokens"] > 0
    assert s["client_saturated"] in (True, False), "the saturation verdict is always given"


MERGE_MOCK = "ttft_ms=10,ttft_jitter_ms=5,itl_ms=3,itl_jitter_ms=2,terminal_delay_ms=15"


@pytest.mark.alone
def test_distributed_run_counts_every_request_once_and_merges_within_precision(tmp_path):
    """A real master and two real worker processes; the master starts the embedded mock and the workers follow it.
    Every request is counted once: in Locust's stats, the merged LLM summary and exactly one worker's records file.
    The master's percentiles (stream TPOT and tail included) equal the exact nearest-rank percentiles of all the
    workers' records within the histograms' stated precision."""
    summary, stats, records = tmp_path / "s.json", tmp_path / "locust", tmp_path / "records-{worker}.jsonl"
    rc, err, _ = run_distributed(
        *("-u", "8", "-r", "8", "-t", "5s", "--llm-mock", MERGE_MOCK, "--llm-summary", str(summary)),
        *("--json-file", str(stats), "--llm-records", str(records)),
        timeout=90,
    )
    assert rc == 0, err[-3000:]
    assert_counted_once_and_merged(tmp_path, load(summary), stats, workers=2)


def test_processes_run_keeps_integrity_and_merges_within_precision(tmp_path):
    """Locust's `--processes 2`: one command forks two worker processes under an implicit master. The ledger sees
    both children as workers (integrity OK, both final reports); every request is counted once in Locust's stats,
    the summary and exactly one child's records file; the merged percentiles equal the records' exact ones within
    the histograms' stated precision."""
    summary, stats, records = tmp_path / "s.json", tmp_path / "locust", tmp_path / "records-{worker}.jsonl"
    p = run(
        locust_cmd(
            *("--processes", "2", *headless(8, 4), "--llm-mock", MERGE_MOCK, "--llm-summary", str(summary)),
            *("--json-file", str(stats), "--llm-records", str(records)),
        ),
        timeout=90,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    s = load(summary)
    block = s["integrity"]
    assert block["complete"] and len(block["workers"]) == 2, block
    assert all(w["final_report"] and w["requests"] > 0 for w in block["workers"]), block["workers"]
    assert sum(w["requests"] for w in block["workers"]) == s["total"]["count"], "the ledger saw every attempt"
    assert "run integrity OK: 2 workers" in p.stdout
    assert_counted_once_and_merged(tmp_path, s, stats, workers=2)


def assert_counted_once_and_merged(tmp_path, s: dict, stats, workers: int) -> None:
    """Every request once in Locust's stats, the summary and one worker's records file (`records-*.jsonl`); the
    summary's percentiles equal the records' exact nearest-rank ones within the histograms' stated precision."""
    assert s["total"]["count"] == locust_total(load(str(stats) + ".json")) > 10
    assert s["total"]["errors_total"] == 0
    files = sorted(tmp_path.glob("records-*.jsonl"))
    assert len(files) == workers
    recs = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert len(recs) == s["total"]["count"] == len({r["request_id"] for r in recs})
    lat = s["total"]["latency_ms"]
    for metric in ("ttft", "e2e", "stream_tpot", "stream_tail"):
        values = sorted(r[f"{metric}_ms"] for r in completed(recs) if r[f"{metric}_ms"] is not None)
        assert lat[metric]["count"] == len(values) > 20, metric
        for q in (50, 95, 99):
            exact = values[max(0, math.ceil(q / 100 * len(values)) - 1)]
            assert lat[metric][f"p{q}"] == pytest.approx(exact, rel=2 * RELATIVE_ERROR, abs=1e-3), (metric, q)


def accuracy_run(tmp_path, users: int) -> tuple[dict, dict, str]:
    """One 8 s run of 32 back-to-back streams; returns (latencies, mock stats, what went wrong or "")."""
    summary = tmp_path / f"s-{time.monotonic_ns()}.json"
    with start_subprocess(MockConfig(ttft_ms=200, itl_ms=10, output_tokens=32), cpu=1) as mock:
        p = run(
            locust_cmd(
                *headless(users, 8),
                "--host",
                mock.url + "/v1",
                "--llm-api-key-env",
                "none",
                "--llm-summary",
                str(summary),
                "--only-summary",
                locustfile="bench/locustfile_bench.py",
                pin=0,
            )
        )
        assert p.returncode == 0, p.stderr[-3000:]
        with urllib.request.urlopen(mock.url + "/mock/stats", timeout=5) as r:
            mock_stats = json.load(r)
    lat = load(summary)["total"]["latency_ms"]
    problems = []
    if abs(lat["ttft"]["p50"] - 200) > 2.0:
        problems.append(f"TTFT p50 {lat['ttft']['p50']}")
    if lat["ttft"]["p99"] - 200 > 30.0:
        problems.append(f"TTFT p99 {lat['ttft']['p99']}")
    if abs(lat["tpot"]["p50"] - 10) > 1.0:
        problems.append(f"TPOT p50 {lat['tpot']['p50']}")
    return lat, mock_stats, "; ".join(problems)


@pytest.mark.alone
@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset missing")
def test_ttft_accuracy_against_ground_truth(tmp_path):
    """Smaller version of the benchmark: 32 streams, injected TTFT 200 ms and 10 ms between tokens, mock and
    worker on different cores. Median TTFT within 2 ms, p99 within 30 ms, TPOT within 1 ms; connections reused.

    This shared 2-core machine sometimes stalls a whole process for tens of ms (seen once in a full-suite run,
    never alone), so a failed run is repeated once; a real regression fails both, and both are reported."""
    users = 32
    failures = []
    for _ in range(2):
        lat, mock_stats, problem = accuracy_run(tmp_path, users)
        assert mock_stats["connections_accepted"] <= users + 2, mock_stats
        if not problem:
            return
        failures.append(f"{problem} ({lat['ttft']})")
    pytest.fail("TTFT accuracy out of bounds in both runs: " + " | ".join(failures))


@pytest.mark.parametrize(
    ("args", "extra_env", "needle"),
    [
        (["--llm-provider", "gemini", "--host", "http://127.0.0.1:9/v1"], {}, "unknown provider 'gemini'"),
        (["--host", "htp:/nowhere"], {}, "malformed base URL"),
        (["--host", "https://api.openai.com/v1"], {}, "OPENAI_API_KEY"),
        (
            ["--host", "http://127.0.0.1:9/v1", "--llm-api-key-env", "none", "--llm-price-table", "/nonexistent.yaml"],
            {},
            "/nonexistent.yaml",
        ),
    ],
)
def test_bad_input_is_one_clear_line(args, extra_env, needle):
    start = time.monotonic()
    p = run(locust_cmd("--headless", "-u", "1", "-t", "2s", *args), env=env(**extra_env), timeout=60)
    assert p.returncode != 0
    assert "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and needle in lines[0], p.stderr[-2000:]
    assert time.monotonic() - start < 30


@pytest.mark.parametrize(
    ("mock", "extra", "error_class"),
    [
        ("fault=drop,fault_rate=0.3,fault_at=3", (), "stream_broken"),
        ("fault=stall,fault_rate=0.3,fault_at=3,stall_ms=1500", ("--llm-timeout-idle", "0.3"), "timeout_idle"),
        ("fault=error_event,fault_rate=0.3,fault_at=3", (), "provider_error"),
        ("fault=rate_limit,fault_rate=0.3", (), "rate_limited"),
    ],
)
def test_a_misbehaving_server_is_recorded_and_survived(tmp_path, mock, extra, error_class):
    """Faults at a 30 % rate through a whole headless run: counted by class in the summary and Locust's table, the
    healthy requests still measured, no traceback, no hung user (the run ends on time)."""
    summary, stats = tmp_path / "s.json", tmp_path / "locust"
    start = time.monotonic()
    p = run(
        locust_cmd(
            *headless(6, 4),
            "--llm-summary",
            str(summary),
            "--json-file",
            str(stats),
            "--llm-mock",
            f"ttft_ms=10,itl_ms=2,output_tokens=16,{mock}",
            *extra,
        )
    )
    assert time.monotonic() - start < 40
    assert p.returncode == 1, "failures set Locust's exit code"
    assert "Traceback" not in p.stderr and "Uncaught exception" not in p.stderr, p.stderr[-2000:]
    total = load(summary)["total"]
    assert set(total["errors"]) == {error_class}
    assert 0 < total["errors"][error_class] < total["count"]
    assert total["ok"] == total["count"] - total["errors_total"] - total["cut_off"] > 0
    locust_rows = load(str(stats) + ".json")
    assert sum(e["num_failures"] for e in locust_rows) == total["errors_total"]


def test_python_m_loadlib_help_lists_every_added_option():
    """Locust prints --help before importing the locustfile, so loadlib has its own help for its options."""
    import sys

    p = run([sys.executable, "-m", "loadlib", "--help"], timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    for option in (
        "--llm-provider",
        "--llm-summary",
        "--llm-records",
        "--influx-url",
        "--chat-turns",
        "--doc-mode",
        "--audit-file",
        "--arrival-rate",
    ):
        assert option in p.stdout, option
    assert "--version" not in p.stdout
