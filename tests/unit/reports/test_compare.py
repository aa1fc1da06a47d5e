"""The comparison on hand-built summaries: three endpoints (fast and dear, slow and cheap, in between) as three
summaries and as one pool summary, the bars (pass, fail, unknown), merging rows, and what the costs rest on."""

from __future__ import annotations

from typing import Any

import pytest

from loadlib.records.pricing import ModelPrice, PriceTable
from loadlib.reports.compare import FAIL, PASS, UNKNOWN, Bars, Verdict, assess, decide, usd
from loadlib.reports.compare_load import candidates, unique_names
from loadlib.reports.compare_prices import priced
from loadlib.reports.compare_render import markdown_report

TOKENS = 100_000  # per endpoint: blended $ per 1K = cost / 100
# name: (TTFT p95 ms, run cost USD) -> fast $0.003/1K, middle $0.001/1K, slow $0.0005/1K
THREE = {"fast": (100.0, 0.30), "middle": (250.0, 0.10), "slow": (600.0, 0.05)}
BIG = {"largest_fit": 200_000, "smallest_failure": None, "failure": None}


def dist(p50: float | None, p95: float | None, count: int) -> dict[str, Any]:
    return {"count": count, "mean": p50, "p50": p50, "p95": p95, "p99": p95, "max": p95}


