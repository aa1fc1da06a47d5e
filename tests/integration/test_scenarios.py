"""The scenario locustfiles, run for real (headless Locust against the real mock, a few seconds each): every check
the scenarios make is proven against a mock told to misbehave in that way."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from contextlib import closing
from pathlib import Path

import pytest

from loadlib import data
from loadlib.scenarios.documents import chunk_bounds
from tests.integration.locust_runs import ROOT, env, headless, load, locust_cmd, run

pytestmark = pytest.mark.integration
SECRET = "sk-scenario-secret-never-written-0123456789"
SEED = 11


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("data-cache")


def scenario(
    tmp_path: Path, cache: Path, locustfile: str, *args: str, users: int = 4, seconds: int = 4, environ=None
) -> dict:
    """Run one locustfile headless against the embedded mock; return the end-of-run summary (stdout attached)."""
    summary = tmp_path / "summary.json"
    p = run(
        locust_cmd(
            *headless(users, seconds),
            "--only-summary",
            "--data-seed",
            str(SEED),
            "--data-cache-dir",
            str(cache),
            "--llm-summary",
            str(summary),
            *args,
            locustfile=f"locustfiles/{locustfile}.py",
        ),
        timeout=120,
        env=environ,
    )
    assert p.returncode in (0, 1), p.stderr[-3000:]  # 1: the run had failed requests (what some tests provoke)
    assert "Traceback" not in p.stderr, p.stderr[-3000:]
    s = load(summary)
    s["_stdout"], s["_stderr"] = p.stdout, p.stderr
    return s


def row(summary: dict, name: str) -> dict:
    (r,) = [r for r in summary["rows"] if r["scenario"] == name]
    return r


def test_support_chat_turn_growth_and_system_prompt_sweep(tmp_path: Path, cache: Path) -> None:
    """Prompt tokens grow turn by turn and our estimate equals the server's count without recounting history;
    with TTFT growing 100 ms per 1K prompt tokens, the sweep shows what a 2,000-token system prompt costs."""
    s = scenario(
        tmp_path,
        cache,
        "support_chat",
        "--chat-turns",
        "3",
        "--chat-think-time",
        "0",
        "--chat-sweep",
        "100,2000",
        "--llm-mock",
        "ttft_ms=20,itl_ms=1,output_tokens=24,ttft_per_1k_prompt_ms=100",
        users=4,
        seconds=5,
    )
    r = row(s, "support_chat")
    assert r["count"] > 20 and r["errors_total"] == 0
    assert r["token_estimate"]["prompt"]["abs_pct_max"] == 0.0, "incremental estimate == server usage"
    chat = s["scenarios"]["support_chat"]
    turns = chat["turns"]
    assert [t["turn"] for t in turns] == [1, 2, 3]
    means = [t["prompt_tokens_mean"] for t in turns]
    assert means[0] < means[1] < means[2] and chat["prompt_tokens_per_turn"] > 24
    sweep = {st["system_tokens"]: st for st in chat["sweep"]}
    assert set(sweep) == {100, 2000}
    cost = sweep[2000]["ttft_p50_ms"] - sweep[100]["ttft_p50_ms"]
    assert 150 <= cost <= 260, sweep  # ~1,900 more prompt tokens at 100 ms per 1K
    assert "support_chat:" in s["_stdout"] and "system prompt 2,000 tokens" in s["_stdout"]


def test_whole_documents_context_length_exceeded(tmp_path: Path, cache: Path) -> None:
    """A model with an 8K window (named mock-8k) refuses the 16K document with the provider's error."""
    s = scenario(tmp_path, cache, "long_document", "--doc-tokens", "4000,16000", "--llm-model", "mock-8k", users=2)
    whole = s["scenarios"]["long_document"]["whole"]
    assert whole["fits"] > 0 and whole["context_length_exceeded"] > 0 and whole["truncated"] == 0
    assert row(s, "long_document")["errors"] == {"context_length_exceeded": whole["context_length_exceeded"]}
    assert "long_document (whole): fits" in s["_stdout"]
    checks = s["scenarios"]["long_document"]["checks"]
    assert checks["canary"] == {"quoted": whole["fits"], "missing": 0}, "a faithful server is not flagged"
    assert checks["disagree"] == 0


