"""Mock behaviour settings: server defaults (CLI flags) plus per-request overrides.

Overrides come as `key=value,key=value` in the `x-mock` header or after `::` in the model name, so the official
SDKs can configure a request without custom headers (`model="gpt-4o::ttft_ms=200,fault=drop"`). Parsing is pure;
an unknown key or a bad value raises `MockConfigError`, which the server answers with HTTP 400.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from loadlib.errors import ConfigError

FAULTS = (
    "none",
    "rate_limit",
    "http_500",
    "http_503",
    "stall",
    "drop",
    "malformed",
    "error_event",
    "no_terminal",
    "empty",
    "hang_headers",
)
USAGE_MODES = ("separate", "finish", "none")
USAGE_PROMPT_MODES = ("billed", "sent")
QUOTE_CANARY_MODES = ("kept", "never")
ENGINES = ("fixed", "batching")
ENGINE_PROFILES = ("h20-8b", "tiny-kv")  # loadlib.mock.engine.params.PROFILES
ON_OFF = ("on", "off")
# Server-wide keys of the batching engine: a request's override of them is ignored (one engine serves everyone).
ENGINE_KEYS = (
    "engine",
    "engine_profile",
    "step_base_ms",
    "prefill_ms_per_1k",
    "decode_ms_per_seq",
    "max_num_seqs",
    "max_batched_tokens",
    "kv_cache_tokens",
    "block_size",
    "prefix_caching",
)
MODEL_SEPARATOR = "::"
# A model named like `gpt-4-32k` or `mock-8k` has a context window of that many Ki tokens (per-model limits).
_MODEL_CONTEXT = re.compile(r"-(\d{1,4})k$")


class MockConfigError(ConfigError):
    """A mock setting that does not parse or is out of range."""


@dataclass(frozen=True, slots=True)
class MockConfig:
    """What the mock does with one request. `itl_ms` is the gap between output events (tokens_per_event tokens
    each); `fault_rate` None means 1 when a fault is set.

    Request-dependent realism: TTFT grows by `ttft_per_1k_prompt_ms` per 1,000 (billed) prompt tokens; a prompt
    longer than `truncate_to` (> 0) is silently cut and billed at that many tokens; structured-output requests get
    schema-valid JSON at `json_valid_rate`, `structured_ratio` (> 0) times as long as the request's prose answer;
    `nondeterminism_rate` is the share of requests whose output differs from what the same request gets otherwise
    (the output is a function of the request content); a streamed usage
    reports the completion tokens sent times `usage_completion_scale` (1.5: a server that over-counts by 50 %).

    `response_cache` ("model+messages+temperature+header:x-team"; empty: none) plays a gateway's response cache keyed
    on those body fields and headers: a request whose key was seen is answered at once with the stored answer and
    `x-cache: HIT` (`response_cache_header` "off": a gateway whose cache sends no header).

    As if behind an LLM gateway: the terminal events of a stream go out `terminal_delay_ms` after the last output
    event; `usage_prompt` "sent" reports the prompt tokens as sent even when truncation billed fewer (a gateway that
    counts the prompt itself). `quote_canary` "kept" begins the answer with a long-document canary's code when the
    part of the prompt the mock kept holds it; "never" is a model that ignores the instruction.

    `engine` "batching" replaces the fixed TTFT and ITL with the step model of an inference server under load
    (loadlib/mock/engine, docs/mock.md): `engine_profile` and the keys after it (None: the profile's value) are its
    parameters, server-wide (ENGINE_KEYS)."""

    ttft_ms: float = 50.0
    itl_ms: float = 10.0
    ttft_jitter_ms: float = 0.0
    itl_jitter_ms: float = 0.0
    output_tokens: int = 64
    tokens_per_event: int = 1
    usage: str = "separate"
    context_limit: int = 131072
    fault: str = "none"
    fault_rate: float | None = None
    fault_at: int = 5
    stall_ms: float = 2000.0
    retry_after_s: float = 1.0
    ttft_per_1k_prompt_ms: float = 0.0
    truncate_to: int = 0
    json_valid_rate: float = 1.0
    structured_ratio: float = 0.0
    response_cache: str = ""
    response_cache_header: str = "on"
    nondeterminism_rate: float = 0.0
    usage_completion_scale: float = 1.0
    terminal_delay_ms: float = 0.0
    usage_prompt: str = "billed"
    quote_canary: str = "kept"
    engine: str = "fixed"
    engine_profile: str = "h20-8b"
    step_base_ms: float | None = None
    prefill_ms_per_1k: float | None = None
    decode_ms_per_seq: float | None = None
    max_num_seqs: int | None = None
    max_batched_tokens: int | None = None
    kv_cache_tokens: int | None = None
    block_size: int | None = None
    prefix_caching: str | None = None

    @property
    def effective_fault_rate(self) -> float:
        if self.fault == "none":
            return 0.0
        return 1.0 if self.fault_rate is None else self.fault_rate

    def with_overrides(self, overrides: Mapping[str, Any]) -> MockConfig:
        return dataclasses.replace(self, **overrides) if overrides else self

    def to_args(self) -> list[str]:
        """CLI flags that reproduce this configuration in `python -m loadlib.mock`."""
        args: list[str] = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None and value != f.default:
                args += [flag_name(f.name), str(value)]
        return args


def flag_name(key: str) -> str:
    return "--" + key.replace("_", "-")


def _number(key: str, cast: Callable[[str], Any], minimum: float, maximum: float | None = None) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            value = cast(text.strip())
        except ValueError:
            kind = "an integer" if cast is int else "a number"
            raise MockConfigError(f"{key} must be {kind}, got {text!r}") from None
        if value != value or value < minimum or (maximum is not None and value > maximum):
            upper = f" and <= {maximum:g}" if maximum is not None else ""
            raise MockConfigError(f"{key} must be >= {minimum:g}{upper}, got {text!r}")
        return value

    return convert


def _choice(key: str, choices: tuple[str, ...]) -> Callable[[str], str]:
    def convert(text: str) -> str:
        value = text.strip().lower()
        if value not in choices:
            raise MockConfigError(f"{key} must be one of {', '.join(choices)}; got {text!r}")
        return value

    return convert


def _fields(key: str) -> Callable[[str], str]:
    """A `+`-joined list of body fields and `header:NAME` parts (the response cache's key), or empty."""

    def convert(text: str) -> str:
        value = text.strip().lower()
        if not re.fullmatch(r"[a-z0-9_:\-+]*", value) or "++" in value or value.startswith("+") or value.endswith("+"):
            raise MockConfigError(f"{key} must be fields and header:NAME joined by '+', got {text!r}")
        return value

    return convert


def _float(key: str, maximum: float | None = None) -> Callable[[str], float]:
    return _number(key, float, 0.0, maximum)


CONVERTERS: dict[str, Callable[[str], Any]] = {
    "ttft_ms": _float("ttft_ms"),
    "itl_ms": _float("itl_ms"),
    "ttft_jitter_ms": _float("ttft_jitter_ms"),
    "itl_jitter_ms": _float("itl_jitter_ms"),
    "output_tokens": _number("output_tokens", int, 0),
    "tokens_per_event": _number("tokens_per_event", int, 1),
    "usage": _choice("usage", USAGE_MODES),
    "context_limit": _number("context_limit", int, 1),
    "fault": _choice("fault", FAULTS),
    "fault_rate": _float("fault_rate", 1.0),
    "fault_at": _number("fault_at", int, 0),
    "stall_ms": _float("stall_ms"),
    "retry_after_s": _float("retry_after_s"),
    "ttft_per_1k_prompt_ms": _float("ttft_per_1k_prompt_ms"),
    "truncate_to": _number("truncate_to", int, 0),
    "json_valid_rate": _float("json_valid_rate", 1.0),
    "structured_ratio": _float("structured_ratio", 100.0),
    "response_cache": _fields("response_cache"),
    "response_cache_header": _choice("response_cache_header", ON_OFF),
    "nondeterminism_rate": _float("nondeterminism_rate", 1.0),
    "usage_completion_scale": _float("usage_completion_scale", 100.0),
    "terminal_delay_ms": _float("terminal_delay_ms"),
    "usage_prompt": _choice("usage_prompt", USAGE_PROMPT_MODES),
    "quote_canary": _choice("quote_canary", QUOTE_CANARY_MODES),
    "engine": _choice("engine", ENGINES),
    "engine_profile": _choice("engine_profile", ENGINE_PROFILES),
    "step_base_ms": _float("step_base_ms"),
    "prefill_ms_per_1k": _float("prefill_ms_per_1k"),
    "decode_ms_per_seq": _float("decode_ms_per_seq"),
    "max_num_seqs": _number("max_num_seqs", int, 1),
    "max_batched_tokens": _number("max_batched_tokens", int, 1),
    "kv_cache_tokens": _number("kv_cache_tokens", int, 1),
    "block_size": _number("block_size", int, 1, 4096),
    "prefix_caching": _choice("prefix_caching", ON_OFF),
}
KEYS = tuple(CONVERTERS)


def parse_overrides(spec: str, source: str = "x-mock") -> dict[str, Any]:
    """`key=value,key=value` -> typed values. Keys may use `-` or `_`; empty items are ignored."""
    out: dict[str, Any] = {}
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = key.strip().lower().replace("-", "_")
        if not sep:
            raise MockConfigError(f"{source}: {item!r} is not key=value")
        convert = CONVERTERS.get(key)
        if convert is None:
            raise MockConfigError(f"{source}: unknown key {key!r}; known keys: {', '.join(KEYS)}")
        try:
            out[key] = convert(value)
        except MockConfigError as exc:
            raise MockConfigError(f"{source}: {exc}") from None
    return out


def split_model(model: str) -> tuple[str, str | None]:
    """`gpt-4o::ttft_ms=5` -> ("gpt-4o", "ttft_ms=5"); a model without `::` has no settings."""
    base, sep, spec = model.partition(MODEL_SEPARATOR)
    return base, (spec if sep else None)


def model_context_limit(model: str) -> int | None:
    """Context window implied by the model name: `mock-8k` -> 8192, `gpt-4-32k` -> 32768; None without a suffix."""
    m = _MODEL_CONTEXT.search(model)
    return int(m.group(1)) * 1024 if m and int(m.group(1)) > 0 else None


def resolve(base: MockConfig, header: str | None, model: str) -> tuple[MockConfig, str]:
    """Server defaults < model-name context size (`-32k`) < model-name suffix < `x-mock` header. Returns the config
    and the bare model name."""
    bare, spec = split_model(model)
    overrides: dict[str, Any] = {}
    limit = model_context_limit(bare)
    if limit is not None:
        overrides["context_limit"] = limit
    if spec:
        overrides.update(parse_overrides(spec, "model suffix"))
    if header:
        overrides.update(parse_overrides(header, "x-mock"))
    return base.with_overrides(overrides), bare
