"""The toys of docs/extending.md in a real Locust process: the toy scenario's users against the embedded mock, with
the toy sink registered by the locustfile (tests/support/toys). Its section reaches the summary file and the printed
block, and the sink receives one line per request record."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.integration.locust_runs import env, headless, load, locust_cmd, run


def test_a_toy_scenario_and_sink_in_a_headless_run(tmp_path: Path) -> None:
    summary, lines = tmp_path / "summary.json", tmp_path / "toy.jsonl"
    cmd = locust_cmd(*headless(2, 3), "--llm-summary", str(summary), locustfile="tests/support/toys/locustfile.py")
    started = time.monotonic()
    p = run(cmd, timeout=60, env=env(TOY_SINK_FILE=str(lines)))
    assert time.monotonic() - started < 15
    assert p.returncode == 0, p.stderr[-3000:]
    s = load(summary)
    toy = s["scenarios"]["toy_quiz"]
    assert toy["answers"] > 0 and toy["chars_per_answer"] > 0
    assert f"toy_quiz: {toy['answers']:,} answers" in p.stdout + p.stderr
    received = [json.loads(line) for line in lines.read_text().splitlines()]
    assert len(received) == s["total"]["count"] >= toy["answers"]
    assert {r["scenario"] for r in received} == {"toy_quiz"}
    statuses = {r["status"] for r in received}
    assert "ok" in statuses and statuses <= {"ok", "cut_off"}, statuses  # cut_off: in flight at -t