def test_whole_documents_silent_truncation(tmp_path: Path, cache: Path) -> None:
    """A server that silently keeps 6,000 tokens bills far fewer than the 16K document we sent: truncated."""
    s = scenario(tmp_path, cache, "long_document", "--doc-tokens", "4000,16000", "--llm-mock", "truncate_to=6000")
    whole = s["scenarios"]["long_document"]["whole"]
    assert whole["fits"] > 0 and whole["truncated"] > 0 and whole["context_length_exceeded"] == 0
    assert row(s, "long_document")["errors"] == {"truncated": whole["truncated"]}


def test_truncation_behind_a_gateway_is_caught_by_the_canary(tmp_path: Path, cache: Path) -> None:
    """A backend keeping 6,000 tokens behind a gateway that reports the prompt as sent: billing says every document
    fits; the canary, missing from the answers to the 16K documents, says they were truncated and decides."""
    mock = "truncate_to=6000,usage_prompt=sent,ttft_ms=5,itl_ms=1"
    s = scenario(tmp_path, cache, "long_document", "--doc-tokens", "4000,16000", "--llm-mock", mock)
    whole = s["scenarios"]["long_document"]["whole"]
    checks = s["scenarios"]["long_document"]["checks"]
    assert whole["fits"] > 0 and whole["truncated"] > 0
    assert checks["billing"]["truncated"] == 0 and checks["billing"]["fits"] == whole["fits"] + whole["truncated"]
    assert checks["canary"] == {"quoted": whole["fits"], "missing": whole["truncated"]}
    assert checks["disagree"] == whole["truncated"] and checks["decided_by"]["billing"] == 0
    assert checks["missing_fits"]["counted_whole"] == whole["truncated"], "the usage counted the prompt as sent"
    assert "the two disagree on" in s["_stdout"] and "a gateway counting the prompt itself?" in s["_stdout"]


def test_every_document_cut_behind_a_gateway_keeps_the_canary_on(tmp_path: Path, cache: Path) -> None:
    """Issue 21: every document cut at 6,000 tokens behind a gateway reporting the prompt as sent. No answer quotes
    its code, so the run cannot tell a cut from a model that will not quote: the hint says both and how to tell, and
    never advises --doc-canary off outright (following that turned 32 of 32 truncations into fits)."""
    mock = "truncate_to=6000,usage_prompt=sent,ttft_ms=5,itl_ms=1"
    s = scenario(tmp_path, cache, "long_document", "--doc-tokens", "16000", "--llm-mock", mock, seconds=3)
    whole = s["scenarios"]["long_document"]["whole"]
    assert whole["truncated"] > 0 and whole["fits"] == 0, whole
    (hint,) = [line for line in s["_stdout"].splitlines() if "did not quote" in line]
    assert f"{whole['truncated']} of {whole['truncated']} answers" in hint and "cannot tell which" in hint
    assert "only then is --doc-canary off" in hint and "gateway" not in hint


def test_chunked_summaries_report_the_overlap_overhead(tmp_path: Path, cache: Path) -> None:
    s = scenario(
        tmp_path,
        cache,
        "long_document",
        "--doc-mode",
        "chunked",
        "--doc-tokens",
        "8000",
        "--doc-chunk-tokens",
        "2000",
        "--doc-overlap-tokens",
        "500",
        "--llm-mock",
        "ttft_ms=5,itl_ms=0",
        users=2,
    )
    (doc,) = data.documents(SEED, (8000,), 1, str(cache))
    bounds = chunk_bounds(doc.tokens, 2000, 500)
    expected = (sum(b - a for a, b in bounds) - doc.tokens) / doc.tokens * 100
    ch = s["scenarios"]["long_document"]["chunked"]
    assert ch["completed"] == ch["documents"] > 0
    assert ch["chunks"] == ch["documents"] * len(bounds)
    assert ch["overlap_overhead_pct"] == pytest.approx(expected, abs=0.01)
    assert ch["prompt_overhead_pct"] > ch["overlap_overhead_pct"], "instructions and the reduce step cost extra"
    assert row(s, "long_document")["count"] >= ch["documents"] * (len(bounds) + 1), "maps + a reduce per document"


