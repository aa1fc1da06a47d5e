"""What an LLM response carries, decided before its first byte: its headers, and its stream renderer or whole body.

Pure functions of the parsed request and its plan; the server decides when they run and the jobs write the bytes.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import orjson

from loadlib.mock.llm_request import LlmCall
from loadlib.mock.plan import Plan, json_is_valid, reported_prompt_tokens
from loadlib.mock.prompt import PromptCount
from loadlib.mock.render import AnthropicStream, OpenAIStream, Stream, anthropic_body, openai_body, status_error, text
from loadlib.mock.structured import answer_text, padded, requested_schema, token_pieces
from loadlib.mock.truth import TruthRecord
from loadlib.mockapi.config import MockConfig

Header = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Answer:
    """Everything the response bytes depend on, fixed once the plan is drawn."""

    call: LlmCall
    request_id: str
    created: int
    text_offset: int
    plan: Plan
    prompt_tokens: int  # what the usage reports (billed, or sent with usage_prompt=sent)
    tool: str | None
    pieces: tuple[str, ...] | None  # the tokens of a structured (JSON) answer; None for prose
    lead: str = ""  # text before the first output token (a quoted canary code and its newline)
    cached_tokens: int = 0  # prompt tokens read from the prefix cache (the batching engine decides at admission)


def request_id_headers(api: str, request_id: str) -> list[Header]:
    """The provider's own request-id header, plus the mock's (the key of `GET /mock/truth?request_id=`)."""
    return [
        ("request-id" if api == "anthropic" else "x-request-id", "req_" + request_id),
        ("x-mock-request-id", request_id),
    ]


def structured_answer(
    api: str, body: dict[str, Any], tool: str | None, cfg: MockConfig, out_seed: int, max_tokens: int | None
) -> tuple[tuple[str, ...] | None, list[Header]]:
    """The token pieces of a JSON answer when the request asks for one (schema, JSON mode, forced tool) and the
    header saying whether it was drawn valid; no pieces and no header for a prose answer. With `structured_ratio`
    the answer is that many times the prose answer the same request would get (output_tokens, capped)."""
    schema = requested_schema(api, body, tool)
    if schema is None:
        return None, []
    valid = json_is_valid(cfg, out_seed)
    prose = cfg.output_tokens if max_tokens is None else min(cfg.output_tokens, max(0, max_tokens))
    pieces = padded(token_pieces(answer_text(schema, out_seed, valid)), cfg.structured_ratio, prose)
    return pieces, [("x-mock-json", "valid" if valid else "invalid")]


def variant_headers(variant: int, sent_tokens: int, billed_tokens: int) -> list[Header]:
    """Headers that flag a nondeterministic variant and a prompt billed differently from what was sent."""
    headers = [("x-mock-variant", str(variant))] if variant else []
    if billed_tokens != sent_tokens:
        headers.append(("x-mock-billed-prompt-tokens", str(billed_tokens)))
    return headers


def planned_headers(plan: Plan, cfg: MockConfig) -> list[Header]:
    """The plan a client can check its measurements against."""
    mean_itl = plan.mean_itl_ms
    return [
        ("x-mock-planned-ttft-ms", f"{plan.ttft_ms:.3f}"),
        ("x-mock-planned-itl-ms", f"{cfg.itl_ms if mean_itl is None else mean_itl:.3f}"),
        ("x-mock-planned-output-tokens", str(plan.output_tokens)),
        ("x-mock-fault", plan.fault),
    ]


def rate_limit_headers(api: str, retry_after_s: float) -> list[Header]:
    """What a 429 carries: Retry-After (whole seconds, rounded up, as HTTP defines it) and retry-after-ms (the exact
    wait, which OpenAI's SDKs prefer), plus OpenAI's x-ratelimit-* (and Anthropic's own names on /v1/messages)."""
    s = f"{retry_after_s:g}"
    headers = [
        ("retry-after", str(math.ceil(retry_after_s))),
        ("retry-after-ms", f"{retry_after_s * 1000:.0f}"),
        ("x-ratelimit-limit-requests", "60"),
        ("x-ratelimit-remaining-requests", "0"),
        ("x-ratelimit-reset-requests", f"{s}s"),
        ("x-ratelimit-limit-tokens", "150000"),
        ("x-ratelimit-remaining-tokens", "0"),
        ("x-ratelimit-reset-tokens", f"{s}s"),
    ]
    if api == "anthropic":
        reset = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + retry_after_s))
        headers += [
            ("anthropic-ratelimit-requests-limit", "60"),
            ("anthropic-ratelimit-requests-remaining", "0"),
            ("anthropic-ratelimit-requests-reset", reset),
            ("anthropic-ratelimit-tokens-limit", "150000"),
            ("anthropic-ratelimit-tokens-remaining", "0"),
            ("anthropic-ratelimit-tokens-reset", reset),
        ]
    return headers


