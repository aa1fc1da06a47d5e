"""Routing by what is happening, slow-call ejection and weighted routing through drills, in real Locust runs against
real mock processes (docs/failover.md, "Routing" and "Outlier detection"). Each case is one short headless run of
locustfiles/failover_drill.py (10 users asking twice a second) against a fast primary and a slower secondary mock of
its own; a drill makes the primary slow, not failing, through its admin API (the weighted case also breaks it with
503s first). The five runs go at once (each is light: 20 requests a second) so the module costs about one run's time.

Times are read off the mocks' own logs (GET /mock/truth: when each request came in and ended, and its planned TTFT,
which says whether the slowdown met it) and compared with what docs/failover.md states: the latency and cost
policies leave the slow endpoint when its first (for cost: third) slow answer ends, least-busy before any slow answer
is back, slow-call ejection opens the breaker when the formula of "Outlier detection" says; weighted routing keeps
its weights around an outage and sends the broken endpoint only its probes; a hedge that wins is no failover."""

from __future__ import annotations

import itertools
import json
import math
import re
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from loadlib.mock import MockConfig, start_subprocess
from tests.integration.locust_runs import headless, load, locust_cmd, run

pytestmark = [pytest.mark.integration, pytest.mark.alone]  # times against ground truth

PRIMARY = MockConfig(ttft_ms=60, itl_ms=5, output_tokens=16)
SECONDARY = MockConfig(ttft_ms=150, itl_ms=5, output_tokens=16)
# drills start off the 1-s traffic bins' midpoints (t0 + k + 0.5), so no bin straddles a window by a few ms
AT_S, FOR_S, DELAY_MS, RUN_S = 2.2, 4.0, 800, 8
SLOW = {"endpoint": "primary", "fault": "latency", "at": AT_S, "for": FOR_S, "delay_ms": DELAY_MS}
WINDOW_S, SLOW_RATE, COOLDOWN_S = 2.0, 0.5, 2.0  # slow-call ejection
BREAKER = {"failures": 3, "failure_rate": 0, "cooldown_s": 1, "probes": 1}
# the checks read their times off the mocks' logs: a busy machine's loop lag (five runs at once, other work beside
# them) must not make a run INVALID (exit code 3) for latencies no check uses
LAX = ("--llm-lag-threshold-ms", "2000", "--llm-cpu-threshold", "100")
CASES: dict[str, dict[str, Any]] = {
    "latency": {"policy": "latency", "drills": [SLOW]},
    "cost": {"policy": "cost", "routing": {"ttft_p95_max_s": 0.4}, "drills": [SLOW]},
    "least_busy": {"policy": "least_busy", "drills": [SLOW]},
    "slow_call": {
        "policy": "priority",
        "breaker": {
            **BREAKER,
            **{"cooldown_s": COOLDOWN_S, "window_s": WINDOW_S, "min_calls": 10},
            **{"slow_call_s": 0.4, "slow_call_rate": SLOW_RATE},
        },
        "drills": [SLOW],
    },
    "weighted": {
        "policy": "weighted",
        "weights": [3, 1],
        "hedge": {"after_ms": 300},
        "drills": [
            {"endpoint": "primary", "fault": "http_503", "at": AT_S, "for": 2},
            {"endpoint": "primary", "fault": "latency", "at": AT_S + 4, "for": 1.5, "delay_ms": 600},
        ],
    },
}


def pool(case: dict[str, Any], primary: str, secondary: str) -> str:
    weights = case.pop("weights", [1, 1])
    endpoints = [
        {"name": "primary", "prices": {"input": 0.1, "output": 0.4}},
        {"name": "secondary", "priority": 2, "prices": {"input": 1.0, "output": 4.0}},
    ]
    for e, url, w in zip(endpoints, (primary, secondary), weights, strict=True):
        e.update(base_url=url + "/v1", admin_url=url, key_env="none", weight=w)
    return json.dumps(
        {
            "endpoints": endpoints,
            "breaker": BREAKER,
            "retry": {"max_attempts": 2, "budget": 1.0},
            "targets": {"failover_within_s": None, "user_error_rate_max": 0.05},
            **case,
        }
    )


