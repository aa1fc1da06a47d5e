"""The batching engine over real loopback: closed-loop levels against the model's prediction and /metrics against
the client's counts, a real Locust run of support_chat for prefix caching, and a small KV cache that makes long
documents queue and be preempted. Every run is bounded in requests and time."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from loadlib.mock import MockConfig, MockProcess, start_subprocess
from loadlib.mock.engine.capacity import Bound, closed_level
from loadlib.mock.engine.params import PROFILES
from loadlib.mock.engine.serve import capacity_json
from loadlib.mock.engine.sim import Workload, quantile, seen_ms, solo_e2e_s
from loadlib.mock.prompt import message_bounds
from loadlib.mock.truth import bare_id
from tests.integration.engine_load import END, TOKEN, closed_loop, link_ms, p50
from tests.integration.locust_runs import headless, locust_cmd, run

pytestmark = [pytest.mark.integration, pytest.mark.alone]  # timing-sensitive: run with nothing beside it
PROFILE = PROFILES["h20-8b"]
WORDS = 250  # prompts of about 520 tokens: a 40 ms prefill, against which a loaded box's noise is small
# answers of 12-36 tokens (a spread keeps users from moving in lockstep); the client sends as it reads an end (its
# link is measured per level)
WORK = Workload(2 * WORDS + 20, 24, output_spread=0.5, think_ms=0.0)


def get(url: str, timeout: float = 10) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read()


def post(url: str, body: bytes = b"") -> bytes:
    with urllib.request.urlopen(urllib.request.Request(url, body, method="POST"), timeout=10) as r:
        return r.read()


def truth(mock: MockProcess) -> list[dict]:
    return json.loads(get(mock.url + "/mock/truth?limit=100000"))["records"]


def scrape(mock: MockProcess) -> dict[str, float]:
    """Every sample of /metrics, parsed by prometheus_client, summed by sample name."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(get(mock.url + "/metrics").decode()):
        for s in family.samples:
            out[s.name] = out.get(s.name, 0.0) + s.value
    return out


@pytest.fixture
def engine_mock() -> Iterator[MockProcess]:
    with start_subprocess(MockConfig(engine="batching", output_tokens=256), extra_args=["--truth-events", "64"]) as m:
        yield m


def within(measured: float, predicted: float, rel: float = 0.05) -> bool:
    return abs(measured - predicted) <= rel * predicted


def test_levels_follow_the_model_and_metrics_count_what_the_client_saw(engine_mock: MockProcess) -> None:
    """1, 8 and 32 closed-loop users: TPOT grows with the batch, TTFT with the queue, and each level's p50s are
    within 5 % of the model's for this client (the simulation behind /mock/capacity, for the same users, requests
    and prompt, and the client's link measured by `GET /health` round trips). Alone (the engine idle, no step's
    writes in the way of its request), the client has its first token within 2 ms of the mock's write, counted from
    its send; with others it sends as it reads an end, while the mock is still writing that step, and the mock reads
    the request after that (which the model's queue takes back, as the TTFTs check)."""
    spread = solo_e2e_s(PROFILE, WORK)
    rows = []
    for users, rounds in ((1, 8), (8, 6), (32, 4)):
        post(engine_mock.url + "/mock/reset")
        url = ("127.0.0.1", engine_mock.port)
        work = dataclasses.replace(WORK, link_ms=link_ms(url))
        samples = closed_loop(url, users, 30.0, spread_s=spread, limit=rounds, words=WORDS, work=work)
        assert len(samples) == users * rounds
        records = {r["request_id"]: r for r in truth(engine_mock)}
        prompt = next(iter(records.values()))["billed_prompt_tokens"]
        model = closed_level(PROFILE, dataclasses.replace(work, prompt_tokens=prompt), users, rounds)
        seen = [s for s in samples if s.index > 0]
        rows.append(
            {
                "users": users,
                "ttft": (p50([s.ttft_ms for s in seen]), quantile([seen_ms("ttft", s, work) for s in model], 0.5)),
                "tpot": (p50([s.tpot_ms for s in seen]), quantile([seen_ms("tpot", s, work) for s in model], 0.5)),
                "client_after_write": p50([s.ttft_ms - records[s.request_id]["first_token_sent_ms"] for s in seen]),
            }
        )
        counts = scrape(engine_mock)
        assert counts["vllm:request_success_total"] == len(samples)
        assert counts["vllm:generation_tokens_total"] == sum(s.tokens for s in samples)
        assert counts["vllm:time_to_first_token_seconds_count"] == len(samples)
        assert counts["vllm:num_requests_running"] == counts["vllm:num_requests_waiting"] == 0
    assert rows[0]["client_after_write"] < 2.0, rows
    for row in rows:
        assert within(*row["ttft"]) and within(*row["tpot"]), rows
    assert rows[0]["tpot"][0] < rows[1]["tpot"][0] < rows[2]["tpot"][0], rows
    assert rows[2]["ttft"][0] > 2 * rows[0]["ttft"][0], rows
    print("levels (client, model):", [(r["users"], r["ttft"], r["tpot"]) for r in rows])


