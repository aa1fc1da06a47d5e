"""The cache probe's variations (each changes what it says it changes) and its results (hit shares, savings, and
which variations bust which layer), without a server."""

from __future__ import annotations

from types import SimpleNamespace

from loadlib.metrics import cache_probe_results as res
from loadlib.metrics.scenarios import ScenarioResults, key
from loadlib.providers.base import StreamResult
from loadlib.records.record import RequestRecord
from loadlib.scenarios import cache_variations as cv
from loadlib.scenarios.cache_probe import count_request

BASE = cv.ProbeRequest(system="[tag] You are a helper.", document="# Doc\n\nfirst\n\nsecond\n\nthird")


def test_each_variation_changes_one_thing() -> None:
    by_name = {v.name: v for v in cv.variations("openai")}
    got = {n: v.apply(BASE, "openai", "m-2") for n, v in by_name.items()}
    assert got["none"] == BASE
    assert got["model_alias"].body == {"model": "m-2"} and got["top_p"].body == {"top_p": 0.9}
    assert got["temperature_float"].temperature == 0.7000000001 and BASE.temperature == 0.7
    assert got["user_field"].body == {"user": "probe-user-2"}
    assert (
        got["request_id"].headers["x-request-id"] != by_name["request_id"].apply(BASE, "", "").headers["x-request-id"]
    )
    assert got["prefix_whitespace"].system == "[tag]  You are a helper."
    assert got["prefix_order"].document == "first\n\n# Doc\n\nsecond\n\nthird"


def test_anthropic_gets_the_prefix_as_a_cached_system_block() -> None:
    (user,), body = cv.messages(BASE, "anthropic")
    assert user["role"] == "user" and body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["system"][0]["text"].startswith("[tag] You are a helper.\n\n# Doc")
    msgs, body = cv.messages(cv.variations("anthropic")[5].apply(BASE, "anthropic", ""), "openai")
    assert msgs[0]["role"] == "system" and body == {"metadata": {"user_id": "probe-user-2"}}


def test_gateway_headers_say_hit_or_miss() -> None:
    assert res.response_hit({}) is None and res.response_hit({"retry-after": "1"}) is None
    assert res.response_hit({"x-cache": "HIT"}) and res.response_hit({"x-cache": "Hit from cloudfront"})
    assert res.response_hit({"x-cache": "MISS"}) is False and res.response_hit({"cf-cache-status": "HIT"})


def probe(r: ScenarioResults, name: str, hits: int, cached: int, whole: int, ttft_us: int, cost_nusd: int) -> None:
    res.count(r, name, requests=4, answered=4, header_seen=4, response_hits=hits, ttft_n=4, ttft_us=ttft_us, costed=4)
    res.count(r, name, cost_nusd=cost_nusd, cached_tokens=cached, whole_prompt_tokens=whole)


def test_shares_savings_and_busts() -> None:
    r = ScenarioResults()
    probe(r, res.WARMUP, 0, 0, 4000, 400_000, 4000)
    probe(r, "none", 4, 0, 0, 4_000, 0)
    probe(r, "temperature", 0, 3200, 4000, 200_000, 2000)
    probe(r, "prefix_order", 0, 0, 4000, 400_000, 4000)
    r.gauge(key(res.NAME, "order"), "none,temperature,prefix_order")
    res.gauge_changes(r, "temperature", ("temperature",))
    got = res.summarize(r, {})
    assert got is not None and got["rounds"] == 4 and got["response_cache_source"] == "header"
    rows = {v["name"]: v for v in got["variations"]}
    assert [v["name"] for v in got["variations"]] == ["none", "temperature", "prefix_order"]
    assert rows["none"]["prompt_cache_hit_share"] is None and rows["temperature"]["prompt_cache_hit_share"] == 0.8
    assert rows["none"]["ttft_saved_ms"] == 99.0 and rows["temperature"]["ttft_saved_ms"] == 50.0
    assert rows["none"]["cost_saved_usd"] == 4e-6 and rows["temperature"]["changes"] == ["temperature"]
    assert got["busts"] == {"prompt_cache": ["prefix_order"], "response_cache": ["temperature", "prefix_order"]}
    text = "\n".join(res.render(got))
    assert "busts the response cache: temperature, prefix_order" in text and "80.0 % kept" in text


def test_a_request_the_runs_end_cut_off_is_neither_hit_nor_miss() -> None:
    r = ScenarioResults()
    probe(r, "none", 4, 0, 0, 4_000, 0)
    probe(r, "temperature", 0, 0, 4000, 200_000, 2000)
    res.count(r, "none", requests=1)  # cut off: counted as a request, not answered
    got = res.summarize(r, {})
    assert got is not None and [(v["requests"], v["answered"]) for v in got["variations"]] == [(5, 4), (4, 4)]
    assert got["busts"]["response_cache"] == ["temperature"]


def test_layers_without_a_sign_are_not_judged() -> None:
    r = ScenarioResults()
    probe(r, "none", 0, 0, 4000, 4_000, 0)
    got = res.summarize(r, {})
    assert got is not None and got["busts"] == {"prompt_cache": None, "response_cache": None}
    text = "\n".join(res.render(got))
    assert "  no prompt cache seen" in text and "  no response cache seen\n" in text + "\n"


def test_the_section_follows_the_published_schema() -> None:
    import json
    from pathlib import Path

    from jsonschema import Draft202012Validator

    schema = json.loads((Path(__file__).resolve().parents[3] / "schemas" / "summary-v1.schema.json").read_text())
    validator = Draft202012Validator(schema["$defs"]["scenarios"]["properties"]["cache_probe"])
    r = ScenarioResults()
    probe(r, res.WARMUP, 0, 0, 4000, 400_000, 4000)
    probe(r, "none", 4, 0, 0, 4_000, 0)
    got = res.summarize(r, {})
    validator.validate(got)
    assert not validator.is_valid({**(got or {}), "busts": {"prompt_cache": "none"}})


