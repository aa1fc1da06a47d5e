"""docs/extending.md holds: a toy provider, a toy scenario and a toy sink, one module each under tests/support/toys,
registered by name, work with no other file changed (the real run is tests/integration/test_extending_run.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from loadlib.config import key_variable, make_endpoint
from loadlib.errors import ErrorClass
from loadlib.locust.part_registry import entries
from loadlib.providers import registry
from loadlib.providers.base import ChatRequest
from loadlib.records.build import build_record
from loadlib.records.pricing import PriceTable
from tests.support.records import IDENTITY, make_record
from tests.support.toys import provider
from tests.support.wire import call, chunked, http_head

TOY_STREAM = [{"token": "Hel"}, {"token": "lo"}, {"end": "stop", "usage": {"input": 7, "output": 2}}]


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events)


# --- the provider -------------------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def toy_provider() -> Iterator[None]:
    """The toy provider registered for each test of this module only."""
    provider.register()
    try:
        yield
    finally:
        provider.unregister()


def test_the_toy_provider_is_known_by_name_with_its_facts() -> None:
    assert provider.NAME in registry.names()
    assert key_variable(None, "toy") == "TOY_API_KEY" and key_variable("none", "toy") is None
    assert registry.base_url_at("http://127.0.0.1:8000", "toy") == "http://127.0.0.1:8000/toy"
    assert "toy (a toy dialect, docs/extending.md)" in registry.providers_help()
    endpoint = make_endpoint("http://127.0.0.1:9/toy", provider="toy", model="m", require_key=False)
    assert endpoint.api_key_env == "TOY_API_KEY"


def test_the_toy_adapter_builds_its_request() -> None:
    req = registry.get_adapter("toy").build("/toy", "m", "k", ChatRequest(messages=[{"role": "user", "content": "hi"}]))
    assert (req.method, req.path, req.headers["Authorization"]) == ("POST", "/toy/generate", "Token k")
    assert orjson.loads(req.body) == {"model": "m", "prompt": "hi", "max_tokens": 256, "stream": True}


def test_the_toy_adapter_parses_a_stream_over_the_wire() -> None:
    out = call([http_head(transfer_encoding="chunked"), *chunked(*(sse(e) for e in TOY_STREAM))], provider="toy")
    assert out.status is ErrorClass.OK, out.message
    assert (out.result.text, out.result.finish_reason, out.result.output_events) == ("Hello", "stop", 2)
    assert (out.result.usage.prompt_tokens, out.result.usage.completion_tokens) == (7, 2)
    assert out.ttft_ms is not None and out.ttft_ms <= out.e2e_ms
    record = build_record(out, **{**IDENTITY, "provider": "toy"}, prices=PriceTable.load(None))
    assert (record.prompt_tokens, record.completion_tokens, record.status) == (7, 2, ErrorClass.OK)


def test_an_in_stream_error_of_the_toy_dialect_is_a_provider_error() -> None:
    body = sse({"token": "x"}, {"error": "overloaded"})
    out = call([http_head(transfer_encoding="chunked"), *chunked(body)], provider="toy")
    assert out.status is ErrorClass.PROVIDER_ERROR and "overloaded" in out.message


# --- the scenario and the sink, in run contexts of real Locust environments ---------------------------------------

RunContext: Any = None
environment: Any = None


@pytest.fixture
def toys() -> Iterator[Any]:
    """The toy sink registered for this test only; the toy scenario's module (its user class and spec)."""
    global RunContext, environment
    from loadlib.locust.context import RunContext
    from tests.support.locust_env import environment
    from tests.support.toys import scenario, sink

    sink.register()
    try:
        yield scenario
    finally:
        sink.unregister()


def test_the_toy_sink_is_registered_between_the_built_in_parts(toys: Any) -> None:
    names = [e.name for e in entries()]
    assert names.index("influxdb") < names.index("toy_sink") < names.index("scenarios")
    assert names[-1] == "verdicts"


def test_the_toy_sink_receives_every_record(toys: Any) -> None:
    from tests.support.toys import sink

    ctx = RunContext(environment())
    ctx.start()
    records = [make_record(request_id=f"t{i}", e2e_ms=10.0) for i in range(3)]
    for record in records:
        ctx.record(record)
    assert sink.of(ctx).records == records


def test_the_toy_scenarios_section_is_in_the_summary_and_its_lines(toys: Any) -> None:
    ctx = RunContext(environment(user_classes=[toys.ToyQuizUser]))
    ctx.start()
    for text in ("2", "three"):
        toys.answered(ctx.scenarios.results, text)
    summary = ctx.summary()
    assert summary["scenarios"]["toy_quiz"] == {"answers": 2, "chars_per_answer": 3.0}
    assert "toy_quiz: 2 answers, 3.0 characters each" in ctx.lines(summary)


def test_the_toy_scenarios_slo_is_among_the_thresholds(toys: Any) -> None:
    ctx = RunContext(environment(user_classes=[toys.ToyQuizUser]))
    assert ctx.verdicts.slos == {"toy_quiz": ("error_rate < 50%",)}


def test_a_run_without_the_toy_scenario_has_no_toy_section(toys: Any) -> None:
    ctx = RunContext(environment())
    ctx.start()
    toys.answered(ctx.scenarios.results, "x")
    assert "toy_quiz" not in (ctx.summary().get("scenarios") or {})
