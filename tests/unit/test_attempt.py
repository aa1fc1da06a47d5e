from loadlib.attempt import build_record
from loadlib.errors import ErrorClass
from loadlib.pricing import PriceTable
from loadlib.providers.base import StreamResult, Usage
from loadlib.stream import StreamOutcome

PRICES = PriceTable.from_mapping({"models": {"m": {"input": 1.0, "output": 2.0, "cached_input": 0.5}}}, "test")


def record(outcome, **kw):
    base = dict(
        run_id="r",
        scenario="chat",
        endpoint="e",
        provider="openai",
        model="m",
        worker_id="w",
        request_id="w-1",
        start_unix_ns=1,
        prices=PRICES,
    )
    base.update(kw)
    return build_record(outcome, **base)


def test_timing_and_tokens_from_a_stream():
    out = StreamOutcome(
        ttfb_ms=1.0,
        first_event_ms=2.0,
        ttft_ms=100.0,
        ttfo_ms=100.0,
        e2e_ms=190.0,
        output_stamps_ms=[100.0, 110.0, 130.0, 190.0],
    )
    out.result = StreamResult(
        text_by_choice={0: "abcd"}, usage=Usage(prompt_tokens=1000, completion_tokens=10), finish_reason="stop"
    )
    r = record(out, prompt_tokens_est=990)
    assert r.itl_ms == (10.0, 20.0, 60.0)
    assert r.tpot_ms == 10.0  # (190 - 100) / (10 - 1): server tokens, not events
    assert r.output_events == 4
    assert r.cost_usd == (1000 * 1.0 + 10 * 2.0) / 1e6
    assert r.prompt_tokens == 1000 and r.prompt_tokens_est == 990
    assert r.finish_reason == "stop" and r.ok


def test_estimate_is_the_fallback_when_no_usage():
    out = StreamOutcome(ttft_ms=50.0, e2e_ms=150.0, output_stamps_ms=[50.0, 150.0])
    out.result = StreamResult(text_by_choice={0: "x"})
    r = record(out, prompt_tokens_est=100, completion_tokens_est=11)
    assert r.completion_tokens is None and r.output_tokens == 11
    assert r.tpot_ms == 10.0
    assert r.cost_usd == (100 * 1.0 + 11 * 2.0) / 1e6


def test_failed_attempt_has_no_tpot_and_keeps_its_message():
    out = StreamOutcome(
        status=ErrorClass.STREAM_BROKEN, message="connection lost", ttft_ms=5.0, e2e_ms=9.0, output_stamps_ms=[5.0, 9.0]
    )
    r = record(out)
    assert r.status is ErrorClass.STREAM_BROKEN and r.tpot_ms is None and r.error_message == "connection lost"
    assert not r.ok


def test_unpriced_model_costs_none():
    out = StreamOutcome(ttft_ms=1.0, e2e_ms=2.0, output_stamps_ms=[1.0])
    out.result = StreamResult(text_by_choice={0: "x"}, usage=Usage(prompt_tokens=1, completion_tokens=1))
    assert record(out, model="unknown-model").cost_usd is None