def test_metrics_gauges_follow_the_load_within_a_scrape(engine_mock: MockProcess) -> None:
    """While 16 users run, every scrape's running + waiting is at most 16, and the counters only grow."""
    work = dataclasses.replace(WORK, output_spread=0.0)
    seen: list[dict[str, float]] = []

    async def scraper(stop_at: float) -> None:
        while time.perf_counter() < stop_at:
            seen.append(await asyncio.to_thread(scrape, engine_mock))
            await asyncio.sleep(0.1)

    async def both() -> None:
        await asyncio.gather(
            asyncio.to_thread(closed_loop, ("127.0.0.1", engine_mock.port), 16, 1.5, work=work, words=WORDS),
            scraper(time.perf_counter() + 1.5),
        )

    asyncio.run(both())
    busy = [s["vllm:num_requests_running"] + s["vllm:num_requests_waiting"] for s in seen]
    assert len(busy) >= 5 and max(busy) <= 16 and max(busy) >= 8, busy
    tokens = [s["vllm:generation_tokens_total"] for s in seen]
    assert tokens == sorted(tokens) and tokens[-1] > tokens[0]
    assert all(0 < s["vllm:kv_cache_usage_perc"] < 1 for s in seen[1:-1])


def test_support_chat_prefix_cache_hits_are_reported_and_faster(engine_mock: MockProcess, tmp_path: Path) -> None:
    """A real Locust run of support_chat: the shared system prompt is prefilled once; every answer's cached_tokens
    equals the truth's, and a hit's TTFT is lower than a miss's."""
    records_path = tmp_path / "records.jsonl"
    p = run(
        locust_cmd(
            *headless(4, 3),
            "--only-summary",
            *("--host", engine_mock.url + "/v1", "--llm-api-key-env", "none"),
            *("--chat-turns", "2", "--chat-think-time", "0", "--chat-system-tokens", "2000"),
            *("--llm-records", str(records_path), "--llm-max-tokens", "16"),
            locustfile="locustfiles/support_chat.py",
        ),
        timeout=60,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    rows = [json.loads(line) for line in records_path.read_text().splitlines()]
    by_id = {r["request_id"]: r for r in truth(engine_mock)}
    pairs = [(r, by_id[bare_id(r["server_request_id"])]) for r in rows if r["status"] == "ok"]
    assert len(pairs) >= 8
    assert all(r["cached_prompt_tokens"] == t["engine"]["cached_tokens"] for r, t in pairs)
    hits = [r["ttft_ms"] for r, t in pairs if t["engine"]["cache_hit"]]
    misses = [r["ttft_ms"] for r, t in pairs if not t["engine"]["cache_hit"]]
    assert hits and misses and p50(hits) < 0.5 * p50(misses), (hits, misses)
    assert all(t["engine"]["cached_tokens"] >= 1984 for r, t in pairs if t["engine"]["cache_hit"])


def test_a_locust_level_measures_what_the_model_scheduled(tmp_path: Path) -> None:
    """8 support_chat users through real Locust (no prefix cache: every prompt is prefilled whole): Locust's TTFT
    and TPOT p50 are within 5 % of the model's times for the same requests (their truth), and /metrics counted the
    requests Locust completed and their tokens (plus what the requests cut off at the end had been given)."""
    config = MockConfig(engine="batching", output_tokens=48, prefix_caching="off")
    records_path = tmp_path / "records.jsonl"
    with start_subprocess(config, extra_args=["--truth-events", "64"]) as mock:
        p = run(
            locust_cmd(
                *headless(8, 3),
                "--only-summary",
                *("--host", mock.url + "/v1", "--llm-api-key-env", "none", "--llm-records", str(records_path)),
                *("--chat-turns", "2", "--chat-think-time", "0", "--chat-system-tokens", "1500"),
                locustfile="locustfiles/support_chat.py",
            ),
            timeout=60,
        )
        assert p.returncode == 0, p.stderr[-3000:]
        by_id = {r["request_id"]: r for r in truth(mock)}
        counts = scrape(mock)
    rows = [json.loads(line) for line in records_path.read_text().splitlines()]
    ok = [(r, by_id[bare_id(r["server_request_id"])]) for r in rows if r["status"] == "ok"]
    assert len(ok) >= 16
    late = [t["first_token_sent_ms"] - t["planned_ttft_ms"] for _, t in ok]
    assert within(
        p50([r["ttft_ms"] - d for (r, _), d in zip(ok, late, strict=True)]), p50([t["planned_ttft_ms"] for _, t in ok])
    )
    assert within(p50([r["tpot_ms"] for r, _ in ok]), p50([t["planned_mean_itl_ms"] for _, t in ok]))
    assert counts["vllm:request_success_total"] == len(ok)
    given = sum(r["completion_tokens"] for r, _ in ok)
    assert given <= counts["vllm:generation_tokens_total"] <= given + 48 * (len(rows) - len(ok))  # the cut-off ones


async def _document(port: int, number: int, words: int, output: int) -> tuple[float, float, str]:
    """One streamed request for a long document (its own: no prefix shared with the others): (TTFT ms, E2E ms,
    request id) as the client saw them."""
    text = f"document {number}: " + "doc " * words
    messages = [{"role": "user", "content": text}]
    body = json.dumps({"model": "m", "stream": True, "max_tokens": output, "messages": messages}).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    writer.write(head + body)
    sent, first, data = time.perf_counter(), None, b""
    while not data.endswith(END):
        chunk = await asyncio.wait_for(reader.read(65536), 20.0)
        assert chunk, "connection closed"
        data += chunk
        if first is None and TOKEN in data:
            first = time.perf_counter()
    writer.close()
    rid = data.split(b"x-mock-request-id: ", 1)[1].split(b"\r\n", 1)[0].decode()
    assert first is not None
    return (first - sent) * 1000.0, (time.perf_counter() - sent) * 1000.0, rid


def test_a_small_kv_cache_queues_and_preempts_long_documents() -> None:
    """tiny-kv (8,192 tokens): six 2,000-token documents cannot run together; the truth shows each wait and
    preemption, and the client's TTFT and E2E contain them."""
    config = MockConfig(engine="batching", engine_profile="tiny-kv", output_tokens=200)
    with start_subprocess(config) as mock:

        async def six() -> list[tuple[float, float, str]]:
            return await asyncio.gather(*(_document(mock.port, i, 2000, 120) for i in range(6)))

        seen = asyncio.run(six())
        records = {r["request_id"]: r for r in truth(mock)}
        counts = scrape(mock)
    engines = [records[rid]["engine"] for _, _, rid in seen]
    assert sum(e["preemptions"] for e in engines) >= 1 and counts["vllm:num_preemptions_total"] >= 1
    assert sum(1 for e in engines if e["queue_ms"] > 50) >= 2
    for (ttft, e2e, rid), e in zip(seen, engines, strict=True):
        first_wait_end = e["waits_ms"][0][1]
        assert ttft >= first_wait_end + e["prefill_ms"] - 1.0  # the queue and the prefill are inside the TTFT
        assert abs(ttft - records[rid]["planned_ttft_ms"]) < 25.0
        for (_, back), at in zip(e["waits_ms"][1:], e["preempted_at_ms"], strict=True):
            assert at < back < e2e  # a preemption's wait ends inside the client's E2E
        assert len(e["waits_ms"]) == e["preemptions"] + 1


SYSTEM = "You answer questions about the shipping policy. " * 40  # about 330 tokens


def test_both_apis_report_the_truths_cached_tokens(engine_mock: MockProcess) -> None:
    """The second request with the same system prompt hits the prefix cache; the usage says how much, streamed or
    not (OpenAI: prompt_tokens_details.cached_tokens; Anthropic: cache_read_input_tokens beside input_tokens)."""
    for api in ("openai", "anthropic"):
        for stream in (True, False):
            system = f"{api} {stream} " + SYSTEM
            (first, miss), (second, hit) = [ask(engine_mock, api, stream, system, q) for q in ("Where?", "When?")]
            assert miss["engine"]["cached_tokens"] == 0 and first["cached"] == 0
            whole_blocks = message_bounds([{"role": "system", "content": system}])[0] // 16 * 16
            assert hit["engine"]["cached_tokens"] == whole_blocks > 300 and second["cached"] == whole_blocks
            assert second["prompt"] == hit["reported_prompt_tokens"]


def ask(mock: MockProcess, api: str, stream: bool, system: str, question: str) -> tuple[dict[str, int], dict]:
    """One request with `system` as its system prompt: the usage as a client reads it, and its truth record."""
    if api == "openai":
        path = "/v1/chat/completions"
        messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
        body = {"model": "m", "messages": messages, "stream_options": {"include_usage": True}}
    else:
        path = "/v1/messages"
        body = {"model": "m", "system": system, "messages": [{"role": "user", "content": question}]}
    body.update({"stream": stream, "max_tokens": 4})
    request = urllib.request.Request(mock.url + path, json.dumps(body).encode())
    with urllib.request.urlopen(request, timeout=10) as r:
        rid, raw = r.headers["x-mock-request-id"], r.read()
    return usage_of(api, stream, raw), json.loads(get(mock.url + "/mock/truth?request_id=" + rid))


def usage_of(api: str, stream: bool, raw: bytes) -> dict[str, int]:
    """The prompt tokens (cached ones included) and the cached tokens a client reads from the usage."""
    if stream:
        datas = [b.partition("data: ")[2] for b in raw.decode().split("\n\n") if "data: " in b]
        events = [json.loads(d) for d in datas if d != "[DONE]"]
        if api == "anthropic":
            usage = events[0]["message"]["usage"]
        else:
            usage = next(e["usage"] for e in events if e.get("usage"))
    else:
        usage = json.loads(raw)["usage"]
    if api == "anthropic":
        cached = usage["cache_read_input_tokens"]
        return {"prompt": usage["input_tokens"] + cached, "cached": cached}
    return {"prompt": usage["prompt_tokens"], "cached": usage["prompt_tokens_details"]["cached_tokens"]}


def test_the_capacity_route_answers_what_the_simulation_finds(engine_mock: MockProcess) -> None:
    """GET /mock/capacity is the simulation's answer for the query's bounds and workload; a query without a bound
    or with a bad number is a 400."""
    query = "ttft_p95_ms=300&tpot_p50_ms=30&prompt_tokens=64&output_tokens=8"
    bounds = [Bound("ttft", 0.95, 300.0), Bound("tpot", 0.5, 30.0)]
    with ThreadPoolExecutor(1) as pool:  # the same simulation here while the mock runs its own (two processes)
        expected = pool.submit(capacity_json, PROFILE, Workload(64, 8), bounds, 0)
        answer = json.loads(get(engine_mock.url + "/mock/capacity?" + query, 60))  # a few seconds of simulation
        slow = json.loads(get(engine_mock.url + "/mock/capacity?" + query + "&link_ms=20&think_ms=5", 60))
        assert answer == json.loads(expected.result()) and answer["users"] > 1 and answer["rate_per_s"] > 1
    # the same route with the client's link and think time (its simulation is unit-tested; recomputing it here would
    # cost as long again): echoed, and fewer users hold once 40 ms of TTFT's 300 go to the link
    assert (slow["workload"]["link_ms"], slow["workload"]["think_ms"]) == (20.0, 5.0)
    assert slow["users"] < answer["users"]
    for bad in ("prompt_tokens=512", "ttft_p95_ms=fast", "ttft_p95_ms=300&link_ms=-1"):
        with pytest.raises(urllib.error.HTTPError) as err:
            get(engine_mock.url + "/mock/capacity?" + bad)
        assert err.value.code == 400