def row(endpoint: str, ttft_p95: float, cost: float | None, scenario: str = "chat", **kw: Any) -> dict[str, Any]:
    """A summary row of 100 successful requests (or `count`, `errors`) over 100K tokens, 40 % of them prompt."""
    count = kw.pop("count", 100)
    errors = kw.pop("errors", {})
    ok = count - sum(errors.values())
    tokens = kw.pop("tokens", TOKENS)
    out = {
        "name": f"{scenario} @ {endpoint}",
        "scenario": scenario,
        "endpoint": endpoint,
        "count": count,
        "ok": ok,
        "errors_total": count - ok,
        "error_rate": (count - ok) / count if count else None,
        "errors": errors,
        "latency_ms": {
            "ttft": dist(ttft_p95 / 2, ttft_p95, ok),
            "e2e": dist(ttft_p95 * 3, ttft_p95 * 4, ok),
            "tpot": dist(10.0, 12.0, ok),
        },
        "output_tokens_per_s": 500.0,
        "prompt_tokens": tokens * 4 // 10,
        "completion_tokens": tokens * 6 // 10,
        "cached_prompt_tokens": 0,
        "cost_usd": cost,
        "unpriced_requests": 0,
        "usage_rejected": 0,
        "token_estimate": {
            "prompt": {"count": ok, "over_10pct": 0},
            "completion": {"count": ok // 20, "over_10pct": 0},
        },
    }
    out.update(kw)
    return out


def summary(*rows: dict[str, Any], probe: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    doc = {"long_document": {"probe": probe}} if probe is not None else None
    return {
        "meta": {"run_id": meta.pop("run_id", "run-1"), **meta},
        "rows": list(rows),
        "total": None,
        "scenarios": doc,
    }


def three_summaries(probe: dict[str, Any] | None = BIG) -> list[tuple[dict[str, Any], str]]:
    """One summary per endpoint, each with a context probe."""
    return [
        (summary(row(n, p95, cost), probe=probe, run_id=f"run-{n}"), f"{n}.json") for n, (p95, cost) in THREE.items()
    ]


def pool_summary(**kw: Any) -> dict[str, Any]:
    """One run of a pool of three endpoints side by side."""
    return summary(*(row(n, p95, cost) for n, (p95, cost) in THREE.items()), **kw)


DEFAULT_BARS = Bars()


def verdict(
    inputs: list[tuple[dict[str, Any], str]],
    bars: Bars = DEFAULT_BARS,
    table: PriceTable | None = None,
    known_only: bool = False,
) -> Verdict:
    found = unique_names(m for s, f in inputs for m in candidates(s, f))
    pairs = [priced(m, table or PriceTable({}), {}) for m in found]
    return decide(assess(pairs, bars), bars, known_only)


def results(v: Verdict, bar: str) -> dict[str, str]:
    return {a.m.name: a.bars[bar] for a in v.assessed}


def test_three_summaries_give_the_front_and_the_cheapest_endpoint_that_passes_every_bar() -> None:
    v = verdict(three_summaries())
    assert v.front == ["fast", "middle", "slow"]  # a trade-off each: nothing is both cheaper and faster
    assert results(v, "latency") == {"fast": PASS, "middle": PASS, "slow": FAIL}
    assert results(v, "cost") == {"fast": FAIL, "middle": PASS, "slow": PASS}
    assert results(v, "context") == {"fast": PASS, "middle": PASS, "slow": PASS}
    assert v.recommended == "middle"
    assert v.reason == "the only endpoint that passes every bar ($0.001 per 1K tokens), on the Pareto front"
    assert v.excluded == [
        "fast: fails cost: $0.003 > $0.0015 per 1K tokens",
        "slow: fails latency: TTFT p95 600 ms >= 380 ms",
    ]


def test_one_pool_summary_with_three_endpoints_gives_the_same_verdict() -> None:
    v = verdict([(pool_summary(), "pool.json")], Bars(min_context=None))
    assert [a.m.name for a in v.assessed] == ["fast", "middle", "slow"]
    assert v.front == ["fast", "middle", "slow"]
    assert v.recommended == "middle"
    assert [a.costs.blended for a in v.assessed] == pytest.approx([0.003, 0.001, 0.0005])


def test_a_dominated_endpoint_leaves_the_front_and_loosened_bars_pick_the_cheapest() -> None:
    worse = summary(row("worse", 700.0, 0.20), probe=BIG, run_id="run-worse")
    v = verdict([*three_summaries(), (worse, "worse.json")], Bars(max_latency_ms=1000.0, max_usd_per_1k=0.01))
    assert v.front == ["fast", "middle", "slow"]
    assert v.off_front == {"worse": ["middle", "slow"]}
    assert v.recommended == "slow"
    assert v.reason.startswith("the cheapest of the 4 that pass every bar ($0.0005 per 1K tokens)")


CONTEXT_UNKNOWN = (
    "Context is unknown for all three endpoints: measure it with the long-document probe, one run per endpoint "
    "(locustfiles/long_document.py --doc-mode probe), and pass those summaries too, or drop the bar with "
    "--min-context off."
)


def test_no_context_probe_is_unknown_not_a_pass_so_nothing_is_recommended_and_the_verdict_says_why_plainly() -> None:
    v = verdict(three_summaries(probe=None))
    assert results(v, "context") == {"fast": UNKNOWN, "middle": UNKNOWN, "slow": UNKNOWN}
    assert (v.recommended, v.basis) == (None, "")
    assert v.reason == (
        "middle passes every known bar, but its context is unknown, and unknown is never a pass; "
        "add --recommend-known to recommend on the known bars"
    )
    assert v.unknowns == [CONTEXT_UNKNOWN]
    assert "middle: context unknown: no long-document probe in its run" in v.excluded


def test_recommend_known_picks_among_the_known_bars_and_says_so() -> None:
    v = verdict(three_summaries(probe=None), known_only=True)
    assert (v.recommended, v.basis) == ("middle", "known")
    assert v.reason == "the only endpoint that passes every known bar ($0.001 per 1K tokens), on the Pareto front"
    assert v.unknowns == [CONTEXT_UNKNOWN]  # still unknown, never a pass
    assert results(v, "context") == {"fast": UNKNOWN, "middle": UNKNOWN, "slow": UNKNOWN}
    assert not any(a.passes for a in v.assessed)


def test_recommend_known_prefers_an_endpoint_that_passes_every_bar() -> None:
    v = verdict(three_summaries(), known_only=True)
    assert (v.recommended, v.basis, v.unknowns) == ("middle", "every", [])
    assert v.reason.startswith("the only endpoint that passes every bar")


def test_recommend_known_never_picks_an_endpoint_that_fails_a_known_bar_or_has_no_known_bar() -> None:
    v = verdict(three_summaries(probe=None), Bars(max_usd_per_1k=0.0004), known_only=True)
    assert (v.recommended, v.reason) == (None, "no endpoint passes every bar")
    assert v.unknowns == [CONTEXT_UNKNOWN]
    dead = summary(row("dead", 100.0, None, count=5, errors={"http_5xx": 5}, tokens=0), run_id="d")
    v = verdict([(dead, "d.json")], Bars(max_usd_per_1k=None), known_only=True)
    assert results(v, "latency") == {"dead": UNKNOWN} and v.recommended is None
    assert v.unknowns[0].startswith("Latency is unknown for dead: no request succeeded, so there is no p95")


def test_unknown_sentences_name_whom_a_bar_is_unknown_for() -> None:
    one = summary(row("a", 100.0, 0.05), probe=BIG, run_id="a")
    none = [(summary(row(n, 100.0, 0.05), run_id=n), f"{n}.json") for n in ("b", "c")]
    v = verdict([(one, "a.json"), *none], Bars(max_usd_per_1k=0.0001))
    assert v.unknowns[0].startswith("Context is unknown for b and c: measure it")
    v = verdict([(one, "a.json"), *none])
    assert (v.recommended, v.basis, v.unknowns) == ("a", "every", [])  # an unknown that decides nothing is not news
    v = verdict(none)
    assert v.unknowns[0].startswith("Context is unknown for both endpoints: measure it")
    assert v.reason.startswith("both endpoints pass every known bar, but their context is unknown")


def test_context_bar_fails_below_the_limit_and_is_unknown_when_the_probe_stopped_short() -> None:
    small = {"largest_fit": 60_000, "smallest_failure": 64_000, "failure": "context_length_exceeded"}
    short = {"largest_fit": 64_000, "smallest_failure": None, "failure": None}
    inputs = [
        (summary(row("a", 100.0, 0.05), probe=small, run_id="a"), "a.json"),
        (summary(row("b", 100.0, 0.05), probe=short, run_id="b"), "b.json"),
    ]
    v = verdict(inputs)
    assert results(v, "context") == {"a": FAIL, "b": UNKNOWN}
    why = {a.m.name: a.why["context"] for a in v.assessed}
    assert why["a"] == "64,000 tokens already failed (context_length_exceeded), 128,000 needed"
    assert why["b"] == "no limit up to 64,000 tokens: the probe did not settle 128,000"
    assert v.recommended is None


def test_a_pool_runs_probe_belongs_to_no_single_endpoint() -> None:
    rows = [row("fast", 100.0, 0.3, scenario="long_document"), row("slow", 600.0, 0.05, scenario="long_document")]
    v = verdict([(summary(*rows, probe=BIG), "s.json")])
    assert results(v, "context") == {"fast": UNKNOWN, "slow": UNKNOWN}
    assert "probe went to several endpoints" in v.assessed[0].why["context"]
    one = summary(row("fast", 100.0, 0.3), row("slow", 600.0, 0.05, scenario="long_document"), probe=BIG)
    assert results(verdict([(one, "s.json")]), "context") == {"fast": UNKNOWN, "slow": PASS}


def test_an_endpoints_scenario_rows_merge_by_request_weighted_means_and_exact_sums() -> None:
    rows = [row("middle", 200.0, 0.05), row("middle", 300.0, 0.05, scenario="rag", count=300), row("fast", 100.0, 0.3)]
    m = next(m for m in candidates(summary(*rows), "s.json") if m.endpoint == "middle")
    assert m.merge == "weighted" and m.scenarios == ("chat", "rag")
    assert m.ttft_p95 == pytest.approx((200.0 * 100 + 300.0 * 300) / 400)
    assert (m.count, m.prompt_tokens + m.completion_tokens, m.cost_usd) == (400, 2 * TOKENS, pytest.approx(0.10))
    assert m.output_tps == 1000.0
    md = markdown_report(verdict([(summary(*rows), "s.json")], Bars(min_context=None)), "t")
    assert "middle: 2 scenario rows (chat, rag) merged; its TTFT, E2E and TPOT percentiles are request-weighted" in md


def test_a_one_endpoint_summary_with_several_scenarios_uses_its_exact_total_row() -> None:
    total = row("mock", 999.0, 0.2, scenario="", count=300)
    s = summary(row("mock", 200.0, 0.1), row("mock", 300.0, 0.1, scenario="rag", count=200))
    s["total"] = total
    (m,) = candidates(s, "s.json")
    assert m.merge == "exact" and m.ttft_p95 == 999.0 and m.count == 300


def test_errors_by_class_and_the_optional_error_bar() -> None:
    s = summary(row("flaky", 100.0, 0.05, count=200, errors={"http_5xx": 6, "timeout_ttft": 2}), probe=BIG)
    v = verdict([(s, "s.json")], Bars(max_error_rate=0.01))
    assert v.assessed[0].m.error_rate == pytest.approx(0.04)
    assert results(v, "errors") == {"flaky": FAIL}
    md = markdown_report(v, "t")
    assert "http_5xx 6 (3.00 %), timeout_ttft 2 (1.00 %)" in md


def test_prices_as_of_and_source_come_from_the_table_for_a_one_endpoint_summary() -> None:
    s = summary(row("mock", 100.0, 0.16), probe=BIG, model="mock-llm", provider="openai")
    v = verdict([(s, "s.json")], table=PriceTable.load(None))
    a = v.assessed[0]
    assert a.priced.model == "mock-llm" and a.priced.origin == "table"
    assert (a.costs.input_1k, a.costs.output_1k) == (0.001, 0.002)
    as_of = PriceTable.load(None).as_of
    assert f"prices as of {as_of.isoformat()} (loadlib docs/mock.md (not a real price))" in markdown_report(v, "t")
    assert a.costs.notes == ()  # the run's cost ($0.16 for 40K + 60K tokens) is what these prices give


def test_a_pool_summary_names_no_model_until_the_pool_file_does() -> None:
    (m, *_) = candidates(pool_summary(model="mock-llm"), "s.json")
    assert m.model is None  # meta.model is the run's default, not the endpoints'
    _, p = priced(m, PriceTable.load(None), {})
    assert p.origin == "none" and "--pool" in p.why


def test_unpriced_estimated_and_mismatched_costs_are_marked() -> None:
    table = PriceTable({"known": ModelPrice(1.0, 2.0)}, source="t.yaml")
    cases = [
        summary(row("unknown", 100.0, None), model="llama-3", run_id="u"),
        summary(row("estimated", 100.0, 0.16, usage_rejected=7), model="known", run_id="e"),
        summary(row("mismatch", 100.0, 0.5), model="known", run_id="m"),
        summary(row("repriced", 100.0, None), model="known", run_id="r"),
        summary(row("partly", 100.0, 0.16, unpriced_requests=5), model="known", run_id="p"),
    ]
    v = verdict([(s, f"{i}.json") for i, s in enumerate(cases)], Bars(min_context=None), table)
    by = {a.m.name: a for a in v.assessed}
    assert by["unknown"].costs.blended is None and by["unknown"].bars["cost"] == UNKNOWN
    assert by["unknown"].costs.notes == ("unpriced: model 'llama-3' is not in the price table (t.yaml)",)
    assert by["estimated"].costs.estimated
    assert "tokens partly estimated (estimated on 7 of 100" in by["estimated"].costs.notes[0]
    assert "the run's cost is 212 % above what the price named here gives" in by["mismatch"].costs.notes[0]
    assert by["repriced"].costs.basis == "prices" and by["repriced"].costs.blended == pytest.approx(0.0016)
    assert by["partly"].costs.notes[0].startswith("partly unpriced: 5 requests of a model missing")
    md = markdown_report(v, "t.yaml")
    assert "| unknown | llama-3 | - | - | unpriced |" in md
    assert "$0.0016 (partly unpriced)" in md
    assert "$0.0016 (estimated tokens)" in md
    assert "prices as of an undated table (price table t.yaml)" in md


def test_no_server_usage_at_all_means_the_tokens_are_estimates() -> None:
    blind = row("blind", 100.0, 0.1, token_estimate={"prompt": {"count": 0}, "completion": {"count": 0}})
    a = verdict([(summary(blind), "s.json")], Bars(min_context=None)).assessed[0]
    assert a.costs.estimated
    assert "no server counts seen: likely estimated" in a.costs.notes[0]


def test_the_same_endpoint_name_in_two_summaries_gets_its_run_id() -> None:
    v = verdict(
        [(summary(row("mock", 100.0, 0.1), run_id="r1"), "a.json"), (summary(row("mock", 90.0, 0.1)), "b.json")]
    )
    assert [a.m.name for a in v.assessed] == ["mock (r1)", "mock (run-1)"]


def test_e2e_latency_drives_the_bar_and_the_front_when_chosen() -> None:
    v = verdict(three_summaries(), Bars(latency="e2e", max_latency_ms=1500.0))
    assert results(v, "latency") == {"fast": PASS, "middle": PASS, "slow": FAIL}  # E2E p95 = 4 x TTFT p95 here
    assert v.assessed[0].why["latency"] == "E2E p95 400 ms < 1500 ms"


def test_money_is_printed_with_three_significant_digits() -> None:
    assert [usd(v) for v in (0.0015, 0.00865, 0.0000576, 12.4, 0.0, None)] == [
        "$0.0015",
        "$0.00865",
        "$0.0000576",
        "$12.4",
        "$0",
        "-",
    ]
