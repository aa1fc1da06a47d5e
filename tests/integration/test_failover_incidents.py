"""An outage nobody scheduled: two real mock processes, no drill configured; a thread breaks the primary through its
admin API once traffic flows. The incident figures the run reports (failover.incidents[]) must match, per worker and
within 50 ms, the same timeline read off the mocks' own logs (GET /mock/truth: what each mock answered and when),
once in one process and once with a master and two workers. The same runs show the node events stay clean: one
failover and one failback per worker, none spurious after the failback."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loadlib.mock import MockConfig, start_subprocess
from loadlib.mock.truth import bare_id
from tests.integration.locust_runs import headless, load, locust_cmd, run, run_distributed

pytestmark = [pytest.mark.integration, pytest.mark.alone]  # times against ground truth
PRIMARY = MockConfig(ttft_ms=30, itl_ms=5, output_tokens=8)
SECONDARY = MockConfig(ttft_ms=50, itl_ms=5, output_tokens=8)
FAILURES, COOLDOWN_S, FAULT_S, RUN_S, USERS = 3, 1.0, 2.0, 9, 6
TOLERANCE_S = 0.05


def pool(primary: str, secondary: str) -> str:
    return json.dumps(
        {
            "endpoints": [
                {"name": "primary", "base_url": primary + "/v1", "key_env": "none"},
                {"name": "secondary", "base_url": secondary + "/v1", "key_env": "none", "priority": 2},
            ],
            "breaker": {"failures": FAILURES, "failure_rate": 0, "cooldown_s": COOLDOWN_S, "probes": 1},
            "retry": {"max_attempts": 2, "budget": 1.0},
        }
    )


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)


def outage(admin: str) -> Callable[[], None]:
    """Once the primary has served 20 requests (at most 60 s), a 503 outage of FAULT_S through its admin API."""

    def go() -> None:
        deadline = time.monotonic() + 60
        while get(admin + "/mock/stats")["requests"] < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        body = json.dumps({"kind": "http_503", "for_s": FAULT_S}).encode()
        req = urllib.request.Request(admin + "/mock/fault", data=body, method="POST")
        urllib.request.urlopen(req, timeout=5).read()

    return go


def truth_timeline(primary: list[dict], secondary: list[dict]) -> dict[str, float]:
    """One worker's incident read off the mocks' logs, by the definitions of docs/failover.md, "Incidents": the
    streak's first failure, the failure that makes FAILURES in a row (the breaker opens), the first answer of the
    secondary after the first failure, the first answer of the primary to a request sent after the opening (the
    probe: the breaker closes), the last failure before it."""
    first = opened = None
    streak = 0
    for r in sorted(primary, key=lambda r: r["end_unix"]):
        if r["status"] == 503:
            first = r["end_unix"] if first is None else first
            streak += 1
            if streak == FAILURES:
                opened = r["end_unix"]
                break
        elif r["status"] == 200:
            streak = 0
            if first is not None and r["received_unix"] >= first:
                first = None
    assert first is not None and opened is not None, "the primary never failed FAILURES times in a row"
    failover = min(r["end_unix"] for r in secondary if r["status"] == 200 and r["end_unix"] >= first)
    closed = min(r["end_unix"] for r in primary if r["status"] == 200 and r["received_unix"] > opened)
    last = max(r["end_unix"] for r in primary if r["status"] == 503 and r["end_unix"] < closed)
    return {"detect_s": opened - first, "failover_s": failover - first, "failback_s": closed - last}


def truth_by_worker(records: list[dict], primary: list[dict], secondary: list[dict]) -> dict[str, dict[str, float]]:
    """The mocks' records split by the worker that sent them (the client's records name the mock's request id)."""
    worker_of = {bare_id(r["server_request_id"]): r["worker_id"] for r in records if r.get("server_request_id")}
    out = {}
    for w in sorted(set(worker_of.values())):
        # an answer the client hung up on before its end (the run stopping) never reached it
        mine = [
            [r for r in log if worker_of.get(r["request_id"]) == w and r["outcome"] != "client_closed"]
            for log in (primary, secondary)
        ]
        out[w] = truth_timeline(*mine)
    return out


def outage_run(tmp: Path, workers: int) -> dict[str, Any]:
    summary, records = tmp / "summary.json", tmp / "records-{worker}.jsonl"
    with start_subprocess(PRIMARY) as primary, start_subprocess(SECONDARY) as secondary:
        args = ("--llm-pool", pool(primary.url, secondary.url), "--llm-summary", str(summary))
        args += ("--llm-records", str(records))
        if workers:
            rc, out = run_distributed(
                *("-u", str(USERS), "-r", str(USERS), "-t", f"{RUN_S}s", *args),
                workers=workers,
                locustfile="locustfiles/failover_drill.py",
                timeout=RUN_S + 90,
                during=outage(primary.url),
            )[:2]
        else:
            thread = threading.Thread(target=outage(primary.url), daemon=True)
            thread.start()
            proc = run(locust_cmd(*headless(USERS, RUN_S), *args, locustfile="locustfiles/failover_drill.py"))
            thread.join(timeout=60)
            rc, out = proc.returncode, proc.stderr + proc.stdout
        logs = [get(m.url + "/mock/truth?limit=100000")["records"] for m in (primary, secondary)]
    recs = [json.loads(line) for f in tmp.glob("records-*.jsonl") for line in f.read_text().splitlines() if line]
    return {"rc": rc, "out": out, "summary": load(summary), "truth": truth_by_worker(recs, *logs), "local": not workers}


@pytest.fixture(scope="module", params=[0, 2], ids=["local", "master+2"])
def outage_result(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return outage_run(tmp_path_factory.mktemp("incident"), request.param)


def test_the_incident_figures_match_the_mocks_logs(outage_result: dict[str, Any]) -> None:
    failover = outage_result["summary"]["failover"]
    assert failover["drills"] == [], "no drill was configured"
    [incident] = [i for i in failover["incidents"] if i["endpoint"] == "primary"]
    truth = outage_result["truth"]
    if list(incident["workers"]) == ["local"]:
        truth = {"local": next(iter(truth.values()))}
    assert sorted(incident["workers"]) == sorted(truth)
    for figure in ("detect_s", "failover_s", "failback_s"):
        print(figure, incident[figure]["per_worker"], {w: round(t[figure], 4) for w, t in truth.items()})
        for worker, value in incident[figure]["per_worker"].items():
            assert value is not None and abs(value - truth[worker][figure]) <= TOLERANCE_S, (
                figure,
                worker,
                value,
                truth[worker][figure],
            )
    assert not incident["ongoing"] and incident["drill"] is None and incident["user_requests"] > 0
    if outage_result["local"]:  # run_distributed keeps the master's stderr only; the summary goes to stdout
        assert f"incident 1 primary at +{incident['at_s']:.1f} s" in outage_result["out"]


def test_one_failover_and_one_failback_per_worker(outage_result: dict[str, Any]) -> None:
    events = outage_result["summary"]["failover"]["events"]
    by_worker: dict[str, list[str]] = {}
    for e in events:
        if e["kind"] in ("failover", "failback"):
            by_worker.setdefault(e["worker"], []).append(e["kind"])
    assert by_worker and all(kinds == ["failover", "failback"] for kinds in by_worker.values()), by_worker
