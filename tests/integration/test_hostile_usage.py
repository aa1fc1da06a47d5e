"""Usage from a real server process (loadlib.mock.hostile_usage) through a real Locust run.

Impossible usage: each response of the `impossible-usage` mix is `ok` with `usage_rejected` naming the fields and
values (docs/metrics.md, "Tokens and cost"), Locust's table, its CSV, the summary and the records count the same
attempts, and no cost is computed from the impossible numbers (cached_tokens 1,000,000 of a 10-token prompt priced a
run 16,700 times too high, issue 23). Anthropic streams that end before message_delta (broken, cut off by the run's
end) count the estimate of their output, never message_start's provisional output_tokens 1 (issue 36)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from loadlib.mock.hostile_usage import (
    BROKEN,
    COMPLETION,
    PARTIAL_TEXT,
    PROMPT,
    SLOW_PAUSE_S,
    START_CACHED,
    START_PROMPT,
)
from loadlib.records.pricing import PriceTable
from loadlib.records.tokens import count_text
from tests.integration.hostile_runs import Hostile, records
from tests.integration.locust_runs import headless
from tests.integration.test_hostile import aggregated_count

pytestmark = pytest.mark.integration

RUN_S = 4
END_MARGIN_S = 1.0  # the run ends within this of its -t
RSS_BOUND_MIB = 400  # peak RSS of a 2-user Locust process on short, well-formed streams
MODEL = "gpt-4o"  # priced, so every record has a cost
PRICE = PriceTable.load(None).price(MODEL)
REASONS = {  # what each response of the mix must be rejected with; the control is not rejected at all
    "impossible-cached": f"usage.prompt_tokens_details.cached_tokens=1000000 > usage.prompt_tokens={PROMPT}",
    "impossible-reasoning": "usage.completion_tokens_details.reasoning_tokens=500"
    f" > usage.completion_tokens={COMPLETION}",
    "total-mismatch": f"usage.total_tokens=99 != usage.prompt_tokens={PROMPT} + usage.completion_tokens={COMPLETION}",
    "possible-usage": None,
}


def test_impossible_usage_is_rejected_named_counted_and_never_priced(hostile, live, tmp_path: Path) -> None:
    server = hostile("impossible-usage")
    path, summary, prefix = tmp_path / "records.jsonl", tmp_path / "summary.json", tmp_path / "locust"
    target = ["--host", server.url + "/v1", "--llm-api-key-env", "none", "--llm-model", MODEL]
    outputs = ["--llm-records", str(path), "--llm-summary", str(summary), "--json-file", str(prefix)]
    outputs += ["--csv", str(prefix)]
    run = live(*target, *headless(2, RUN_S), *outputs)
    ramp = run.line_at("Ramping to", 60)
    rc = run.wait(60)
    assert run.ended_at is not None
    recs = records(path)
    total = json.loads(summary.read_text())["total"]
    locust_count = sum(entry["num_requests"] for entry in json.loads(Path(f"{prefix}.json").read_text()))
    csv_count = aggregated_count(Path(f"{prefix}_stats.csv"))
    kinds = Counter(kind_of(r) for r in recs if kind_of(r))
    print(
        f"\nimpossible-usage -t {RUN_S}s -u 2: ended {run.ended_at - ramp:.2f} s after 'Ramping to', peak RSS "
        f"{run.peak_rss / 2**20:.0f} MiB; Locust {locust_count} (CSV {csv_count}), summary {total['count']}, "
        f"records {len(recs)}: "
        f"{dict(kinds)}; usage_rejected {total['usage_rejected']}, cost ${total['cost_usd']:.6f}"
    )
    assert run.ended_at - ramp <= RUN_S + END_MARGIN_S
    assert run.peak_rss < RSS_BOUND_MIB << 20
    assert rc in (0, 1) and "Traceback" not in run.stderr, run.stderr[-3000:]
    assert locust_count == csv_count == total["count"] == len(recs) > 0
    assert set(kinds) == set(REASONS), kinds
    statuses = Counter(r["status"] for r in recs)
    assert statuses["ok"] >= len(recs) - 2 and set(statuses) <= {"ok", "cut_off"}, statuses  # -t ends 2 streams
    assert total["usage_rejected"] == sum(1 for r in recs if r["usage_rejected"]) >= len(recs) // 2
    for r in recs:
        check_record(r)
    assert total["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in recs))


def kind_of(r: dict) -> str | None:
    """The behaviour the response came from: the server's id is NAME-N; None for a stream the end of the run cut off
    before its head arrived."""
    server_id = r["server_request_id"]
    return server_id.rsplit("-", 1)[0] if server_id else None


def check_record(r: dict) -> None:
    """ok, rejected with the documented reason, and priced from the counts kept (or the estimates), never from the
    impossible ones: at most what the prompt and completion it holds cost at the full input and output prices. A
    stream the end of the run cut off (`cut_off`) was rejected only if its usage had arrived."""
    kind = kind_of(r)
    if kind is None:  # cut off before the head: nothing arrived to reject or to price but the prompt
        assert r["status"] == "cut_off" and r["usage_rejected"] is None, r
        return
    if r["status"] == "cut_off":
        assert r["usage_rejected"] in (REASONS[kind], None), r
    else:
        assert r["status"] == "ok" and r["error_message"] is None, r
        assert r["usage_rejected"] == REASONS[kind], r
    if kind == "impossible-cached" and r["status"] == "ok":
        assert r["cached_prompt_tokens"] is None and r["prompt_tokens"] is None and r["completion_tokens"] == COMPLETION
    if kind == "possible-usage" and r["status"] == "ok":
        assert (r["prompt_tokens"], r["cached_prompt_tokens"], r["reasoning_tokens"]) == (PROMPT, PROMPT, COMPLETION)
    prompt = r["prompt_tokens"] if r["prompt_tokens"] is not None else r["prompt_tokens_est"]
    completion = r["completion_tokens"] if r["completion_tokens"] is not None else r["completion_tokens_est"]
    assert prompt is not None and completion is not None, r
    bound = (prompt * PRICE.input + completion * PRICE.output) / 1_000_000
    assert r["cost_usd"] is not None and 0 < r["cost_usd"] <= bound * (1 + 1e-9), (r["cost_usd"], bound, r)


ANTHROPIC_MODEL = "claude-sonnet-4"  # priced, with a cached-input price
ANTHROPIC_PRICES = PriceTable.load(None)
PARTIAL_ESTIMATE = count_text("".join(PARTIAL_TEXT))  # 5: what the OpenAI route estimates of the same broken stream


def anthropic_run(hostile, live, tmp_path: Path, behaviour: str) -> tuple[list[dict], dict, Hostile, int, str]:
    """A 2-user run of RUN_S against `behaviour` with --llm-provider anthropic: the records, the summary's total, the
    server, the exit code and Locust's stderr."""
    server = hostile(behaviour)
    path, summary = tmp_path / "records.jsonl", tmp_path / "summary.json"
    target = ["--host", server.url, "--llm-provider", "anthropic", "--llm-api-key-env", "none"]
    outputs = ["--llm-records", str(path), "--llm-summary", str(summary)]
    run = live(*target, "--llm-model", ANTHROPIC_MODEL, *headless(2, RUN_S), *outputs)
    ramp = run.line_at("Ramping to", 60)
    rc = run.wait(60)
    assert run.ended_at is not None and run.ended_at - ramp <= RUN_S + END_MARGIN_S
    return records(path), json.loads(summary.read_text())["total"], server, rc, run.stderr


