"""Users in lockstep against the batching engine (docs/metrics.md#users-in-lockstep), with real Locust runs over
loopback. The engine steps as vLLM does: the requests that arrive during a step are prefilled together in the next,
and answers of one length end together, so users that started together stay together. With the phase off (every
user's first request as Locust spawns it: the behaviour before the phase existed) the starts cluster, the self-check
says so and TTFT is the spawn's; with the default phase the check is silent, under a fifth of the start gaps are under
2 ms, and TTFT p50 is within 25 % of a plain asyncio client whose users start at random phases over their cycle.

The engine's step hardly grows with the batch (a large model at small batches: 25 ms a step, 0.1 ms more per
sequence), so a request's TTFT is two steps plus the prefills that share its step. With the default profile a step
doubles from an idle engine to a full batch: a client's own ramp then reorders its users, and TTFT p50 hops between
the levels of one, two or three prefills a step with the draw of the phases, in either client."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import pytest

from loadlib.metrics.lockstep import GAP_NS
from loadlib.mock import MockConfig, MockProcess, start_subprocess
from loadlib.mock.engine.sim import Workload
from tests.integration.engine_load import closed_loop, p50
from tests.integration.locust_runs import env, headless, load, locust_cmd, run

pytestmark = [pytest.mark.integration, pytest.mark.alone]  # timing-sensitive: run with nothing beside it
USERS, WORDS, OUTPUT, SECONDS = 24, 50, 48, 12  # prompts of about 120 tokens; answers of 48 tokens, all alike
SETTLE_S = 5  # TTFT is compared after it: the first cycles (the clients' ramps, the phase's second part) left out
ENGINE = MockConfig(engine="batching", output_tokens=512, prefix_caching="off", step_base_ms=25, decode_ms_per_seq=0.1)
LOCUSTFILE = "tests/fixtures/locustfiles/back_to_back.py"
CLUSTER_LINE = "Request starts cluster (users in lockstep)"


def locust_run(mock: MockProcess, phase: str, tmp: Path) -> tuple[dict, list[dict], str]:
    """A headless run of USERS users all spawned at once: (its summary, its records, its console)."""
    summary, records = tmp / f"summary-{phase}.json", tmp / f"records-{phase}.jsonl"
    args = ("--host", mock.url + "/v1", "--llm-api-key-env", "none", "--llm-user-phase", phase)
    args += ("--llm-warmup", f"{SETTLE_S}s", "--llm-summary", str(summary), "--llm-records", str(records))
    cmd = locust_cmd(*headless(USERS, SECONDS), *args, locustfile=LOCUSTFILE)
    p = run(cmd, timeout=60, env=env(LOCKSTEP_WORDS=str(WORDS), LOCKSTEP_OUTPUT=str(OUTPUT)))
    assert p.returncode == 0, p.stderr[-3000:]
    return load(summary), [json.loads(line) for line in records.read_text().splitlines()], p.stdout + p.stderr


def gap_share(records: list[dict]) -> float:
    """The share of start gaps under 2 ms, from the records themselves (one node: one clock)."""
    starts = sorted(r["start_unix_ns"] for r in records)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    return sum(g < GAP_NS for g in gaps) / len(gaps)


def independent_ttft_p50(mock: MockProcess, cycle_s: float) -> float:
    """TTFT p50 of the plain asyncio client after SETTLE_S, its users' first requests at random over `cycle_s`:
    independent users, each somewhere in its cycle."""
    rng = random.Random(1)
    phases = [rng.uniform(0.0, cycle_s) for _ in range(USERS)]
    work = Workload(output_tokens=OUTPUT)
    samples = closed_loop(("127.0.0.1", mock.port), USERS, SECONDS, phases=phases, words=WORDS, work=work)
    return p50([s.ttft_ms for s in samples if s.sent_s >= SETTLE_S])


def test_users_in_lockstep_are_found_and_the_phase_parts_them(tmp_path: Path) -> None:
    with start_subprocess(ENGINE) as mock:
        off, off_records, off_out = locust_run(mock, "off", tmp_path)
        auto, auto_records, auto_out = locust_run(mock, "auto", tmp_path)
        cycle_s = auto["total"]["latency_ms"]["e2e"]["p50"] / 1000.0  # no think time: a cycle is an answer
        reference = independent_ttft_p50(mock, cycle_s)
    ttft = {"off": off["total"]["latency_ms"]["ttft"]["p50"], "auto": auto["total"]["latency_ms"]["ttft"]["p50"]}
    figures = {"off": off["lockstep"], "auto": auto["lockstep"], "ttft_p50": ttft, "asyncio_ttft_p50": reference}
    print("lockstep figures:", figures)
    for summary, records in ((off, off_records), (auto, auto_records)):
        assert summary["lockstep"]["gaps"] == len(records) - 1, "every attempt's start (the warm-up's too), one node"
        assert summary["lockstep"]["share_under_gap"] == pytest.approx(gap_share(records), abs=1e-4)
    assert off["lockstep"]["clustered"] and off["lockstep"]["share_under_gap"] > 0.5, figures
    assert CLUSTER_LINE in off_out and "--llm-user-phase auto" in off_out
    assert not auto["lockstep"]["clustered"] and auto["lockstep"]["share_under_gap"] < 0.2, figures
    assert CLUSTER_LINE not in auto_out
    assert abs(ttft["auto"] - reference) <= 0.25 * reference, figures
    assert ttft["off"] > 2 * ttft["auto"], figures