def status_fault(api: str, status: int, retry_after_s: float) -> tuple[list[Header], bytes]:
    """Extra headers and body of a planned status fault (429, 500, 503)."""
    headers = rate_limit_headers(api, retry_after_s) if status == 429 else []
    return headers, status_error(api, status, retry_after_s)


def canary_quote(prompt: PromptCount, cfg: MockConfig, prose: bool) -> tuple[str, str | None]:
    """The answer's lead and the truth's `canary`: a prose answer quotes a canary the kept prompt holds ("quoted");
    truncation may have cut it ("cut"); a JSON answer, an empty one or quote_canary=never leave it ("ignored")."""
    kept = prompt.canary_kept(cfg.truncate_to)
    if kept is None or prompt.canary is None:
        return "", None
    if not kept:
        return "", "cut"
    if prose and cfg.quote_canary == "kept":
        return prompt.canary.code + "\n", "quoted"
    return "", "ignored"


def prompt_answer(rec: TruthRecord, cfg: MockConfig, prompt: PromptCount, billed: int, prose: bool) -> tuple[int, str]:
    """The prompt tokens the usage reports and the answer's lead, both recorded in the truth beside the tokens sent
    and billed (a gateway's count and a quoted canary must be checkable against what the mock really kept)."""
    reported = reported_prompt_tokens(cfg, prompt.tokens, billed)
    lead, rec.canary = canary_quote(prompt, cfg, prose)
    rec.reported_prompt_tokens = reported
    return reported, lead


def record_plan(rec: TruthRecord, plan: Plan) -> None:
    """Copy the plan into the ground truth before anything is written, so a dropped request still shows it."""
    rec.fault = plan.fault
    rec.tokens_per_event = plan.tokens_per_event
    rec.planned_ttft_ms = plan.ttft_ms
    rec.planned_itl_ms.extend(plan.itl_ms[: rec.event_cap])
    rec.planned_end_ms = plan.end_ms
    rec.planned_output_tokens = plan.output_tokens


def stream_renderer(answer: Answer) -> Stream:
    """The SSE events of a streamed answer, in the request's API dialect."""
    call = answer.call
    renderer = _anthropic_stream(answer) if call.api == "anthropic" else _openai_stream(answer)
    if answer.lead:
        renderer.quote(answer.lead)
    return renderer


def _anthropic_stream(answer: Answer) -> Stream:
    call, plan = answer.call, answer.plan
    return AnthropicStream(
        answer.request_id,
        call.model,
        answer.text_offset,
        plan.output_tokens,
        plan.tokens_per_event,
        answer.prompt_tokens,
        answer.tool,
        answer.pieces,
    )


def _openai_stream(answer: Answer) -> Stream:
    call, plan = answer.call, answer.plan
    opts = call.body.get("stream_options")
    include_usage = isinstance(opts, dict) and opts.get("include_usage") is True
    return OpenAIStream(
        answer.request_id,
        call.model,
        answer.created,
        answer.text_offset,
        plan.output_tokens,
        plan.tokens_per_event,
        answer.prompt_tokens,
        include_usage,
        call.cfg.usage,
        answer.pieces,
        answer.tool,
    )


def whole_body(answer: Answer) -> tuple[int, bytes]:
    """Non-streamed status and body. error_event becomes the provider's overloaded status; malformed a cut body."""
    call, plan = answer.call, answer.plan
    if plan.fault == "error_event":
        status = 529 if call.api == "anthropic" else 503
        return status, status_error(call.api, status)
    if answer.pieces is not None:
        content = "".join(answer.pieces[: plan.output_tokens])
    else:
        content = answer.lead + text(answer.text_offset, plan.output_tokens)
    payload = _anthropic_body(answer, content) if call.api == "anthropic" else _openai_body(answer, content)
    if plan.fault == "malformed":
        payload = payload[: len(payload) // 2]
    return 200, payload


def _anthropic_body(answer: Answer, content: str) -> bytes:
    plan, tool = answer.plan, answer.tool
    stop = "max_tokens" if plan.finish_reason == "length" else ("tool_use" if tool else "end_turn")
    tool_input = _tool_input(content) if answer.pieces is not None else None
    return anthropic_body(
        answer.request_id,
        answer.call.model,
        content,
        stop,
        tool,
        answer.prompt_tokens,
        plan.output_tokens,
        tool_input,
        answer.cached_tokens,
    )


def _openai_body(answer: Answer, content: str) -> bytes:
    plan = answer.plan
    return openai_body(
        answer.request_id,
        answer.call.model,
        answer.created,
        content,
        plan.finish_reason,
        answer.prompt_tokens,
        plan.output_tokens,
        answer.call.cfg.usage != "none",
        answer.tool,
        answer.cached_tokens,
    )


def _tool_input(content: str) -> Any:
    """A non-streamed tool_use input must be an object: a broken structured answer becomes an empty one."""
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
