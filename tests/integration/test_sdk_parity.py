"""Our adapters and the official SDKs read the same mock streams the same way: for one request each, both see
exactly the words the mock's ground truth says it sent, and the same usage."""

from __future__ import annotations

import json
import urllib.request

import anthropic
import openai
import pytest

from loadlib.config import Timeouts, make_endpoint
from loadlib.errors import ErrorClass
from loadlib.mock import MockConfig, expected_text, start_subprocess
from loadlib.providers.base import ChatRequest
from loadlib.providers.registry import get_adapter
from loadlib.transport.connection import Connection
from loadlib.transport.stream import stream_call

pytestmark = pytest.mark.integration
N = 16
MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Describe a load test."}]


@pytest.fixture(scope="module")
def mock():
    with start_subprocess(MockConfig(ttft_ms=5, itl_ms=1, output_tokens=N)) as m:
        yield m


def truth_text(mock, request_id: str) -> str:
    with urllib.request.urlopen(f"{mock.url}/mock/truth?request_id={request_id}", timeout=10) as r:
        return expected_text(json.load(r)["text_offset"], N)


def ours(mock, provider: str):
    base = mock.url + "/v1" if provider == "openai" else mock.url
    ep = make_endpoint(base, provider=provider, model="mock-llm", api_key_env="none")
    adapter = get_adapter(provider)
    http = adapter.build(ep.base_path, ep.model, None, ChatRequest(messages=MESSAGES, max_tokens=64))
    out = stream_call(Connection(ep, Timeouts()), adapter, http)
    assert out.status is ErrorClass.OK, out.message
    return out


def test_openai_sdk_and_our_adapter_agree(mock):
    out = ours(mock, "openai")
    assert out.result.text == truth_text(mock, out.server_request_id)
    client = openai.OpenAI(base_url=mock.url + "/v1", api_key="x", max_retries=0, timeout=10)
    stream = client.chat.completions.create(
        model="mock-llm", messages=MESSAGES, max_tokens=64, stream=True, stream_options={"include_usage": True}
    )
    text, usage, rid = "", None, None
    for chunk in stream:
        rid = chunk.id
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
        usage = chunk.usage or usage
    assert text == truth_text(mock, rid)
    assert (usage.prompt_tokens, usage.completion_tokens) == (
        out.result.usage.prompt_tokens,
        out.result.usage.completion_tokens,
    )
    assert len(text.split()) == len(out.result.text.split()) == N


def test_anthropic_sdk_and_our_adapter_agree(mock):
    out = ours(mock, "anthropic")
    assert out.result.text == truth_text(mock, out.server_request_id)
    client = anthropic.Anthropic(base_url=mock.url, api_key="x", max_retries=0, timeout=10)
    system = MESSAGES[0]["content"]
    with client.messages.stream(model="mock-llm", system=system, messages=MESSAGES[1:], max_tokens=64) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == truth_text(mock, final.id)
    assert final.usage.output_tokens == out.result.usage.completion_tokens == N
    cache = (final.usage.cache_read_input_tokens or 0) + (final.usage.cache_creation_input_tokens or 0)
    assert final.usage.input_tokens + cache == out.result.usage.prompt_tokens  # the whole prompt
    assert final.stop_reason == out.result.finish_reason
