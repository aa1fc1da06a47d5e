"""Numbers that stay true behind a gateway, against the real mock's ground truth: stream TPOT and the stream tail
beside TPOT, usage provenance and disagreement, the multimodal flag (docs/metrics.md). Their merge across a real
master and two workers is checked in test_locust_run.py."""

from __future__ import annotations

import gevent.pool

import json
import urllib.request
from pathlib import Path

import pytest

from loadlib.config import Timeouts, make_endpoint
from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary
from loadlib.mock import MockConfig, start_subprocess
from loadlib.providers.base import ChatRequest
from loadlib.providers.registry import get_adapter
from loadlib.records.build import build_record
from loadlib.records.pricing import PriceTable
from loadlib.transport.connection import Connection
from loadlib.transport.stream import stream_call
from tests.integration.locust_runs import headless, load, locust_cmd, run

pytestmark = [pytest.mark.integration, pytest.mark.alone]  # timing-sensitive: run with nothing beside it

LATE_MS = 25.0  # a TTFT this far over the mock's plan was made by the box, not the mock
ITL_MS = 10.0
TAIL_MS = 100.0


def test_terminal_delay_and_over_counted_usage(tmp_path: Path) -> None:
    """A mock that holds [DONE] 100 ms after the last token and reports 1.5x the completion tokens it sent: stream
    TPOT is the injected ITL within 0.1 ms, the tail's p50 within 2 ms of 100 ms, records carry where usage came
    from and that it disagrees with the estimate, and the summary names both causes of the TPOT gap."""
    summary, records = tmp_path / "s.json", tmp_path / "records.jsonl"
    mock = f"ttft_ms=20,itl_ms={ITL_MS},output_tokens=32,terminal_delay_ms={TAIL_MS},usage_completion_scale=1.5"
    p = run(
        locust_cmd(
            *headless(8, 4),
            "--llm-mock",
            mock,
            "--llm-estimate-every",
            "1",
            "--llm-summary",
            str(summary),
            "--llm-records",
            str(records),
            "--only-summary",
        )
    )
    assert p.returncode == 0, p.stderr[-3000:]
    row = load(summary)["total"]
    lat = row["latency_ms"]
    assert lat["stream_tpot"]["count"] > 50
    assert abs(lat["stream_tpot"]["p50"] - ITL_MS) <= 0.1, lat["stream_tpot"]
    assert abs(lat["stream_tail"]["p50"] - TAIL_MS) <= 2.0, lat["stream_tail"]
    expected_tpot = (31 * ITL_MS + TAIL_MS) / (48 - 1)  # 48 tokens reported for 32 sent
    assert lat["tpot"]["p50"] == pytest.approx(expected_tpot, abs=0.3)
    assert row["decode"]["tokens_per_event"] == pytest.approx(47 / 31, rel=1e-3)
    gap = [line for line in p.stdout.splitlines() if line.startswith("TPOT vs stream")]
    assert gap and "stream's tail" in gap[0] and "1.52 tokens per output event" in gap[0], p.stdout[-2000:]
    assert "usage warning" in p.stdout and "completion token counts" in p.stdout
    recs = [json.loads(line) for line in records.read_text().splitlines()]
    ok = [r for r in recs if r["status"] == "ok"]
    assert ok and all(r["usage_source"] == "stream" and r["usage_disagrees"] is True for r in ok)
    assert all(abs(r["stream_tail_ms"] - TAIL_MS) < 10 for r in ok)


def _batch(url: str, model: str, users: int, each: int) -> tuple[dict, int]:
    """`users` greenlets, each on its own kept-alive connection (opened before timing, as a Locust user does), sending
    `each` streamed requests back to back through our transport. Returns the summary row of their records and how
    many arrived over LATE_MS after the TTFT the mock planned (the box stalled: the distribution is not the mock's)."""
    ep = make_endpoint(url + "/v1", provider="openai", model=model, api_key_env="none")
    adapter = get_adapter("openai")
    prices = PriceTable.load()
    kw = {"run_id": "r", "scenario": "s", "endpoint": "mock", "provider": "openai", "model": model}

    def user(u: int) -> list:
        conn = Connection(ep, Timeouts(total=10.0))
        conn.preconnect()
        try:
            return [one(conn, f"{u}-{i}") for i in range(each)]
        finally:
            conn.close()

    def one(conn: Connection, rid: str) -> object:
        req = ChatRequest([{"role": "user", "content": f"question {rid}"}], max_tokens=64)
        with gevent.Timeout(15):
            out = stream_call(conn, adapter, adapter.build(ep.base_path, ep.model, None, req))
        return build_record(out, worker_id="w", request_id=rid, start_unix_ns=1, prices=prices, **kw)

    records = [rec for recs in gevent.pool.Pool(users).imap_unordered(user, range(users)) for rec in recs]
    stats = LLMStats()
    for rec in records:
        stats.add(rec)
    return build_summary(stats, 1.0, None, {})["total"], _late(url, records)


def _late(url: str, records: list) -> int:
    """Requests whose TTFT exceeds the mock's planned one by over LATE_MS (the mock's ground truth, by request id)."""
    with urllib.request.urlopen(f"{url}/mock/truth?limit={len(records)}", timeout=10) as r:
        planned = {t["request_id"]: t["planned_ttft_ms"] for t in json.load(r)["records"]}
    keys = [str(rec.server_request_id).removeprefix("req_") for rec in records]
    return sum(
        1 for rec, k in zip(records, keys, strict=True) if k not in planned or rec.ttft_ms - planned[k] > LATE_MS
    )


def _plain_run(url: str) -> dict:
    """One jittered run the box did not distort: a run with late requests is run again (up to three times), since a
    stall of a few hundred ms makes a real second mode in what was measured, though not in what the mock sent."""
    for _ in range(3):
        row, late = _batch(url, "mock-llm", 20, 6)
        if not late:
            break
    return row


def test_multimodal_flag_on_hidden_retries_off_on_jittered_runs() -> None:
    """A fixed 1 s delay on a fifth of the requests (a gateway's retry) shows as two TTFT modes at the right places;
    ten plain jittered runs of 120 requests each (20 users) show none."""
    with start_subprocess(MockConfig(ttft_ms=30, ttft_jitter_ms=20, itl_ms=2, itl_jitter_ms=1, output_tokens=8)) as m:
        retried, _ = _batch(m.url, "mock-llm::fault=stall,fault_rate=0.2,fault_at=0,stall_ms=1000", 25, 6)
        plain = [_plain_run(m.url) for _ in range(10)]
    modes = retried["modes"]["ttft"]
    assert len(modes) == 2, modes
    assert modes[0]["at_ms"] < 60 and 1000 < modes[1]["at_ms"] < 1070, modes
    assert 0.1 < modes[1]["share"] < 0.3, modes
    assert retried["errors_total"] == 0 and all(r["errors_total"] == 0 and r["count"] == 120 for r in plain)
    assert [r["modes"] for r in plain] == [{}] * 10
