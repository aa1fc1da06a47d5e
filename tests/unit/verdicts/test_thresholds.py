"""The threshold parser: every documented form parses to the right fields, and every mistake is refused in one line
that names the expression, the problem and what is valid (k6 silently ignores such thresholds; we must not)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadlib.errors import ConfigError
from loadlib.verdicts.k6 import duration_s
from loadlib.verdicts.thresholds import METRICS, Threshold, load_file, parse, parse_all, parse_option

DOC = Path(__file__).resolve().parents[3] / "docs" / "thresholds.md"

PARSED = [
    # expression, metric, tags, aggregate, op, limit (base units), unit
    ("ttft p95 < 150ms", "ttft", (), "p95", "<", 150.0, "ms"),
    ("e2e p99 < 2s", "e2e", (), "p99", "<", 2000.0, "s"),
    ("error_rate < 1%", "error_rate", (), None, "<", 0.01, "%"),
    ("error_rate{class=rate_limited} < 5%", "error_rate", (("class", "rate_limited"),), None, "<", 0.05, "%"),
    (
        "ttft{scenario=support_chat,endpoint=primary} p95 <= 300ms",
        "ttft",
        (("scenario", "support_chat"), ("endpoint", "primary")),
        "p95",
        "<=",
        300.0,
        "ms",
    ),
    ("output_tokens_per_s > 500", "output_tokens_per_s", (), None, ">", 500.0, ""),
    ("cost_per_1k_tokens <= 0.0015", "cost_per_1k_tokens", (), None, "<=", 0.0015, ""),
    ("schema_valid >= 99%", "schema_valid", (), None, ">=", 0.99, "%"),
    # bare numbers: ms for latencies, a fraction for rates and shares
    ("tpot p50 < 40", "tpot", (), "p50", "<", 40.0, ""),
    ("deterministic >= 0.95", "deterministic", (), None, ">=", 0.95, ""),
    # k6 spellings, no spaces, the k6 tag separator, tags in any order
    ("ttft p(95)<150", "ttft", (), "p95", "<", 150.0, ""),
    ("e2e avg < 2.5s", "e2e", (), "mean", "<", 2500.0, "s"),
    ("itl med <= 12.5 ms", "itl", (), "p50", "<=", 12.5, "ms"),
    ("ttft{endpoint:b, scenario:a} max==1e3", "ttft", (("scenario", "a"), ("endpoint", "b")), "max", "==", 1000.0, ""),
    ("errors{class=timeout_total} == 0", "errors", (("class", "timeout_total"),), None, "==", 0.0, ""),
    ("requests >= 100", "requests", (), None, ">=", 100.0, ""),
    ("ttfb p95 < 20ms", "ttfb", (), "p95", "<", 20.0, "ms"),
    ("schema_valid >= 99.9%", "schema_valid", (), None, ">=", 0.999, "%"),
    # any percentile on any latency, read from the histograms when the summary rows do not hold it
    ("ttft p90 < 150ms", "ttft", (), "p90", "<", 150.0, "ms"),
    ("e2e p99.9 < 2s", "e2e", (), "p99.9", "<", 2000.0, "s"),
    ("itl p(99.9) < 50", "itl", (), "p99.9", "<", 50.0, ""),
    ("tpot p(75) <= 30ms", "tpot", (), "p75", "<=", 30.0, "ms"),
    ("ttfb p99 < 20ms", "ttfb", (), "p99", "<", 20.0, "ms"),
    ("first_event p99.99 < 1s", "first_event", (), "p99.99", "<", 1000.0, "s"),
    ("stream_tail p99.90 < 5", "stream_tail", (), "p99.9", "<", 5.0, ""),
    ("ttft p(95.0) < 1", "ttft", (), "p95", "<", 1.0, ""),
]


@pytest.mark.parametrize(("expr", "metric", "tags", "aggregate", "op", "limit", "unit"), PARSED)
def test_parses_every_documented_form(
    expr: str, metric: str, tags: tuple, aggregate: str | None, op: str, limit: float, unit: str
) -> None:
    assert parse(expr) == Threshold(expr, metric, tags, aggregate, op, limit, unit)


REFUSED = [
    # expression, words the one-line message must hold
    ("ttfx p95 < 150ms", ["unknown metric 'ttfx'", "did you mean 'ttft'?", "valid: ttft, ttfo"]),
    ("schema_valid_share >= 0.99", ["unknown metric", "did you mean 'schema_valid'?"]),
    ("goodput > 10", ["goodput is a share between 0 and 1", "write 5% or 0.05"]),
    ("goodput p95 > 90%", ["goodput takes no aggregate, got 'p95'"]),
    ("ttft p100 < 1s", ["percentile 'p100' is not between 0 and 100", "write 'max'"]),
    ("ttft p(0) < 1s", ["percentile 'p(0)' is not between 0 and 100", "minimum"]),
    ("ttfb max < 20ms", ["unknown aggregate 'max' for ttfb", "valid: p50, p95, pN (any percentile", "mean"]),
    ("ttft pp95 < 1", ["unknown aggregate 'pp95'", "did you mean 'p95'?"]),
    ("ttft p9x < 1", ["unknown aggregate 'p9x'"]),
    ("error_rate p95 < 1%", ["error_rate takes no aggregate, got 'p95'"]),
    ("ttft < 150ms", ["ttft needs an aggregate", "valid: p50, p95, p99, pN (any percentile, e.g. p90, p99.9"]),
    # k6's words: its metric names get the loadlib name, its implied aggregation words a hint
    ("http_req_duration p(95) < 200", ["unknown metric 'http_req_duration': in loadlib that is 'e2e' (k6's name)"]),
    ("http_req_failed rate < 0.01", ["unknown metric 'http_req_failed': in loadlib that is 'error_rate' (k6's name)"]),
    ("http_reqs count > 100", ["in loadlib that is 'requests' (k6's name"]),
    ("http_req_waiting p(95) < 200", ["in loadlib that is 'ttfb' (k6's name", "'ttft'"]),
    ("iteration_duration p(95) < 1s", ["loadlib judges requests, not iterations", "'e2e'"]),
    ("error_rate rate < 0.01", ["error_rate takes no aggregate, got 'rate'", "k6's 'rate' is implied"]),
    ("errors count < 10", ["errors takes no aggregate, got 'count'", "k6's 'count' is implied"]),
    # two thresholds joined with a comma
    ("ttft p95 < 1s, error_rate < 1%", ["two thresholds joined with ','", "separate thresholds with ';'"]),
    ("error_rate{class=timeout_total,scenario=a}<1%,e2e p99<2s", ["two thresholds joined with ','"]),
    ("ttft{scenaro=chat} p95 < 1", ["unknown tag 'scenaro'", "did you mean 'scenario'?", "valid: scenario, endpoint"]),
    ("ttft{class=timeout_ttft} p95 < 1s", ["tag 'class' does not apply to ttft", "successful requests only"]),
    ("ttft{model=gpt-4o} p95 < 1s", ["tag 'model' is not available", "filter on the endpoint"]),
    ("schema_valid{scenario=compliance} >= 99%", ["schema_valid takes no tags"]),
    ("error_rate{class=rate_limit} < 5%", ["unknown error class 'rate_limit'", "did you mean 'rate_limited'?"]),
    ("error_rate{class=circuit_open} < 5%", ["unknown error class 'circuit_open'", "no attempt"]),
    ("error_rate{class=ok} < 5%", ["unknown error class 'ok'"]),
    ("ttft{scenario=a b} p95 < 1", ["tag 'scenario' has the value 'a b'"]),
    ("ttft{scenario=a,scenario=b} p95 < 1", ["tag 'scenario' given twice"]),
    ("ttft{} p95 < 1", ["an empty tag filter"]),
    ("ttft{scenario=a p95 < 1", ["never closed"]),
    ("ttft{scenario} p95 < 1", ["'scenario' is not TAG=VALUE"]),
    ("ttft p95 < 150%", ["unit '%' does not fit ttft (a latency)", "valid: ms, s, (none) = ms"]),
    ("error_rate < 1ms", ["unit 'ms' does not fit error_rate (a rate)", "valid: %"]),
    ("cost_usd < 5$", ["unit '$' does not fit cost_usd (a cost)"]),
    ("ttft p95 < 2sec", ["unit 'sec' does not fit ttft"]),
    ("error_rate < 5", ["above it", "write 5% or 0.05"]),
    ("schema_valid >= 101%", ["above it", "cannot pass 100%"]),
    ("ttft p95 => 150ms", ["unknown operator '=>'", "did you mean '>='?", "valid: <, <=, >, >=, =="]),
    ("ttft p95 = 150ms", ["unknown operator '='", "did you mean '=='?"]),
    ("ttft p95 != 150ms", ["unknown operator '!='", "valid: <, <="]),
    ("ttft p95 < abc", ["'abc' is not a number"]),
    ("ttft p95 < -5ms", ["'-5ms' is not a number", "non-negative"]),
    ("ttft p95 < 1,5s", ["'1,5s' is not a number"]),
    ("ttft p95 < 1e999", ["too large"]),
    ("ttft p95 150ms", ["no comparison after 'ttft'", "METRIC[{TAG=VALUE,...}]"]),
    ("", ["an empty threshold"]),
    ("95th ttft < 1", ["does not start with a metric name"]),
]


@pytest.mark.parametrize(("expr", "words"), REFUSED, ids=[r[0] or "empty" for r in REFUSED])
def test_refuses_in_one_line_naming_the_expression_and_the_problem(expr: str, words: list[str]) -> None:
    with pytest.raises(ConfigError) as info:
        parse(expr, where="--llm-threshold")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"--llm-threshold {expr!r}: ")
    for word in words:
        assert word in message


_PIECES = [*"tfpe29<>=!{},:% ms._-1e0()", "ttft", "error_rate", " p95 ", "class=", "scenario=", "\n", "\x00"]


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.text(max_size=30), st.lists(st.sampled_from(_PIECES), max_size=15).map("".join)))
def test_any_text_parses_or_is_refused_in_one_line(expr: str) -> None:
    try:
        parse(expr)
    except ConfigError as exc:
        assert "\n" not in str(exc)


def test_parse_all_keeps_the_order_and_names_the_bad_one() -> None:
    assert [t.metric for t in parse_all(["e2e p99 < 2s", "error_rate < 1%"])] == ["e2e", "error_rate"]
    with pytest.raises(ConfigError, match=r"^LLM_THRESHOLDS 'ttfx p95 < 1': unknown metric"):
        parse_all(["e2e p99 < 2s", "ttfx p95 < 1"], where="LLM_THRESHOLDS")


def test_every_latency_aggregate_is_one_the_summary_holds() -> None:
    # loadlib/metrics/summary.py: main latencies carry p50/p95/p99/max, TTFB and first event p50/p95; all a mean.
    main = {"p50", "p95", "p99", "max", "mean"}
    side = {"p50", "p95", "mean"}
    for name, m in METRICS.items():
        if m.kind == "latency":
            assert set(m.aggregates) <= (side if name in ("ttfb", "first_event") else main), name
        else:
            assert m.aggregates == (), name


def test_every_metric_is_documented_with_its_definition_link() -> None:
    text = DOC.read_text()
    for name, m in METRICS.items():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{name}`")), "")
        assert row, f"docs/thresholds.md has no table row for {name}"
        assert f"]({m.anchor})" in row, f"{name}'s row should link {m.anchor}"


# files


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "thresholds.yaml"
    path.write_text(text)
    return path


def test_file_as_a_list(tmp_path: Path) -> None:
    path = _file(tmp_path, "- ttft p95 < 150ms\n- 'error_rate{class=rate_limited} < 5%'\n")
    assert [t.expression for t in load_file(path)] == ["ttft p95 < 150ms", "error_rate{class=rate_limited} < 5%"]


def test_file_as_a_k6_mapping(tmp_path: Path) -> None:
    text = "thresholds:\n  ttft:\n    - p95 < 150ms\n    - p99 < 300ms\n  'error_rate{class=rate_limited}': ['< 5%']\n"
    got = load_file(_file(tmp_path, text))
    assert [(t.metric, t.aggregate, t.limit) for t in got] == [
        ("ttft", "p95", 150.0),
        ("ttft", "p99", 300.0),
        ("error_rate", None, 0.05),
    ]
    assert got[2].tags == (("class", "rate_limited"),)


def test_empty_file_has_no_thresholds(tmp_path: Path) -> None:
    assert load_file(_file(tmp_path, "")) == []


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("- ttft p95 < 150ms\n- ttfx p95 < 1\n", r"thresholds\.yaml entry 2 'ttfx p95 < 1': unknown metric 'ttfx'"),
        ("ttft:\n  - p95 < 1\n  - p9o < 1\n", r"thresholds\.yaml ttft\[2\] 'ttft p9o < 1': unknown aggregate 'p9o'"),
        ("- 150\n", r"thresholds\.yaml entry 1: 150 is not a string"),
        ("ttft: []\n", r"ttft needs a list of expressions"),
        ("just text\n", r"expected a list of expressions or a mapping"),
        ("- [unclosed\n", r"not valid YAML \(line \d+, column \d+: "),
    ],
)
def test_file_errors_name_the_file_and_the_entry(tmp_path: Path, text: str, pattern: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_file(_file(tmp_path, text))
    assert "\n" not in str(info.value)
    assert re.search(pattern, str(info.value)), str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_file(tmp_path / "nope.yaml")


def test_percentiles_are_named_one_way_whatever_the_spelling() -> None:
    """`p99.90`, `p(99.9)` and `p99.9` are one aggregate, so a user threshold replaces the scenario default."""
    assert {parse(e).aggregate for e in ("ttft p99.90 < 1", "ttft p(99.9) < 1", "ttft p99.9 < 1")} == {"p99.9"}
    assert parse("ttft p(90) < 1").aggregate == parse("ttft p90.0 < 1").aggregate == "p90"


# the --llm-threshold option's string


def test_the_option_string_splits_on_semicolons_and_drops_empty_pieces() -> None:
    assert [t.metric for t in parse_option("ttft p95 < 1s; error_rate < 1%;")] == ["ttft", "error_rate"]
    assert [t.metric for t in parse_option(" e2e p99 < 2s ;; requests > 10 ")] == ["e2e", "requests"]


@pytest.mark.parametrize("text", ["", None])
def test_the_option_default_means_no_thresholds(text: str | None) -> None:
    assert parse_option(text) == []


@pytest.mark.parametrize("text", [";", " ; ; ", " ", ";;", "\t"])
def test_an_option_string_with_only_separators_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_option(text)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"--llm-threshold {text!r}: no threshold in it")


def test_comma_joined_thresholds_in_the_option_get_the_semicolon_hint() -> None:
    with pytest.raises(ConfigError, match=r"two thresholds joined with ','.*separate thresholds with ';'"):
        parse_option("ttft p95 < 1s, error_rate < 1%")


# k6's per-threshold object in a file


def test_file_object_form_in_a_list_and_in_a_k6_mapping(tmp_path: Path) -> None:
    text = (
        "thresholds:\n"
        "  ttft:\n"
        "    - p95 < 150ms\n"
        "    - {threshold: p99 < 300ms, abortOnFail: true, delayAbortEval: 1m30s}\n"
        "  error_rate: {threshold: '< 1%', abortOnFail: false}\n"
    )
    got = load_file(_file(tmp_path, text))
    assert [(t.expression, t.abort_on_fail, t.abort_delay_s) for t in got] == [
        ("ttft p95 < 150ms", None, None),
        ("ttft p99 < 300ms", True, 90.0),
        ("error_rate < 1%", False, None),
    ]
    listed = load_file(_file(tmp_path, "- {threshold: 'e2e p(99.9) < 2s', abortOnFail: true}\n- requests > 10\n"))
    assert [(t.aggregate, t.abort_on_fail, t.abort_delay_s) for t in listed] == [
        ("p99.9", True, None),
        (None, None, None),
    ]


def test_a_k6_json_thresholds_file_loads(tmp_path: Path) -> None:
    """k6's options as JSON, with loadlib's metric names: the object form and a plain string side by side."""
    data = {"thresholds": {"e2e": [{"threshold": "p(95)<200", "abortOnFail": True, "delayAbortEval": "10s"}, "max<1s"]}}
    path = tmp_path / "thresholds.json"
    path.write_text(json.dumps(data))
    got = load_file(path)
    assert [(t.aggregate, t.limit, t.abort_on_fail, t.abort_delay_s) for t in got] == [
        ("p95", 200.0, True, 10.0),
        ("max", 1000.0, None, None),
    ]


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        ("- {threshold: ttft p95 < 1s, abort_on_fail: true}\n", r"entry 1: unknown key 'abort_on_fail' in a thresh"),
        ("- {threshold: ttft p95 < 1s, abortonfail: true}\n", r"k6 spells it 'abortOnFail'\); valid: threshold, abo"),
        ("- {abortOnFail: true}\n", r"entry 1: a threshold object needs the key 'threshold'"),
        ("- {threshold: ttft p95 < 1s, abortOnFail: 'yes please'}\n", r"abortOnFail is 'yes please'; write true or f"),
        ("- {threshold: ttft p95 < 1s, delayAbortEval: 10}\n", r"delayAbortEval 10 is not a duration; write it with"),
        ("- {threshold: ttft p95 < 1s, delayAbortEval: 10 sec}\n", r"delayAbortEval '10 sec' is not a duration"),
        ("- {threshold: 150}\n", r"entry 1: 150 is not a string"),
        ("ttft: [{threshold: p90 < 1, abortOnFail: true}, {threshold: p9x < 1}]\n", r"ttft\[2\] 'ttft p9x < 1': unk"),
        ("ttft: {p95: < 1s}\n", r"ttft\[1\]: unknown key 'p95' in a threshold object"),
        ("- http_req_duration p(95) < 200\n", r"entry 1 'http_req_duration p\(95\) < 200': .* 'e2e' \(k6's name\)"),
    ],
)
def test_file_object_form_errors_are_one_line_naming_the_entry(tmp_path: Path, text: str, pattern: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_file(_file(tmp_path, text))
    assert "\n" not in str(info.value)
    assert re.search(pattern, str(info.value)), str(info.value)


@pytest.mark.parametrize(
    ("text", "seconds"), [("10s", 10.0), ("500ms", 0.5), ("1m30s", 90.0), ("1.5h", 5400.0), ("0s", 0.0)]
)
def test_k6_durations(text: str, seconds: float) -> None:
    assert duration_s(text) == seconds


@pytest.mark.parametrize("text", ["10", "", "s", "-1s", "10 s", "1d", "1e3s", "10sec"])
def test_not_k6_durations(text: str) -> None:
    assert duration_s(text) is None