def check_start_usage_only(r: dict) -> None:
    """The prompt is message_start's (input 4 + cache read 6), the completion our estimate, never its placeholder 1;
    the cost is theirs."""
    assert (r["prompt_tokens"], r["cached_prompt_tokens"], r["cache_write_tokens"]) == (START_PROMPT, START_CACHED, 0)
    assert r["completion_tokens"] is None and r["usage_source"] == "stream_start", r
    cost = ANTHROPIC_PRICES.cost(ANTHROPIC_MODEL, START_PROMPT, r["completion_tokens_est"], START_CACHED, 0)
    assert r["cost_usd"] == pytest.approx(cost), r


def test_anthropic_stream_broken_before_message_delta_counts_its_estimate(hostile, live, tmp_path: Path) -> None:
    """message_start (output_tokens 1), five text deltas, the connection lost: the attempt's completion is the
    estimate of the five deltas (as the OpenAI route counts the same stream), not message_start's placeholder."""
    recs, total, server, rc, stderr = anthropic_run(hostile, live, tmp_path, "anthropic-broken")
    injected = server.stats()["injected"].get(BROKEN, 0)
    broken = [r for r in recs if r["status"] == "stream_broken"]
    print(
        f"\nanthropic-broken -t {RUN_S}s -u 2: records {len(recs)} ({len(broken)} stream_broken, {injected} broken by "
        f"the server), completion tokens {total['completion_tokens']}, cost ${total['cost_usd']:.6f}, rc {rc}"
    )
    assert "Traceback" not in stderr, stderr[-3000:]
    assert {r["status"] for r in recs} <= {"stream_broken", "cut_off"} and 0 < len(broken) <= injected <= len(recs)
    for r in broken:
        assert r["error_message"].startswith("connection lost mid-stream"), r
        assert r["completion_tokens_est"] == PARTIAL_ESTIMATE == 5, r
        check_start_usage_only(r)
    for r in recs:
        if r["status"] == "cut_off" and r["server_request_id"]:  # the run's end cut it after message_start
            check_start_usage_only(r)
    assert total["completion_tokens"] == sum(r["completion_tokens_est"] or 0 for r in recs)
    assert total["cost_usd"] == pytest.approx(sum(r["cost_usd"] or 0.0 for r in recs))


def test_anthropic_stream_cut_off_by_the_run_end_counts_its_estimate(hostile, live, tmp_path: Path) -> None:
    """A slow stream that never reaches message_delta, cut off by -t: its completion is the estimate of the deltas
    that arrived (a few per second of the run), not message_start's placeholder."""
    recs, total, _, rc, stderr = anthropic_run(hostile, live, tmp_path, "anthropic-never-finishes")
    shown = [(r["status"], r["completion_tokens"], r["completion_tokens_est"], r["usage_source"]) for r in recs]
    print(f"\nanthropic-never-finishes -t {RUN_S}s -u 2: rc {rc}, {shown}")
    assert "Traceback" not in stderr and rc == 3, stderr[-3000:]
    assert len(recs) == 2 and {r["status"] for r in recs} == {"cut_off"}, recs
    for r in recs:
        assert r["completion_tokens_est"] >= (RUN_S - 1) / SLOW_PAUSE_S, r  # a delta (w + digits: 2 tokens) per pause
        check_start_usage_only(r)
    assert total["completion_tokens"] == sum(r["completion_tokens_est"] for r in recs)