@pytest.mark.parametrize(
    ("mock", "failure"),
    [("context_limit=20000", "context_length_exceeded"), ("truncate_to=12000", "truncated")],
)
def test_context_probe_finds_the_real_limit(tmp_path: Path, cache: Path, mock: str, failure: str) -> None:
    s = scenario(
        tmp_path,
        cache,
        "long_document",
        "--doc-mode",
        "probe",
        "--doc-probe-max",
        "64000",
        "--llm-mock",
        f"{mock},ttft_ms=5,itl_ms=0",
        users=1,
        seconds=6,
    )
    probe = s["scenarios"]["long_document"]["probe"]
    assert probe["failure"] == failure
    fit, fail = probe["largest_fit"], probe["smallest_failure"]
    assert fail - fit <= 1100
    if failure == "context_length_exceeded":
        assert fit <= 20000 < fail
    else:
        assert probe["largest_billed"] == 12000, "the server never bills more than it keeps"
        assert fit <= 12000 < fail, "the canary finds where the server cuts, not where billing falls under 70 %"
    assert "long_document (probe)" in s["_stdout"]


def test_compliance_detects_invalid_and_nondeterministic_output_and_audits(tmp_path: Path, cache: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    s = scenario(
        tmp_path,
        cache,
        "compliance",
        "--compliance-repeat-share",
        "1",
        "--audit-file",
        str(audit),
        "--llm-api-key-env",
        "LOADTEST_SECRET_KEY",
        "--llm-mock",
        "json_valid_rate=0.6,nondeterminism_rate=0.4,ttft_ms=10,itl_ms=1",
        environ=env(LOADTEST_SECRET_KEY=SECRET),
    )
    r = row(s, "compliance")
    comp = s["scenarios"]["compliance"]
    assert r["errors"].get("schema_invalid", 0) == comp["schema_invalid"] > 0
    assert r["errors"].get("nondeterministic", 0) == comp["nondeterministic"] > 0
    assert comp["deterministic"] > 0 and 0 < comp["schema_valid_share"] < 1
    lines = [json.loads(x) for x in audit.read_text().splitlines()]
    assert len(lines) == r["count"] == s["total"]["count"], "one audit line per attempt, cut off by the end or not"
    assert len({x["request_id"] for x in lines}) == len(lines)
    answered = [x for x in lines if x["status"] != "cut_off"]  # cut off by the end: usage never came
    assert all(x["server_request_id"] and x["model"] == "mock-llm" and x["prompt_tokens"] for x in answered)
    assert all(x["prompt_tokens"] == x["prompt_tokens_est"] for x in answered)
    statuses = {}
    for x in lines:
        statuses[x["status"]] = statuses.get(x["status"], 0) + 1
    assert statuses == {"ok": r["ok"], **r["errors"], **({"cut_off": r["cut_off"]} if r["cut_off"] else {})}
    text = audit.read_text()
    for needle in (SECRET, "Anti-Money-Laundering", "R1:", "From:", "Transaction ", "findings", "verdict"):
        assert needle not in text, needle
    assert comp["audit_files"] == [{"path": str(audit), "lines": len(lines)}]
    assert f"audit file: {audit}" in s["_stdout"]


def test_compliance_over_anthropic_forced_tool(tmp_path: Path, cache: Path) -> None:
    """Same checks through Anthropic's forced tool; a well-behaved server passes both."""
    s = scenario(
        tmp_path,
        cache,
        "compliance",
        "--llm-provider",
        "anthropic",
        "--compliance-repeat-share",
        "1",
        "--audit-file",
        "none",
        "--llm-mock",
        "ttft_ms=10,itl_ms=1",
    )
    comp = s["scenarios"]["compliance"]
    assert row(s, "compliance")["errors_total"] == 0
    assert comp["schema_valid_share"] == 1.0 and comp["deterministic_share"] == 1.0 and comp["repeat_pairs"] > 0
    assert "audit_files" in comp and comp["audit_files"] == []


def test_mixed_run_on_two_worker_processes_merges_scenario_results(tmp_path: Path, cache: Path) -> None:
    audit = tmp_path / "audit-{worker}.jsonl"
    s = scenario(
        tmp_path,
        cache,
        "mixed",
        "--processes",
        "2",
        "--doc-tokens",
        "4000",
        "--chat-think-time",
        "0.1",
        "--audit-file",
        str(audit),
        "--llm-mock",
        "ttft_ms=10,itl_ms=1",
        users=10,
        seconds=5,
    )
    scen = s["scenarios"]
    assert {r["scenario"] for r in s["rows"]} == {"support_chat", "compliance", "long_document"}
    chat_requests = sum(t["requests"] for t in scen["support_chat"]["turns"])
    assert chat_requests == ended(row(s, "support_chat"))
    assert scen["compliance"]["checked"] == ended(row(s, "compliance"))
    assert sum(scen["long_document"]["whole"].values()) == ended(row(s, "long_document"))
    files = list(tmp_path.glob("audit-*.jsonl"))
    assert files and sum(len(f.read_text().splitlines()) for f in files) == row(s, "compliance")["count"]
    assert sum(a["lines"] for a in scen["compliance"]["audit_files"]) == row(s, "compliance")["count"]


def test_ramp_shape_runs_headless(tmp_path: Path, cache: Path) -> None:
    """With shapes.py added, headless Locust runs the first shape (RampShape) from -u and -t."""
    s = scenario(
        tmp_path,
        cache,
        "support_chat.py,locustfiles/shapes",
        "--shape-ramp-s",
        "2",
        "--chat-think-time",
        "0.1",
        "--llm-mock",
        "ttft_ms=10,itl_ms=1",
        users=4,
        seconds=4,
    )
    assert row(s, "support_chat")["count"] > 5
    assert "Shape test updating to 4 users" in s["_stderr"], s["_stderr"][-2000:]


def test_malformed_user_file_fails_at_start_up(tmp_path: Path) -> None:
    bad = tmp_path / "conversations.jsonl"
    bad.write_text('{"id": "c1", "turns": ["Hello"]}\n{"id": "c2", "turns": "not a list"}\n')
    start = time.monotonic()
    p = run(
        locust_cmd(
            "--headless", "-u", "1", "-t", "5s", "--chat-data-file", str(bad), locustfile="locustfiles/support_chat.py"
        )
    )
    assert p.returncode != 0 and "Traceback" not in p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("error:")]
    assert lines == [f"error: {bad}:2: field 'turns' must be a non-empty list of strings"], p.stderr[-2000:]
    assert time.monotonic() - start < 30


