"""`--llm-records`: one JSON line per request attempt with the record's fields and no text (the distributed case,
one file per worker, is in test_locust_run.py)."""

from __future__ import annotations

import json

import pytest

from tests.integration.locust_runs import headless, load, locust_cmd, run

pytestmark = pytest.mark.integration


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_request_is_exported_once_without_text(tmp_path):
    summary, records = tmp_path / "s.json", tmp_path / "records-{run_id}.jsonl"
    p = run(
        locust_cmd(
            *headless(4, 3),
            "--llm-summary",
            str(summary),
            "--llm-records",
            str(records),
            "--llm-mock",
            "ttft_ms=10,itl_ms=2,output_tokens=8",
        )
    )
    assert p.returncode == 0, p.stderr[-2000:]
    s = load(summary)
    (path,) = tmp_path.glob("records-*.jsonl")
    assert s["meta"]["run_id"] in path.name
    rows = lines(path)
    assert len(rows) == s["total"]["count"] > 5
    assert len({r["request_id"] for r in rows}) == len(rows)
    first = rows[0]
    assert first["status"] == "ok" and first["ttft_ms"] > 0 and len(first["itl_ms"]) == 7
    assert first["completion_tokens"] == 8 and first["cost_usd"] > 0
    assert "support assistant" not in path.read_text(), "no prompt text"
