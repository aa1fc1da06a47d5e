"""Users not in lockstep, on the real engine (docs/metrics.md#users-in-lockstep): 64 users with no think time, all
spawned at once. With their phase off (every first request as Locust spawns it) the starts cluster, the engine
prefills each cluster in one step and hands it back in one, the self-check says so, and TTFT measures our spawn;
with the default phase under a fifth of the start gaps are under 2 ms and TTFT p50 is within a quarter of a plain
asyncio client's whose users start at random over their cycle. Each run's prompts are its own from the first token:
no run reads another's prefix from the cache."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from loadlib.metrics.lockstep import GAP_NS
from tests.integration.engine import phased_client
from tests.integration.engine.conftest import Engine
from tests.integration.engine_load import p50, prompt
from tests.integration.locust_runs import env, locust_cmd, run

pytestmark = pytest.mark.integration
# Answers of 192 tokens: users with no think time whose answers end in the same engine step come back together
# whoever sends them. With m answers ending per step (64 users / 192 steps: 1/3), independent users' share of start
# gaps under 2 ms is about 1 - (1 - e^-m) / m = 15 %; at 128 tokens (m = 1/2) it is 21 %, the asyncio client's own.
USERS, WORDS, OUTPUT, SECONDS, SETTLE_S = 64, 60, 192, 36, 12
LOCUSTFILE = "tests/fixtures/locustfiles/back_to_back.py"
CLUSTER_LINE = "Request starts cluster (users in lockstep)"


def locust_run(engine: Engine, phase: str, number: int, tmp: Path) -> tuple[dict, list[dict], str]:
    """A headless run of USERS users spawned at once, no think time: (its summary, its records, its console)."""
    summary, records = tmp / f"summary-{phase}.json", tmp / f"records-{phase}.jsonl"
    args = ("--headless", "-u", str(USERS), "-r", str(USERS), "-t", f"{SECONDS}s", "--host", engine.url)
    args += ("--llm-model", engine.model, "--llm-api-key-env", "none", "--llm-user-phase", phase)
    args += ("--llm-warmup", f"{SETTLE_S}s", "--llm-summary", str(summary), "--llm-records", str(records))
    environ = env(LOCKSTEP_WORDS=str(WORDS), LOCKSTEP_OUTPUT=str(OUTPUT), LOCKSTEP_RUN=str(number))
    p = run(locust_cmd(*args, locustfile=LOCUSTFILE), timeout=120, env=environ)
    assert p.returncode == 0, p.stderr[-3000:] + p.stdout[-2000:]
    recs = [json.loads(line) for line in records.read_text().splitlines()]
    return json.loads(summary.read_text()), recs, p.stdout + p.stderr


def gap_share(starts_ns: list[int]) -> float:
    gaps = [b - a for a, b in itertools.pairwise(sorted(starts_ns))]
    return sum(g < GAP_NS for g in gaps) / len(gaps)


def independent(engine: Engine, cycle_s: float) -> phased_client.Load:
    """The plain asyncio client, the same requests, its users' first requests at random over `cycle_s`."""

    def body(user: int, index: int) -> dict:
        content = prompt(7000, user, index, WORDS)  # as back_to_back.py's users ask, in a run of its own
        return {
            "model": engine.model,
            "stream": True,
            "max_tokens": OUTPUT,
            "messages": [{"role": "user", "content": content}],
        }

    return phased_client.run(engine.url, body, USERS, SECONDS, phase_s=cycle_s)


def test_users_start_apart_and_the_check_finds_them_in_lockstep(engine: Engine, tmp_path: Path) -> None:
    off, off_records, off_out = locust_run(engine, "off", 9100, tmp_path)
    auto, auto_records, auto_out = locust_run(engine, "auto", 9200, tmp_path)
    cycle_s = auto["total"]["latency_ms"]["e2e"]["p50"] / 1000.0  # no think time: a cycle is an answer
    ref = independent(engine, cycle_s)
    settled = [t for s, t in zip(ref.starts, ref.ttft_ms, strict=True) if s - min(ref.starts) >= SETTLE_S]
    reference = p50(settled)
    ttft = {"off": off["total"]["latency_ms"]["ttft"]["p50"], "auto": auto["total"]["latency_ms"]["ttft"]["p50"]}
    figures = {"off": off["lockstep"], "auto": auto["lockstep"], "ttft_p50": ttft, "asyncio_ttft_p50": reference}
    figures["asyncio_gap_share"] = round(gap_share([int(s * 1e9) for s in ref.starts]), 3)
    print("real-engine lockstep figures:", figures)
    assert off["lockstep"]["clustered"] and CLUSTER_LINE in off_out, figures
    assert not auto["lockstep"]["clustered"] and CLUSTER_LINE not in auto_out, figures
    assert gap_share([r["start_unix_ns"] for r in auto_records]) < 0.2, figures
    assert auto["lockstep"]["share_under_gap"] < 0.2 < off["lockstep"]["share_under_gap"], figures
    assert abs(ttft["auto"] - reference) <= 0.25 * reference, figures
    assert len(off_records) > USERS and len(auto_records) > USERS
