"""--llm-warmup end to end (docs/metrics.md#warm-up): a real Locust run against the real mock over HTTP. The requests
that started inside the warm-up are left out of the statistics and counted in the summary's `warmup`; with the ones
the statistics kept they are every attempt the records file holds and every request the mock served (its truth);
rates are per second of the run less the warm-up."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from loadlib.mock import MockConfig, start_subprocess
from tests.integration.locust_runs import headless, load, locust_cmd, run


def test_the_warmup_is_left_out_and_counted(tmp_path: Path) -> None:
    with start_subprocess(MockConfig(ttft_ms=10, itl_ms=2, output_tokens=4)) as mock:
        out, records = tmp_path / "s.json", tmp_path / "r.jsonl"
        args = ("--host", mock.url + "/v1", "--llm-api-key-env", "none", "--llm-warmup", "2s")
        args += ("--llm-summary", str(out), "--llm-records", str(records))
        proc = run(locust_cmd(*headless(4, 5), *args), timeout=60)
        with urllib.request.urlopen(f"{mock.url}/mock/stats", timeout=10) as r:
            served = json.loads(r.read())["requests"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    s = load(out)
    w, total = s["warmup"], s["total"]
    assert w["spec"] == "2s" and w["ended"] and abs(w["seconds"] - 2.0) < 0.05, w
    assert w["excluded_requests"] > 10 and total["count"] > 10, (w, total["count"])
    lines = records.read_text().splitlines()
    assert w["excluded_requests"] + total["count"] == len(lines), "every attempt is counted once, kept or left out"
    assert 0 <= len(lines) - served <= 1 + (total.get("cut_off") or 0), "the mock served them (the end cuts some off)"
    start_ns = min(json.loads(line)["start_unix_ns"] for line in lines)
    late = sum(json.loads(line)["start_unix_ns"] >= start_ns + 2.2e9 for line in lines)
    assert total["count"] >= late, "every request that started after the warm-up counts"
    assert abs(s["duration_s"] - (s["meta"]["duration_s"] - w["seconds"])) < 0.01, "the run less its warm-up"
    assert abs(total["requests_per_s"] - total["count"] / s["duration_s"]) < 0.01
    assert f"Warm-up left out (--llm-warmup 2s): 2.0 s, {w['excluded_requests']} requests" in proc.stderr + proc.stdout