def truth(url: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(url + "/mock/truth?limit=100000", timeout=10) as r:
        return list(json.load(r)["records"])


def run_case(name: str, folder: Path) -> dict[str, Any]:
    """One headless run of the case; its exit code, console, summary, attempt records and both mocks' logs."""
    summary, records = folder / f"{name}.json", folder / f"{name}.jsonl"
    with start_subprocess(PRIMARY) as primary, start_subprocess(SECONDARY) as secondary:
        args = ("--llm-pool", pool(dict(CASES[name]), primary.url, secondary.url), "--llm-summary", str(summary))
        cmd = locust_cmd(
            *headless(10, RUN_S),
            *args,
            "--llm-records",
            str(records),
            "--stop-timeout",
            "3",
            *LAX,
            locustfile="locustfiles/failover_drill.py",
        )
        proc = run(cmd, timeout=RUN_S + 90)
        logs = {"primary": truth(primary.url), "secondary": truth(secondary.url)}
    recs = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
    return {"rc": proc.returncode, "out": proc.stdout + proc.stderr, "summary": load(summary), "records": recs, **logs}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("routing")
    with ThreadPoolExecutor(len(CASES)) as pool_:
        futures = {name: pool_.submit(run_case, name, folder) for name in CASES}
        return {name: f.result() for name, f in futures.items()}


# -- the truth -----------------------------------------------------------------------------------------------------


def slow(t: dict[str, Any]) -> bool:
    """A request the latency fault met (the mock planned its TTFT with the delay: no other field says so)."""
    return bool(t["planned_ttft_ms"] >= PRIMARY.ttft_ms + 500)


def ended(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The requests the mock answered to their end (not those the client hung up on)."""
    return [t for t in log if t["end_unix"] is not None]


def slow_start(r: dict[str, Any]) -> float:
    """When the primary got slow: the first request it received under the fault."""
    return min(t["received_unix"] for t in r["primary"] if slow(t))


def slow_ends(r: dict[str, Any]) -> list[float]:
    """When the primary's slow answers ended, in order."""
    return sorted(t["end_unix"] for t in ended(r["primary"]) if slow(t))


def arrivals(r: dict[str, Any]) -> list[tuple[float, str]]:
    return sorted((t["received_unix"], e) for e in ("primary", "secondary") for t in r[e])


def moved_away(r: dict[str, Any], since: float) -> float:
    """When the pool stopped preferring the primary: the first request at or after `since` that went to the secondary
    with at most 3 of it and the next 9 (at either mock) going to the primary (the exploring 10 % still go there)."""
    seq = [(at, e) for at, e in arrivals(r) if at >= since]
    for i in range(len(seq) - 10):
        if seq[i][1] == "secondary" and sum(e == "primary" for _, e in seq[i : i + 10]) <= 3:
            return seq[i][0]
    raise AssertionError("the primary kept its traffic")


def share(r: dict[str, Any], lo: float, hi: float) -> float | None:
    """The primary's share of the requests received in [lo, hi) (by the mocks' logs)."""
    seq = [e for at, e in arrivals(r) if lo <= at < hi]
    return sum(e == "primary" for e in seq) / len(seq) if seq else None


def windows(figs: list[dict[str, Any]], i: int) -> dict[str, tuple[float, float]]:
    """Drill i's windows before / during / after (docs/failover.md, "Windows")."""
    d = figs[i]
    since = figs[i - 1]["stop"] if i else -math.inf
    until = figs[i + 1]["start"] if i + 1 < len(figs) else math.inf
    return {"before": (since, d["start"]), "during": (d["start"], d["stop"]), "after": (d["stop"], until)}


def binned_share(r: dict[str, Any], i: int) -> dict[str, dict[str, float | None]]:
    """Drill i's traffic_share recomputed from the mocks' logs by the summary's own rule: 1-s bins from the run
    start by each request's end, a bin in the window that holds its midpoint (docs/failover.md)."""
    failover = r["summary"]["failover"]
    t0 = failover["traffic"]["t0"]
    out: dict[str, dict[str, float | None]] = {}
    for w, (lo, hi) in windows(failover["drills"], i).items():
        mid = {e: [t0 + math.floor(t["end_unix"] - t0) + 0.5 for t in ended(r[e])] for e in ("primary", "secondary")}
        n = {e: sum(lo <= m < hi for m in mids) for e, mids in mid.items()}
        total = sum(n.values())
        out[w] = {e: (k / total if total else None) for e, k in n.items()}
    return out


def shares(r: dict[str, Any], i: int = 0) -> dict[str, dict[str, Any]]:
    """Drill i's traffic_share, checked against the mocks' logs (to a request or two at a bin's edge)."""
    reported = r["summary"]["failover"]["drills"][i]["traffic_share"]
    expected = binned_share(r, i)
    print("traffic share", reported, "truth", expected)
    for w, (lo, hi) in windows(r["summary"]["failover"]["drills"], i).items():
        edge = 3 / len([at for at, _ in arrivals(r) if lo <= at < hi])  # three answers ending across a bin's edge
        for e in ("primary", "secondary"):
            assert reported[w][e] == pytest.approx(expected[w][e], abs=max(0.03, edge)), (w, e, reported, expected)
    return reported


# -- the tests -----------------------------------------------------------------------------------------------------


def test_latency_policy_leaves_a_slow_endpoint_once_its_first_slow_answer_is_in(runs: dict[str, Any]) -> None:
    """docs/failover.md, "Routing": one slow answer lifts the average past the other endpoint's."""
    r = runs["latency"]
    assert_moved_at_slow_answer(r, 1)
    fig = r["summary"]["failover"]["drills"][0]
    before, during, after = (fig[f"ttft_p95_{w}_ms"] for w in ("users_before", "during", "after"))
    print("users' TTFT p95 before / during / after", before, during, after)
    assert before < DELAY_MS / 2 < DELAY_MS <= during and after is not None  # after: the slow answers still out
    shown = f"{before:.1f}" if before < 100 else f"{before:.0f}"  # as the console prints milliseconds
    assert f"(users {shown} ms before, " in r["out"]
    assert re.search(r"traffic primary \d+ % -> \d+ % -> \d+ %, secondary \d+ % -> \d+ % -> \d+ %;", r["out"])


def test_cost_policy_leaves_a_cheap_endpoint_once_its_p95_is_over_the_bound(runs: dict[str, Any]) -> None:
    """The p95 of its last 50 TTFTs (nearest rank: the 48th) is over the bound from the third slow one on."""
    assert_moved_at_slow_answer(runs["cost"], 3)


def assert_moved_at_slow_answer(r: dict[str, Any], n: int) -> None:
    """The pool stopped preferring the primary when its n-th slow answer ended (by the mocks' logs), and the
    drill's traffic shares say so."""
    assert r["rc"] == 0, r["out"][-3000:]
    start, nth = slow_start(r), slow_ends(r)[n - 1]
    moved = moved_away(r, start)
    print(f"slow answer {n} in {nth - start:.3f} s, traffic moved {moved - start:.3f} s")
    assert nth - 0.15 <= moved <= nth + 0.5
    share = shares(r)  # 1-s bins: the drill's first one still holds the answers sent before the move
    assert share["during"]["primary"] < share["before"]["primary"] - 0.2


def test_least_busy_moves_before_any_slow_answer_is_back(runs: dict[str, Any]) -> None:
    """A slow endpoint's attempts pile up in flight at once, so new requests go elsewhere while the first slow
    answers are still out; the slow endpoint gets requests again whenever it has the fewest in flight."""
    r = runs["least_busy"]
    assert r["rc"] == 0, r["out"][-3000:]
    start, first = slow_start(r), slow_ends(r)[0]
    early = share(r, start + 0.3, first)
    share_ = shares(r)
    print(f"least_busy: primary share {share_['before']['primary']} before, {early} until its first slow answer")
    assert early is not None and early <= 0.34 and share_["before"]["primary"] >= 0.4


def test_slow_call_ejection_opens_when_the_formula_says(runs: dict[str, Any]) -> None:
    """docs/failover.md, "Outlier detection": the slow share of the window reaches slow_call_rate about
    s f W / (s f + (1 - s) r) after the first slow answer, with f and r read off the primary's log."""
    r = runs["slow_call"]
    assert r["rc"] == 0, r["out"][-3000:]
    start, ends = slow_start(r), slow_ends(r)
    got = sorted(t["received_unix"] for t in r["primary"] if t["received_unix"] >= start)
    last = next(a for a, b in itertools.pairwise(got) if b - a > 0.75 * COOLDOWN_S)  # open: nothing sent to it
    opened = min(t["end_unix"] for t in ended(r["primary"]) if t["end_unix"] > last)  # the answer that opened it
    f = sum(start - WINDOW_S <= t["end_unix"] < start for t in ended(r["primary"])) / WINDOW_S
    rate = sum(ends[0] <= e <= opened for e in ends) / max(opened - ends[0], ends[1] - ends[0])
    s, w = SLOW_RATE, 0.95 * WINDOW_S
    predicted = ends[0] + s * f * w / (s * f + (1 - s) * rate)
    fig = r["summary"]["failover"]["drills"][0]
    reported = fig["start"] + fig["detect_s"]["max"]
    print(
        f"slow calls: opened {opened - start:.3f} s (reported {reported - start:.3f}), predicted "
        f"{predicted - start:.3f} s (f {f:.1f}/s, r {rate:.1f}/s, first slow answer {ends[0] - start:.3f} s)"
    )
    assert abs(opened - predicted) <= 0.5 and abs(reported - opened) <= 0.1
    reasons = [e["message"] for e in r["summary"]["failover"]["events"] if e["kind"] == "circuit_open"]
    assert reasons and "slow calls" in reasons[0], reasons


def test_weighted_routing_keeps_its_weights_around_a_drill(runs: dict[str, Any]) -> None:
    """Each user request's first attempt goes to the primary by its weight (3:1) before the outage and again once its
    breaker closed; in the outage, after its breaker opened, the primary gets its probes only (one per cool-down)."""
    r = runs["weighted"]
    assert r["rc"] == 0, r["out"][-3000:]
    failover = r["summary"]["failover"]
    outage, [incident] = failover["drills"][0], failover["incidents"]
    (before, n_before), (after, n_after) = (
        drawn(r["records"], -math.inf, outage["start"]),
        drawn(r["records"], incident["end"], failover["drills"][1]["start"]),
    )
    opened = outage["start"] + outage["detect_s"]["max"]
    probes = sum(opened + 0.1 < t["received_unix"] < outage["stop"] for t in r["primary"])
    allowed = math.floor((outage["stop"] - opened) / BREAKER["cooldown_s"]) + 1
    print(
        f"weighted: primary drawn first {before:.2f} of {n_before} before, {after:.2f} of {n_after} after; "
        f"{probes} probes (<= {allowed})"
    )
    for share, n in ((before, n_before), (after, n_after)):  # 3:1 weights, within 3.5 standard deviations
        assert n >= 10 and abs(share - 0.75) <= 3.5 * math.sqrt(0.75 * 0.25 / n), (share, n)
    assert probes <= allowed
    shares(r)  # the summary's traffic shares: the logs' own


def drawn(records: list[dict[str, Any]], lo: float, hi: float) -> tuple[float, int]:
    """The primary's share of the first attempts of user requests sent in [lo, hi) (the weighted draw), and their
    number."""
    first = [a["endpoint"] for a in records if a["attempt"] == 1 and lo <= a["start_unix_ns"] / 1e9 < hi]
    return first.count("primary") / max(1, len(first)), len(first)


def test_a_hedge_that_wins_is_no_failover(runs: dict[str, Any]) -> None:
    """The weighted run's second drill slows the primary by 600 ms with hedging after 300 ms: every hedge wins its
    race. Hedge wins are counted as such, not as failovers, in every figure."""
    r = runs["weighted"]
    failover = r["summary"]["failover"]
    users, outage, slowed = failover["user_requests"], *failover["drills"]
    won, by_hedge = hedge_wins(r["records"])
    losers = sum(t["outcome"] == "client_closed" and slow(t) for t in r["primary"])
    [incident] = failover["incidents"]
    # every failover ended between the outage's start and the primary's breaker closing, answered by the secondary
    # (some of those preferred the secondary: the count bounds failed_over from above)
    answered = [end for end, endpoint in by_hedge if endpoint == "secondary" and outage["start"] <= end]
    elsewhere = sum(end <= incident["end"] + 0.5 for end in answered)
    print(
        f"hedge wins {users['hedged_won']} (records {won}, hung up on by the client {losers}); failed over "
        f"{users['failed_over']} of {elsewhere} answered by the secondary in the outage"
    )
    assert users["hedged_won"] == won == losers > 0
    assert 0 < users["failed_over"] <= elsewhere
    assert slowed["failover_s"]["max"] is None and slowed["ttft_p95_failed_over_ms"] is None
    assert slowed["attempt_errors"] == 0 and incident["drill"] == 1
    kinds = [
        e["kind"] for e in failover["events"] if slowed["start"] <= e["at"] and e["kind"] in ("failover", "failback")
    ]
    assert kinds == [], kinds


def hedge_wins(records: list[dict[str, Any]]) -> tuple[int, list[tuple[float, str]]]:
    """From the attempt records: the requests a hedge answered while its rival still ran (that one was cancelled),
    and (end, endpoint) of every other answered request."""
    by_request: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        by_request.setdefault(rec["user_request_id"] or rec["request_id"], []).append(rec)
    won, others = 0, []
    for attempts in by_request.values():
        answered = [a for a in attempts if a["status"] == "ok"]
        if not answered:
            continue
        if answered[0]["hedge"] and any(a["status"] == "cancelled" for a in attempts):
            won += 1
        else:
            end = answered[0]["start_unix_ns"] / 1e9 + answered[0]["e2e_ms"] / 1e3
            others.append((end, answered[0]["endpoint"]))
    return won, others
