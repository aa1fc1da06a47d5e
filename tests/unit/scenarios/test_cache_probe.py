"""The cache probe's variations (each changes what it says it changes) and its results (hit shares, savings, and
which variations bust which layer), without a server."""

from __future__ import annotations

from loadlib.metrics import cache_probe_results as res
from loadlib.metrics.scenarios import ScenarioResults, key
from loadlib.scenarios import cache_variations as cv

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
    assert "busts the prompt cache: not seen" in "\n".join(res.render(got))


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


def test_without_any_cache_header_hits_are_inferred_from_a_ttft_collapse() -> None:
    r = ScenarioResults()
    res.count(r, res.WARMUP, requests=2, ttft_n=2, ttft_us=400_000)
    res.count(r, "none", requests=2, answered=2, inferred_hits=2, ttft_n=2, ttft_us=2_000)
    res.count(r, "temperature", requests=2, answered=2, inferred_hits=0, ttft_n=2, ttft_us=380_000)
    got = res.summarize(r, {})
    assert got is not None and got["response_cache_source"] == "inferred"
    assert [v["response_cache_hits"] for v in got["variations"]] == [2, 0]
    assert got["busts"]["response_cache"] == ["temperature"]
    assert "busts the response cache (inferred from TTFT collapse): temperature" in "\n".join(res.render(got))
