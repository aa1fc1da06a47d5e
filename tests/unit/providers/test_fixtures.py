"""Every captured stream and error body, driven through SSEDecoder and the adapter its API calls for.

Expectations come from expected.json (written independently of this code). Per-event flags are checked against a
small reference reading of each event written here with the stdlib json module, whose counts are themselves checked
against the manifest's content-event counts.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from loadlib.errors import ConfigError, ErrorClass, UnsupportedAPIError
from loadlib.providers import errors_body
from loadlib.providers.base import ERROR, OUTPUT, TERMINAL, VISIBLE, StreamResult
from loadlib.providers.registry import check_content_type, get_adapter, sniff_unsupported
from loadlib.transport.sse import SSEDecoder

FIXTURES = Path(__file__).resolve().parent.parent.parent / "fixtures" / "sse"
EXPECTED: dict[str, Any] = json.loads((FIXTURES / "expected.json").read_bytes())

CHAT = sorted(n for n, m in EXPECTED.items() if n.endswith(".sse") and "text_by_choice" in m["expected"])
MESSAGES = sorted(n for n, m in EXPECTED.items() if n.endswith(".sse") and "message_start_usage" in m["expected"])
OTHER_APIS = sorted(n for n in EXPECTED if n.endswith(".sse") and n not in CHAT and n not in MESSAGES)
ERROR_BODIES = sorted(n for n in EXPECTED if n.endswith(".json"))

# Work budget for the two-chunk split test: body bytes x events. Below it every cut runs the whole pipeline; above
# it, cuts are spread evenly over the body plus every cut in its first and last 256 bytes (tests/unit/test_sse.py
# checks the decoder itself at every cut of every fixture).
SPLIT_BUDGET = 10**12 if os.environ.get("LOADLIB_EXHAUSTIVE_SPLITS") else 25_000  # =1: every cut, every file
EDGE = 256


def read(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def events_of(chunks: list[bytes]) -> list[tuple[bytes, bytes]]:
    decoder = SSEDecoder()
    out: list[tuple[bytes, bytes]] = []
    for i, chunk in enumerate(chunks):
        out.extend((event, data) for _, event, data in decoder.feed(chunk, float(i)))
    assert not decoder.pending
    return out


def run(provider: str, chunks: list[bytes]) -> tuple[StreamResult, list[int]]:
    parser = get_adapter(provider).new_parser()
    flags = [parser.feed(event, data) for event, data in events_of(chunks)]
    return parser.result(), flags


def cuts_for(body: bytes, n_events: int) -> list[int]:
    if len(body) * n_events <= SPLIT_BUDGET:
        return list(range(1, len(body)))
    step = max(1, len(body) * n_events // SPLIT_BUDGET)
    edges = {*range(1, min(EDGE, len(body))), *range(max(1, len(body) - EDGE), len(body))}
    return sorted(edges | set(range(1, len(body), step)))


# --- reference readings of single events (independent of the adapters) -------------------------------------------


def chat_reference_flags(event: bytes, data: bytes) -> tuple[int, bool]:
    """(flags, carried non-empty text) of one chat event, read the plain way."""
    if data == b"[DONE]":
        return TERMINAL, False
    obj = json.loads(data)
    if event == b"error":
        return ERROR, False
    flags, text = 0, False
    for ch in obj.get("choices") or []:
        delta = ch.get("delta") or {}
        fragment = delta["content"] if "content" in delta else ch.get("text")
        if fragment:
            flags, text = flags | OUTPUT | VISIBLE, True
        if delta.get("reasoning_content") or delta.get("reasoning"):
            flags |= OUTPUT
        if delta.get("refusal"):
            flags |= OUTPUT | VISIBLE
        for tc in delta.get("tool_calls") or []:
            fn = tc.get("function") or {}
            if fn.get("arguments") or fn.get("name"):
                flags |= OUTPUT | VISIBLE
    if obj.get("error") is not None:
        flags |= ERROR
    return flags, text


def messages_reference_flags(data: bytes) -> tuple[int, str]:
    obj = json.loads(data)
    kind = obj["type"]
    if kind == "message_stop":
        return TERMINAL, kind
    if kind == "error":
        return ERROR, kind
    if kind != "content_block_delta":
        return 0, kind
    delta = obj["delta"]
    kind = delta["type"]
    if kind == "text_delta" and delta["text"]:
        return OUTPUT | VISIBLE, kind
    if kind == "input_json_delta" and delta["partial_json"]:
        return OUTPUT | VISIBLE, kind
    if kind == "thinking_delta" and delta["thinking"]:
        return OUTPUT, kind
    return 0, kind


# --- OpenAI-compatible chat and legacy completions ----------------------------------------------------------------


def test_fixture_groups_cover_every_file() -> None:
    assert len(CHAT) == 34
    assert len(MESSAGES) == 9
    assert len(OTHER_APIS) == 11
    assert len(ERROR_BODIES) == 10
    on_disk = {p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*") if p.suffix in (".sse", ".json")}
    assert on_disk - {"expected.json"} == set(CHAT + MESSAGES + OTHER_APIS + ERROR_BODIES)


# Real captures whose usage is impossible by the API's own definition, and the reason the adapter rejects it with.
# OpenRouter relaying MiniMax, cut off at "Token limit reached": 11 reasoning tokens of a 10-token completion.
IMPOSSIBLE_USAGE = {
    "openrouter/chat-midstream-error-chunk.sse": (
        "usage.completion_tokens_details.reasoning_tokens=11 > usage.completion_tokens=10",
        (43, None, 0, None),
    ),
}


def usage_numbers(raw: dict[str, Any]) -> tuple[Any, ...]:
    cached = (raw.get("prompt_tokens_details") or {}).get("cached_tokens", raw.get("prompt_cache_hit_tokens"))
    reasoning = (raw.get("completion_tokens_details") or {}).get("reasoning_tokens")
    return raw["prompt_tokens"], raw["completion_tokens"], cached, reasoning


def expected_usage(name: str, raw: dict[str, Any]) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """(prompt, completion, cached, reasoning) and the rejection reasons the adapter must give for a capture."""
    if name in IMPOSSIBLE_USAGE:
        reason, numbers = IMPOSSIBLE_USAGE[name]
        return numbers, (reason,)
    return usage_numbers(raw), ()


@pytest.mark.parametrize("name", CHAT)
def test_chat_stream(name: str) -> None:
    exp = EXPECTED[name]["expected"]
    body = read(name)
    result, flags = run("openai", [body])
    events = events_of([body])

    assert result.text_by_choice == {int(k): v for k, v in exp["text_by_choice"].items()}
    assert result.text == exp["text_by_choice"].get("0", "")
    assert result.reasoning == exp.get("reasoning_by_choice", {}).get("0", "")
    assert result.refusal == exp.get("refusal_by_choice", {}).get("0", "")
    tools = [(t.index, t.id, t.name, t.arguments) for t in result.tool_calls]
    assert tools == [(t["tool_index"], t["id"], t["name"], t["arguments"]) for t in exp.get("tool_calls", [])]

    raw_usage = exp["usage"] or exp.get("x_groq_usage")
    if raw_usage is None:
        assert result.usage is None
    else:
        u = result.usage
        assert u is not None
        numbers, rejected = expected_usage(name, raw_usage)
        assert (u.prompt_tokens, u.completion_tokens, u.cached_prompt_tokens, u.reasoning_tokens) == numbers
        assert u.rejected == rejected
        assert u.cache_write_tokens is None

    finish = {int(k): v for k, v in exp["finish_reason_by_choice"].items()}
    assert result.finish_by_choice == finish
    assert result.finish_reason == finish.get(0)
    assert result.terminal is exp["format"]["done_sentinel"]

    if exp["errors"]:
        assert result.error is not None
        assert result.error.error_class is ErrorClass.PROVIDER_ERROR
        assert result.error.message == errors_body.short(exp["errors"][0]["message"])
        assert any(f & ERROR for f in flags)
    else:
        assert result.error is None
        assert not any(f & ERROR for f in flags)

    reference = [chat_reference_flags(event, data) for event, data in events]
    assert sum(text for _, text in reference) == exp["content_events"]
    assert flags == [f for f, _ in reference]
    assert result.output_events == sum(1 for f in flags if f & OUTPUT)
    if result.response_id is not None:
        assert result.response_id
    assert result.model


@pytest.mark.parametrize("name", CHAT + MESSAGES)
def test_two_chunk_splits_give_identical_results(name: str) -> None:
    provider = "anthropic" if name in MESSAGES else "openai"
    body = read(name)
    whole, whole_flags = run(provider, [body])
    for cut in cuts_for(body, len(whole_flags)):
        result, flags = run(provider, [body[:cut], body[cut:]])
        assert flags == whole_flags, cut
        assert result == whole, cut


# --- Anthropic Messages -------------------------------------------------------------------------------------------

MESSAGES_IDS = {"Anthropic": ("msg_", "claude"), "vLLM": ("chatcmpl-", "tiny-llama")}  # vLLM keeps its chat ids


@pytest.mark.parametrize("name", MESSAGES)
def test_messages_stream(name: str) -> None:
    exp = EXPECTED[name]["expected"]
    body = read(name)
    result, flags = run("anthropic", [body])
    events = events_of([body])

    assert result.text == exp["text"]
    assert result.text_by_choice == ({0: exp["text"]} if exp["text"] else {})
    assert result.reasoning == exp["thinking"]
    tools = {t.index: (t.name, t.arguments) for t in result.tool_calls}
    assert tools == {int(k): (v["name"], v["json"]) for k, v in exp["tool_inputs"].items()}
    assert all(t.id and t.id.startswith("toolu_") for t in result.tool_calls)

    start, final = exp["message_start_usage"], exp["message_delta_usage"]
    if start is None:
        assert result.usage is None
    else:
        merged = {**start, **final}
        u = result.usage
        assert u is not None
        cache = merged.get("cache_read_input_tokens", 0) + merged.get("cache_creation_input_tokens", 0)
        assert u.prompt_tokens == merged["input_tokens"] + cache  # the whole prompt: input_tokens leaves out the cache
        assert u.completion_tokens == final["output_tokens"]
        assert u.cached_prompt_tokens == merged.get("cache_read_input_tokens")
        assert u.cache_write_tokens == merged.get("cache_creation_input_tokens")
        assert u.reasoning_tokens is None
    assert result.finish_reason == exp["stop_reason"]
    assert result.terminal is (exp["stop_reason"] is not None)

    if exp["errors"]:
        assert result.error is not None
        assert result.error.error_class is ErrorClass.PROVIDER_ERROR
        assert (result.error.type, result.error.message) == (exp["errors"][0]["type"], exp["errors"][0]["message"])
        assert flags == [ERROR]
    else:
        assert result.error is None
        id_prefix, model = MESSAGES_IDS[EXPECTED[name]["provider"]]
        assert result.response_id and result.response_id.startswith(id_prefix)
        assert result.model and result.model.startswith(model)

    reference = [messages_reference_flags(data) for _, data in events]
    assert flags == [f for f, _ in reference]
    kinds = [k for _, k in reference]
    assert sum(1 for f, k in reference if k == "text_delta" and f) == exp["content_events"]
    assert sum(1 for f, k in reference if k == "thinking_delta" and f) == exp["thinking_delta_events"]
    assert kinds.count("input_json_delta") == exp["input_json_delta_events"]
    assert kinds.count("signature_delta") == exp["signature_delta_events"]
    assert kinds.count("ping") == exp["pings"]
    assert result.output_events == sum(1 for f in flags if f & OUTPUT)


# --- APIs the adapters do not speak: refused, never parsed silently wrong -------------------------------------------


def feed_until_refused(provider: str, name: str) -> list[int]:
    parser = get_adapter(provider).new_parser()
    flags: list[int] = []
    with pytest.raises(UnsupportedAPIError) as info:
        for event, data in events_of([read(name)]):
            flags.append(parser.feed(event, data))
    message = str(info.value)
    assert "\n" not in message and "provider" in message
    return flags


@pytest.mark.parametrize("name", OTHER_APIS)
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_other_apis_are_refused_before_any_output(provider: str, name: str) -> None:
    flags = feed_until_refused(provider, name)
    assert not any(f & OUTPUT for f in flags)


@pytest.mark.parametrize("name", [n for n in MESSAGES if "error" not in n])
def test_messages_stream_at_the_openai_adapter_is_refused(name: str) -> None:
    assert feed_until_refused("openai", name) == []


@pytest.mark.parametrize("name", CHAT)
def test_chat_stream_at_the_anthropic_adapter_is_refused(name: str) -> None:
    assert feed_until_refused("anthropic", name) == []


def test_refusal_names_the_api() -> None:
    parser = get_adapter("openai").new_parser()
    event, data = events_of([read("openai-responses/text-basic.sse")])[0]
    with pytest.raises(UnsupportedAPIError, match="Responses"):
        parser.feed(event, data)
    data = events_of([read("openrouter/responses-no-event-lines-reasoning-text.sse")])[0][1]
    with pytest.raises(UnsupportedAPIError, match="Responses"):
        get_adapter("openai").new_parser().feed(b"", data)
    for name, api in (
        ("gemini/native-streamGenerateContent-sse-crlf.sse", "Gemini"),
        ("tgi/generate-stream-native-data-no-space.sse", "TGI"),
        ("openai/assistants-run-stream.sse", "Assistants"),
        ("anthropic/legacy-text-completions-crlf.sse", "legacy"),
    ):
        event, data = events_of([read(name)])[0]
        with pytest.raises(UnsupportedAPIError, match=api):
            get_adapter("openai").new_parser().feed(event, data)
        with pytest.raises(UnsupportedAPIError, match=api):
            get_adapter("openai").new_parser().feed(b"", data)  # the same JSON without its `event:` line


def test_ollama_ndjson_is_refused_by_content_type_and_by_sniffing() -> None:
    headers = read("ollama/native-api-chat-stream.headers.txt").decode()
    content_type = re.search(r"(?im)^content-type:\s*(.+?)\s*$", headers).group(1)  # type: ignore[union-attr]
    with pytest.raises(UnsupportedAPIError, match="Ollama"):
        check_content_type(content_type)
    body = read("ollama/native-api-chat-stream.ndjson")
    decoder = SSEDecoder()
    assert decoder.feed(body, 0.0) == []
    assert decoder.pending  # the stream layer sees no event and an unfinished one: broken, and sniffs why
    assert sniff_unsupported(body[:512]) == errors_body.OLLAMA


def test_event_stream_content_types_of_the_captures_are_accepted() -> None:
    for path in FIXTURES.rglob("*.headers.txt"):
        found = re.search(r"(?im)^content-type:\s*(.+?)\s*$", path.read_text())
        if found and "event-stream" in found.group(1):
            check_content_type(found.group(1))


@pytest.mark.parametrize(
    ("content_type", "refused"),
    [
        ("application/x-ndjson", True),
        ("application/x-ndjson; charset=utf-8", True),
        ("Application/NDJSON", True),
        ("application/jsonl", True),
        ("text/event-stream; charset=utf-8", False),
        ("application/json", False),  # a stream: false answer, read by parse_response
        ("", False),
    ],
)
def test_check_content_type(content_type: str, refused: bool) -> None:
    if refused:
        with pytest.raises(UnsupportedAPIError):
            check_content_type(content_type)
    else:
        check_content_type(content_type)


def test_sniff_unsupported() -> None:
    assert sniff_unsupported(b'[{"candidates": []}') is not None
    assert "HTML" in (sniff_unsupported(b"  <html><title>502</title>") or "")
    assert sniff_unsupported(b'{"candidates":[{"content":{}}]}\n') == errors_body.GEMINI
    assert "ignored stream" in (sniff_unsupported(b'{"id":"x","choices":[]}') or "")
    assert "Overloaded" in (sniff_unsupported(b'{"type":"error","error":{"message":"Overloaded"}}') or "")
    assert sniff_unsupported(b"data: {}") is None
    assert sniff_unsupported(b"") is None


def test_get_adapter() -> None:
    assert get_adapter("openai").name == "openai"
    assert get_adapter(" Anthropic ").name == "anthropic"
    with pytest.raises(ConfigError) as info:
        get_adapter("gemini")
    assert str(info.value) == "unknown provider 'gemini': use one of openai, anthropic"


# --- error bodies -------------------------------------------------------------------------------------------------

ERROR_CLASSES = {
    "openai/error-400-context-length-exceeded.json": ErrorClass.CONTEXT_LENGTH_EXCEEDED,
    "openai/error-400-unsupported-parameter.json": ErrorClass.HTTP_4XX,
    "openai/error-404-model-not-found.json": ErrorClass.HTTP_4XX,
    "openai/error-429-rate-limit-exceeded-tokens.json": ErrorClass.RATE_LIMITED,
    "anthropic/doc-example-error-529-overloaded.json": ErrorClass.HTTP_5XX,
    "anthropic/error-400-prompt-too-long.json": ErrorClass.CONTEXT_LENGTH_EXCEEDED,
    "gemini/error-503-model-overloaded.json": ErrorClass.HTTP_5XX,
    "openrouter/error-429-rate-limited.json": ErrorClass.RATE_LIMITED,
    "tgi/error-422-validation.json": ErrorClass.CONTEXT_LENGTH_EXCEEDED,  # inputs + max_new_tokens over the limit
    "vllm/error-400-max-context-length.RECONSTRUCTED.json": ErrorClass.CONTEXT_LENGTH_EXCEEDED,
}


def status_of(name: str) -> int:
    headers = FIXTURES / name.replace(".json", ".headers.txt")
    if headers.exists():
        return int(headers.read_text().split()[1])
    return int(re.search(r"error-(\d{3})", name).group(1))  # type: ignore[union-attr]


def expected_message(raw: dict[str, Any]) -> str:
    err = raw.get("error")
    if isinstance(err, dict):
        return err["message"]
    return err if isinstance(err, str) else raw["message"]


def test_error_table_covers_every_body() -> None:
    assert sorted(ERROR_CLASSES) == ERROR_BODIES


@pytest.mark.parametrize("name", ERROR_BODIES)
def test_error_bodies_are_classified(name: str) -> None:
    provider = "anthropic" if name.startswith("anthropic/") else "openai"
    err = get_adapter(provider).classify_error(status_of(name), read(name))
    assert err.error_class is ERROR_CLASSES[name]
    assert err.message == errors_body.short(expected_message(EXPECTED[name]["expected"]["json"]))
    assert 0 < len(err.message) <= 200
    assert "\n" not in err.message


def test_openai_429_keeps_type_and_code() -> None:
    err = get_adapter("openai").classify_error(429, read("openai/error-429-rate-limit-exceeded-tokens.json"))
    assert (err.type, err.code) == ("tokens", "rate_limit_exceeded")
    assert err.message.startswith("Rate limit reached for 10KTPM-200RPM")
    err = get_adapter("openai").classify_error(429, read("openrouter/error-429-rate-limited.json"))
    assert (err.message, err.code) == ("Provider returned error", "429")
