"""Closed-loop levels against the batching engine: measured TTFT and TPOT p50 beside what the model predicts.

A real mock process (`--engine batching`, profile h20-8b) pinned to core 0; this client pinned to core 1 runs
1, 8, 32, 64 and 128 closed-loop users in turn, each user sending --rounds requests (its first, the ramp, left
out), then prints per level: the client's p50s, the model's (`loadlib.mock.engine.capacity.closed_level`, the same
simulation behind /mock/capacity, as its client measures: `sim.seen_ms`), their ratio, and whether /metrics counted
the same requests and tokens as the client. The model's client is this one: its link (one way) is half the median
round trip of `GET /health` (each after 10 ms asleep, as a request waits for its first token) measured before each
level, its think time 0 (it sends its next request as it reads the end). "mock late" is how late the mock wrote first
tokens against the model's times, "client lag" how long after that write the client read it, counted from its send
(the link both ways, and a busy client). While the engine is busy both cancel (they delay a user's next request as
much as its reading); a client lag far above 2 x link is a starved client, whose users come back a step late.
"same requests" is the median of each request's TTFT over the model's for the same request (user and number): a
level's TTFTs fall in a few modes (steps with one prefill more or less), and where its median sits between two, a
few requests in the other mode move the p50 by a mode's gap (32 and 64 users: 4 and 7 ms).

    /work/venv/bin/python bench/engine_levels.py [--rounds 10] [--levels 1,8,32,64,128] [--output 32] [--words 60]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from prometheus_client.parser import text_string_to_metric_families

from loadlib.mock import MockConfig, start_subprocess
from loadlib.mock.engine.capacity import closed_level
from loadlib.mock.engine.params import PROFILES
from loadlib.mock.engine.sim import Workload, quantile, seen_ms, solo_e2e_s
from tests.integration.engine_load import closed_loop, link_ms

SPREAD = 0.5  # answers of 50-150 % of --output tokens: users that start together drift apart, as real ones do


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read()


def scrape(base: str) -> dict[str, float]:
    """Counter and histogram-count samples of /metrics, by sample name."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(get(base + "/metrics").decode()):
        for s in family.samples:
            out[s.name] = out.get(s.name, 0.0) + s.value
    return out


def level(base: str, port: int, users: int, rounds: int, words: int, output: int) -> dict[str, float]:
    """One level: run, then compare the measured p50s with the model's and /metrics with the client's counts."""
    params = PROFILES["h20-8b"]
    urllib.request.urlopen(urllib.request.Request(base + "/mock/reset", b"", method="POST"), timeout=10).read()
    link = link_ms(("127.0.0.1", port))
    work = Workload(2 * words + 20, output, output_spread=SPREAD, link_ms=link, think_ms=0.0)
    solo = solo_e2e_s(params, work)
    samples = closed_loop(("127.0.0.1", port), users, 300.0, spread_s=solo, limit=rounds, words=words, work=work)
    records = {r["request_id"]: r for r in json.loads(get(base + "/mock/truth?limit=100000"))["records"]}
    measured = [s for s in samples if s.index > 0]
    late = [records[s.request_id]["first_token_sent_ms"] - records[s.request_id]["planned_ttft_ms"] for s in measured]
    work = dataclasses.replace(work, prompt_tokens=records[samples[0].request_id]["billed_prompt_tokens"])
    model = closed_level(params, work, users, rounds)
    by_request = {s.rid: seen_ms("ttft", s, work) for s in model}
    pairs = [s.ttft_ms / by_request[(s.user, s.index)] for s in measured]
    counts = scrape(base)
    return {
        "users": users,
        "answers": len(measured),
        "ttft": quantile([s.ttft_ms for s in measured], 0.5),
        "late": quantile(late, 0.5),
        "lag": quantile([s.ttft_ms - records[s.request_id]["first_token_sent_ms"] for s in measured], 0.5),
        "ttft_model": quantile([seen_ms("ttft", s, work) for s in model], 0.5),
        "link": link,
        "same": quantile(pairs, 0.5),
        "tpot": quantile([s.tpot_ms for s in measured], 0.5),
        "tpot_model": quantile([seen_ms("tpot", s, work) for s in model], 0.5),
        "metrics_requests": counts.get("vllm:request_success_total", 0.0),
        "client_requests": len(samples),
        "metrics_tokens": counts.get("vllm:generation_tokens_total", 0.0),
        "client_tokens": sum(s.tokens for s in samples),
    }


def show(row: dict[str, float]) -> str:
    return (
        f"{row['users']:>5} {row['answers']:>7} | TTFT p50 {row['ttft']:8.1f} model {row['ttft_model']:8.1f} "
        f"x{row['ttft'] / row['ttft_model']:.3f} (same requests x{row['same']:.3f}) | "
        f"TPOT p50 {row['tpot']:6.2f} model {row['tpot_model']:6.2f} "
        f"x{row['tpot'] / row['tpot_model']:.3f} | link {row['link']:.3f} mock late {row['late']:.2f} "
        f"client lag {row['lag']:.2f} | "
        f"/metrics requests {row['metrics_requests']:.0f}/"
        f"{row['client_requests']} tokens {row['metrics_tokens']:.0f}/{row['client_tokens']}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=10, help="requests per user")
    ap.add_argument("--levels", default="1,8,32,64,128")
    ap.add_argument("--output", type=int, default=32, help="output tokens per answer")
    ap.add_argument("--words", type=int, default=60, help="prompt: 'hello world' this many times (2 tokens each)")
    args = ap.parse_args()
    config = MockConfig(engine="batching", output_tokens=4 * args.output)
    with start_subprocess(config, cpu=0, extra_args=["--truth-events", "16"]) as mock:
        os.sched_setaffinity(0, {1})
        print("users answers | client vs model (ms)")
        for users in (int(x) for x in args.levels.split(",")):
            print(show(level(mock.url, mock.port, users, args.rounds, args.words, args.output)), flush=True)


if __name__ == "__main__":
    main()