def free_port() -> int:
    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.load(r)


def test_web_ui_offers_scenarios_and_shapes(tmp_path: Path, cache: Path) -> None:
    """The mixed locustfile plus the shapes in the web UI with --class-picker: pick two scenarios and StepShape,
    start from the form, see their rows fill."""
    port = free_port()
    proc = subprocess.Popen(
        locust_cmd(
            "--class-picker",
            "--web-host",
            "127.0.0.1",
            "--web-port",
            str(port),
            "--data-cache-dir",
            str(cache),
            "--doc-tokens",
            "4000",
            "--llm-mock",
            "ttft_ms=10,itl_ms=1",
            locustfile="locustfiles/mixed.py,locustfiles/shapes.py",
        ),
        cwd=ROOT,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        page = ""
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(base + "/", timeout=2) as r:
                    page = r.read().decode()
                break
            except OSError:
                time.sleep(0.2)
        for name in ("SupportChat", "Compliance", "LongDocument", "RampShape", "StepShape", "chat_sweep", "doc_mode"):
            assert name in page, name
        form = [
            ("user_count", "4"),
            ("spawn_rate", "4"),
            ("run_time", "20s"),
            ("shape_class", "StepShape"),
            ("user_classes", "SupportChat"),
            ("user_classes", "LongDocument"),
            ("chat_think_time", "0.1"),
            ("shape_steps", "2"),
            ("shape_step_s", "1"),
        ]
        with urllib.request.urlopen(base + "/swarm", data=urllib.parse.urlencode(form).encode(), timeout=10) as r:
            assert json.load(r)["success"]
        names: dict[str, int] = {}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (names.get("support_chat") and names.get("long_document")):
            time.sleep(0.5)
            names = {s["name"]: s["num_requests"] for s in get_json(base + "/stats/requests")["stats"]}
        assert names.get("support_chat") and names.get("long_document"), names
        assert "compliance" not in names, "only the picked classes run"
        urllib.request.urlopen(base + "/stop", data=b"", timeout=10).close()
    finally:
        proc.terminate()
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def ended(r: dict) -> int:
    """A row's attempts that ended by themselves: scenario checks and audit lines judge answers, and an attempt the
    end of the run cut off has none (docs/metrics.md, "Error classes")."""
    return r["count"] - r.get("cut_off", 0)
