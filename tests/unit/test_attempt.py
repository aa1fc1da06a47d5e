from loadlib.errors import ErrorClass
from loadlib.providers.base import StreamResult, Usage
from loadlib.records.build import build_record
from loadlib.records.pricing import PriceTable
from loadlib.transport.stream import StreamOutcome

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


def test_a_one_event_reply_has_no_tpot_and_no_itl():
    """A non-streamed JSON reply is one event: E2E equals TTFT, so (E2E - TTFT) / (n - 1) would put 0.0 into TPOT."""
    out = StreamOutcome(ttft_ms=80.0, e2e_ms=80.0, output_stamps_ms=[80.0])
    out.result = StreamResult(text_by_choice={0: "hello there"}, usage=Usage(completion_tokens=3))
    r = record(out)
    assert r.ok and r.tpot_ms is None and r.itl_ms == () and r.output_events == 1


def test_server_text_is_redacted_by_value_and_clipped():
    from loadlib.redact import Redactor

    key = "sk-proj-Abc123Def456Ghi789"
    out = StreamOutcome(
        status=ErrorClass.HTTP_4XX,
        message=f"Incorrect API key {key} (also Abc123Def456Ghi789)",
        server_request_id=key,
        headers={"retry-after": key},
    )
    out.result = StreamResult(finish_reason="Abc123Def456Ghi789" * 30)
    r = record(out, redact=Redactor([key]))
    text = repr(r)
    assert "Abc123Def456Ghi789" not in text
    assert r.error_message == "Incorrect API key <redacted> (also <redacted>)"
    assert r.server_request_id == "<redacted>" and r.ratelimit == {"retry-after": "<redacted>"}
    assert len(r.finish_reason) <= 200


def test_rejected_usage_falls_back_to_the_estimate_and_is_flagged():
    out = StreamOutcome(ttft_ms=10.0, e2e_ms=50.0, output_stamps_ms=[10.0, 50.0])
    usage = Usage(prompt_tokens=None, completion_tokens=None, rejected=("usage.completion_tokens=-5",))
    out.result = StreamResult(text_by_choice={0: "x"}, usage=usage)
    r = record(out, prompt_tokens_est=20, completion_tokens_est=4)
    assert r.usage_rejected == "usage.completion_tokens=-5"
    assert r.output_tokens == 4 and r.cost_usd is not None and r.cost_usd > 0