def test_without_any_cache_header_hits_are_inferred_from_whole_answers() -> None:
    r = ScenarioResults()
    res.count(r, res.WARMUP, requests=2, ttft_n=2, ttft_us=400_000)
    res.count(r, "none", requests=2, answered=2, inferred_hits=2, ttft_n=2, ttft_us=2_000)
    res.count(r, "temperature", requests=2, answered=2, inferred_hits=0, ttft_n=2, ttft_us=380_000)
    got = res.summarize(r, {})
    assert got is not None and got["response_cache_source"] == "inferred"
    assert [v["response_cache_hits"] for v in got["variations"]] == [2, 0]
    assert got["busts"]["response_cache"] == ["temperature"]
    said = "busts the response cache (inferred from repeated answers sent all at once): temperature"
    assert said in "\n".join(res.render(got))


def test_a_response_cache_that_some_answers_came_from_but_not_all_of_none_is_not_judged() -> None:
    r = ScenarioResults()
    res.count(r, "none", requests=4, answered=4, inferred_hits=3)
    res.count(r, "temperature", requests=4, answered=4)
    got = res.summarize(r, {})
    assert got is not None and got["busts"]["response_cache"] is None
    said = "the response cache is not judged: 3 hits, but `none` got 3 of its 4 answers from it"
    assert res.verdicts(got)[0] == said
    r = ScenarioResults()
    res.count(r, "temperature", requests=4, answered=4, inferred_hits=1)
    got = res.summarize(r, {})
    assert got is not None and "no `none` variation to judge against" in res.verdicts(got)[0]


def record(ttft: float, gap: float | None, events: int = 32, headers: dict | None = None) -> RequestRecord:
    fields = dict(run_id="r", scenario=res.NAME, endpoint="e", provider="openai", model="m", worker_id="w")
    return RequestRecord(
        **fields,
        request_id="q",
        ttft_ms=ttft,
        e2e_ms=ttft + (gap or 0) * (events - 1),
        stream_tpot_ms=gap,
        output_events=events,
        prompt_tokens=2100,
        cached_prompt_tokens=0 if ttft > 100 else 2064,
        ratelimit=headers or {},
    )


def probe_round(answers: list[tuple[str, RequestRecord]]) -> dict:
    """One round through the probe's own counting (`count_request`): the cold request, then `none`, `temperature`,
    `prefix_order`, each (text, record)."""
    user = SimpleNamespace(found=ScenarioResults())
    user.found.gauge(key(res.NAME, "order"), "none,temperature,prefix_order")
    round_ = res.Round()
    for name, (text, rec) in zip([res.WARMUP, "none", "temperature", "prefix_order"], answers, strict=True):
        count_request(user, name, rec, StreamResult(text_by_choice={0: text}), round_)  # type: ignore[arg-type]
    got = res.summarize(user.found, {})
    assert got is not None
    return got


def test_a_prompt_cache_hit_is_not_a_response_cache_hit() -> None:
    """vLLM, no response cache: a prefix hit cuts TTFT from 440 to 15 ms (under a tenth, what the TTFT rule took for
    a hit), but its decode keeps its pace; at temperature 0 the text even repeats. No response-cache hit."""
    cold, kept, busted = record(440, 20), record(15, 19), record(430, 20)
    got = probe_round([("same", cold), ("same", kept), ("same", kept), ("other", busted)])
    assert [v["response_cache_hits"] for v in got["variations"]] == [0, 0, 0]
    assert got["busts"] == {"prompt_cache": ["prefix_order"], "response_cache": None}
    assert res.verdicts(got)[0] == "no response cache seen (no cache header; no answer repeated at once)"


def test_a_repeated_answer_sent_at_once_is_a_response_cache_hit() -> None:
    """A gateway's cache: `none` gets the cold answer's text with its events at once (or in one event); `temperature`
    misses and is decoded anew (another text, its pace); a fast answer with new text is not a hit."""
    cold, miss = record(440, 20), record(15, 19)
    got = probe_round([("a", cold), ("a", record(1, 0.01)), ("b", miss), ("c", record(1, 0.0, events=1))])
    assert [v["response_cache_hits"] for v in got["variations"]] == [1, 0, 0]
    assert got["busts"]["response_cache"] == ["temperature", "prefix_order"]
    again = probe_round([("a", cold), ("a", record(1, None, events=1)), ("a", miss), ("a", record(1, 0.0, events=1))])
    assert [v["response_cache_hits"] for v in again["variations"]] == [1, 0, 1], "in one burst; an earlier text"


def test_headers_outrank_the_inference_and_no_pace_to_compare_infers_nothing() -> None:
    cold, fast = record(440, 20, headers={"x-cache": "MISS"}), record(1, 0.0, headers={"x-cache": "MISS"})
    got = probe_round([("a", cold), ("a", fast), ("a", fast), ("a", fast)])
    assert got["response_cache_source"] == "header" and got["busts"]["response_cache"] is None
    one = record(300, None, events=1)  # a cold answer in one event: nothing to say a replay is faster
    got = probe_round([("a", one), ("a", record(1, 0.0, events=1)), ("a", record(1, 0.0)), ("", record(1, 0.0))])
    assert [v["response_cache_hits"] for v in got["variations"]] == [0, 0, 0]
    assert res.answer("", record(1, 0.0)) is None and res.answer("x", record(1, None, events=0)).gap_ms is None
