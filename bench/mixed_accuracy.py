"""Benchmark: does a worker keep its TTFT accuracy for 200 streaming chats while long-document users send
128K-token prompts beside them?

One headless Locust process (pinned to core 0) runs support-chat users back to back (no think time); the mock
(pinned to core 1) injects TTFT 200 ms and 10 ms between tokens. Two phases of the same length: chat alone, then
chat plus a few long-document users sending whole 128,000-token documents. The chat users' TTFT must stay within
2 ms of 200 ms at the median and 30 ms at p99 (the core benchmark's bar) with the documents running, and the
documents should not move the chat numbers beyond run-to-run noise. The mock's own first-token lateness (ground
truth) is printed too, to tell a late server from a late client, and so is the client's own share: each request's
TTFT minus the moment the mock sent that request's first token (joined by request id). The documents are
generated and tokenised once, here, before the runs; Locust reads them from the cache.

    python bench/mixed_accuracy.py                  # 200 chat + 4 document users, 2 x 30 s
    python bench/mixed_accuracy.py --quick          # 64 chat + 2 document users, 2 x 12 s

This file is also the locustfile of the runs (user counts come from the environment).
"""

from __future__ import annotations

import os

if __name__ != "__main__":  # imported by Locust as the locustfile
    from loadlib.scenarios import long_document, support_chat

    class Chat(support_chat.SupportChatUser):
        fixed_count = int(os.environ.get("MIXED_BENCH_CHAT", "200"))

    class Documents(long_document.LongDocumentUser):
        fixed_count = int(os.environ.get("MIXED_BENCH_DOCS", "4"))


TTFT_MS, ITL_MS, OUTPUT_TOKENS = 200.0, 10.0, 32


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))]


def run_phase(chat_users: int, doc_users: int, seconds: int, spawn_rate: float, cache: str, tmp: object) -> dict:
    """One Locust run against a fresh mock; returns its summary plus the mock's first-token times of the chats."""
    import json
    import subprocess
    import sys
    import urllib.request
    from pathlib import Path

    from loadlib.mock import MockConfig, start_subprocess
    from loadlib.mock.truth import bare_id

    root = Path(__file__).resolve().parent.parent
    summary = Path(str(tmp)) / f"summary-{doc_users}.json"
    records = Path(str(tmp)) / f"records-{doc_users}.jsonl"
    users = chat_users + doc_users
    config = MockConfig(ttft_ms=TTFT_MS, itl_ms=ITL_MS, output_tokens=OUTPUT_TOKENS)
    with start_subprocess(config, cpu=1, extra_args=["--truth-events", "1"]) as mock:
        cmd = [
            *("taskset", "-c", "0", sys.executable, "-m", "locust", "-f", str(Path(__file__).resolve())),
            *("--headless", "-u", str(users), "-r", str(spawn_rate), "-t", f"{seconds}s", "--only-summary"),
            *("--host", mock.url + "/v1", "--llm-api-key-env", "none", "--chat-think-time", "0"),
            *("--doc-tokens", "128000", "--doc-per-size", "2", "--data-cache-dir", cache),
            *("--llm-summary", str(summary), "--llm-records", str(records)),
        ]
        env = dict(os.environ, PYTHONPATH=str(root), MIXED_BENCH_CHAT=str(chat_users), MIXED_BENCH_DOCS=str(doc_users))
        proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=seconds + 120)
        if proc.returncode not in (0, 1):
            raise SystemExit(proc.stderr[-3000:])
        with urllib.request.urlopen(mock.url + "/mock/truth?limit=1000000", timeout=30) as r:
            truth = json.load(r)["records"]
    s = json.loads(summary.read_text())
    chats = {t["request_id"]: t for t in truth if (t["prompt_tokens"] or 0) < 20_000}
    s["_mock_first_token_ms"] = [t["first_token_sent_ms"] for t in chats.values() if t["first_token_sent_ms"]]
    s["_client_side_ms"] = []  # per request: our TTFT minus when the mock actually sent that request's first token
    with records.open() as f:
        for line in f:
            r = json.loads(line)
            t = chats.get(bare_id(r["server_request_id"] or ""))
            if t is not None and r["ttft_ms"] is not None and t["first_token_sent_ms"] is not None:
                s["_client_side_ms"].append(r["ttft_ms"] - t["first_token_sent_ms"])
    return s


def report(name: str, s: dict) -> tuple[float, float]:
    rows = {r["scenario"]: r for r in s["rows"]}
    chat = rows["support_chat"]
    lat = chat["latency_ms"]["ttft"]
    err50, err99 = lat["p50"] - TTFT_MS, lat["p99"] - TTFT_MS
    truth = s["_mock_first_token_ms"]
    m50, m99 = percentile(truth, 50), percentile(truth, 99)
    client = s.get("client") or {}
    print(
        f"{name}: chat {chat['count']} requests ({chat['errors_total']} errors), TTFT p50 {lat['p50']:.1f} ms "
        f"(error {err50:+.1f}), p99 {lat['p99']:.1f} ms (error {err99:+.1f}); TPOT p50 "
        f"{chat['latency_ms']['tpot']['p50']:.2f} ms, ITL p50 {chat['latency_ms']['itl']['p50']:.2f} p99 "
        f"{chat['latency_ms']['itl']['p99']:.2f} ms; mock's first token sent at p50 {m50:.1f} p99 {m99:.1f} ms; "
        f"client loop lag p99 {client.get('loop_lag_p99_ms')} ms, CPU p90 {client.get('cpu_p90_percent')} %"
    )
    side = s["_client_side_ms"]
    print(
        f"{name}: client's own share, joined per request with the mock's truth ({len(side)} requests): "
        f"p50 {percentile(side, 50):+.1f} ms, p99 {percentile(side, 99):+.1f} ms"
    )
    for warning in client.get("warnings") or ():
        print(f"{name}: client warning: {warning}")
    doc = rows.get("long_document")
    if doc:
        print(
            f"{name}: long documents {doc['count']} requests ({doc['errors_total']} errors), "
            f"{doc['prompt_tokens']:,} prompt tokens sent ({doc['prompt_tokens'] // max(doc['count'], 1):,} per "
            f"request), TTFT p50 {doc['latency_ms']['ttft']['p50']:.1f} ms"
        )
    return err50, err99


def main() -> int:
    import argparse
    import sys
    import tempfile
    import time
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from loadlib import data

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chat-users", type=int, default=200)
    p.add_argument("--doc-users", type=int, default=4)
    p.add_argument("--seconds", type=int, default=30)
    p.add_argument(
        "--spawn-rate",
        type=float,
        default=50.0,
        help=(
            "users started per second (default 50: Locust starts a batch a second, so 200 users come in 4 batches "
            "and the identical chats do not all stream in lockstep)"
        ),
    )
    p.add_argument("--quick", action="store_true", help="64 chat users, 2 document users, 12 s phases")
    args = p.parse_args()
    if args.quick:
        args.chat_users, args.doc_users, args.seconds = 64, 2, 12

    with tempfile.TemporaryDirectory() as tmp:
        cache = str(Path(tmp) / "cache")
        t = time.perf_counter()
        docs = data.documents(1, (128_000,), 2, cache)
        took = time.perf_counter() - t
        print(f"documents: {[d.tokens for d in docs]} tokens, generated and counted once in {took:.2f} s")
        alone = run_phase(args.chat_users, 0, args.seconds, args.spawn_rate, cache, tmp)
        mixed = run_phase(args.chat_users, args.doc_users, args.seconds, args.spawn_rate, cache, tmp)
    report("chat alone", alone)
    err50, err99 = report("chat + documents", mixed)
    rows = {r["scenario"]: r for r in mixed["rows"]}
    ok = abs(err50) <= 2.0 and err99 <= 30.0 and rows.get("long_document", {}).get("count", 0) > 0
    print(
        "PASS" if ok else "FAIL",
        f"with documents: median within 2 ms {abs(err50) <= 2.0}, p99 within 30 ms {err99 <= 30.0}",
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
