"""Read bodies the adapters cannot take at face value: errors of any LLM API, and streams of APIs we do not speak.

A non-2xx body becomes an error class and a short, redacted message. Bodies come in many shapes: OpenAI
`{"error": {message, type, code}}`, Anthropic `{"type": "error", "error": {...}}`, vLLM `{"object": "error",
message, ...}`, TGI `{"error": "text", "error_type": ...}`, Google `{"error": {code, message, status}}`, FastAPI
`{"detail": ...}`, or an HTML page from a proxy. One reader serves both adapters, because OpenAI-compatible gateways
front every model family and repeat its wording.

`foreign_api` names the API a decoded event or body belongs to when it is not the adapter's own, so an adapter can
refuse it in one clear line instead of parsing it silently wrong.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from loadlib.errors import ErrorClass
from loadlib.providers.base import ProviderError

MAX_MESSAGE = 200

# Lower-case phrases that mean "the prompt (plus max_tokens) does not fit the model's context window".
_CONTEXT_PHRASES = (
    "context_length_exceeded",  # OpenAI, Groq, DeepSeek codes
    "maximum context length",  # OpenAI, vLLM, DeepSeek, Mistral, Fireworks messages
    "context length exceeded",
    "context window",
    "prompt is too long",  # Anthropic
    "exceed context limit",  # Anthropic: input length and `max_tokens` exceed context limit
    "exceeds the available context size",  # llama.cpp
    "exceed_context_size",  # llama.cpp error type
    "input token count",  # Gemini: the input token count (N) exceeds the maximum number of tokens allowed
    "`inputs` tokens + `max_new_tokens` must be <=",  # TGI (and Together, which runs it)
    "`inputs` must have less than",  # TGI
    "too many input tokens",
)

_SECRET = re.compile(rb"(?i)\b(?:sk|pk|rk|key)-[A-Za-z0-9_\-*]{6,}|\bAIza[0-9A-Za-z_\-]{20,}|\bbearer\s+[^\s\"',]+")
_TITLE = re.compile(rb"(?is)<title[^>]*>(.*?)</title>")
_TAGS = re.compile(rb"<[^>]*>")
_SPACE = re.compile(rb"\s+")


def short(message: str) -> str:
    """One line of at most MAX_MESSAGE characters, with anything shaped like a key masked."""
    raw = _SPACE.sub(b" ", _SECRET.sub(b"<redacted>", message.encode("utf-8", "replace"))).strip()
    text = raw.decode("utf-8", "replace")
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def read_error(obj: Any) -> tuple[str | None, str | None, str | None]:
    """(message, type, code) from a decoded error object of any known shape; None where absent."""
    if not isinstance(obj, dict):
        return _text(obj), None, None
    err = obj.get("error")
    if isinstance(err, dict):
        etype = err.get("type") or err.get("status") or obj.get("type")
        return _text(err.get("message")), _text(etype if etype != "error" else None), _text(err.get("code"))
    if isinstance(err, str):  # TGI
        return err, _text(obj.get("error_type") or obj.get("type")), _text(obj.get("code"))
    if obj.get("object") == "error" or "message" in obj:  # vLLM's ErrorResponse envelope
        return _text(obj.get("message")), _text(obj.get("type")), _text(obj.get("code"))
    if "detail" in obj:  # FastAPI / Starlette
        return _text(obj.get("detail")), None, None
    return None, None, None


def _body_text(body: bytes) -> str | None:
    """A message for a body that is not JSON: an HTML page's title, or the text itself."""
    stripped = body.strip()
    if not stripped:
        return None
    if stripped[:1] == b"<":
        title = _TITLE.search(stripped)
        stripped = title.group(1) if title else _TAGS.sub(b" ", stripped)
    return stripped[:1000].decode("utf-8", "replace")


GZIP_MAGIC = b"\x1f\x8b"


def not_json(what: str, data: bytes) -> str:
    """Why `data` (an event's or a body's) did not decode, named when the bytes tell: gzip, or invalid UTF-8 and where
    (orjson says neither), so a user knows whether a proxy compressed the body or a server cut a character in two."""
    if data[:2] == GZIP_MAGIC:
        return f"{what} is gzip-compressed, not JSON ({len(data)} bytes)"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"{what} is not JSON: invalid UTF-8 at byte {exc.start} of {len(data)}"
    return f"{what} is not JSON ({len(data)} bytes)"


# The model's context window as servers state it in a context-length error: "maximum context length is 4096 tokens"
# (OpenAI, vLLM), "maximum model length of 4096" (vLLM's V1 engine), "prompt is too long: 210000 tokens > 200000
# maximum" and "exceed context limit: 197000 + 8192 > 200000" (Anthropic), "must be <= 4096" (TGI), "maximum number
# of tokens allowed (1048576)" (Gemini), "with 32768 maximum context length" (Mistral), "n_ctx = 4096" (llama.cpp's
# error fields, when a gateway repeats them in the message).
_CONTEXT_LIMITS = tuple(
    re.compile(p, re.I)
    for p in (
        r"maximum context length is (\d[\d,]*)",
        r"maximum model length (?:is |of )?(\d[\d,]*)",
        r"> ?(\d[\d,]*) maximum",
        r"context limit: [\d\s+,]*> ?(\d[\d,]*)",
        r"must be <= ?(\d[\d,]*)",
        r"maximum number of tokens allowed \((\d[\d,]*)\)",
        r"(\d[\d,]*) maximum context length",
        r"n_ctx\W{0,4}(\d+)",
        r"context (?:window|size|limit) (?:is |of )?\(?(\d[\d,]*) tokens",
    )
)


def context_limit_in(message: str | None) -> int | None:
    """The context window a server's context-length error states, in tokens; None when it states none."""
    for pattern in _CONTEXT_LIMITS:
        found = pattern.search(message or "")
        if found:
            return int(found.group(1).replace(",", ""))
    return None


def is_context_length(*parts: str | None) -> bool:
    text = " ".join(p for p in parts if p).lower()
    return any(phrase in text for phrase in _CONTEXT_PHRASES)


def classify(status: int, body: bytes) -> ProviderError:
    """429 is rate_limited; a context-window complaint is context_length_exceeded; else http_4xx / http_5xx."""
    message = etype = code = None
    try:
        message, etype, code = read_error(orjson.loads(body))
    except orjson.JSONDecodeError:
        message = _body_text(body)
    if status == 429:
        error_class = ErrorClass.RATE_LIMITED
    elif is_context_length(message, etype, code):
        error_class = ErrorClass.CONTEXT_LENGTH_EXCEEDED
    elif status >= 500:
        error_class = ErrorClass.HTTP_5XX
    else:
        error_class = ErrorClass.HTTP_4XX
    return ProviderError(error_class, short(message or "") or f"HTTP {status}", etype, code)


def stream_error(obj: Any) -> ProviderError:
    """An error reported inside an HTTP 200 event stream."""
    message, etype, code = read_error(obj)
    return ProviderError(ErrorClass.PROVIDER_ERROR, short(message or "") or "error event in the stream", etype, code)


_ANTHROPIC_STREAM_TYPES = frozenset(
    {
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    }
)
_CHAT = "use an OpenAI-compatible Chat Completions endpoint (/v1/chat/completions) with provider 'openai'"
RESPONSES = f"OpenAI Responses API streams are not supported: {_CHAT}"
ASSISTANTS = f"OpenAI Assistants API streams are not supported: {_CHAT}"
ANTHROPIC_MESSAGES = "this is an Anthropic Messages stream: use provider 'anthropic'"
ANTHROPIC_LEGACY = "Anthropic legacy Text Completions (/v1/complete) are not supported: use provider 'anthropic'"
OPENAI_CHAT = "this is an OpenAI-style Chat Completions stream: use provider 'openai'"
GEMINI = "Gemini native generateContent is not supported: use its OpenAI-compatible /v1beta/openai, provider 'openai'"
TGI = "TGI native /generate_stream is not supported: use TGI's Messages API (/v1/chat/completions), provider 'openai'"
OLLAMA = "Ollama native /api/chat and /api/generate (NDJSON) are not supported: use Ollama's /v1 with provider 'openai'"


def foreign_api(obj: dict[str, Any]) -> str | None:
    """The one-line refusal for an event or body of an API other than OpenAI chat / Anthropic Messages, else None.

    The caller has already ruled out its own protocol's shape; this only names the intruder."""
    etype = obj.get("type")
    if isinstance(etype, str):
        if etype.startswith("response.") or etype == "response":
            return RESPONSES
        if etype.startswith("thread."):
            return ASSISTANTS
        if etype in _ANTHROPIC_STREAM_TYPES or (etype == "message" and "content" in obj):
            return ANTHROPIC_MESSAGES
        if etype == "completion":
            return ANTHROPIC_LEGACY
    obj_kind = obj.get("object")
    if isinstance(obj_kind, str):
        if obj_kind == "response":
            return RESPONSES
        if obj_kind.startswith(("thread", "assistant")):
            return ASSISTANTS
    if "completion" in obj and "stop_reason" in obj:
        return ANTHROPIC_LEGACY
    if "candidates" in obj or "promptFeedback" in obj:
        return GEMINI
    if "token" in obj or "generated_text" in obj:
        return TGI
    if "done" in obj and ("message" in obj or "response" in obj):
        return OLLAMA
    if "choices" in obj:
        return OPENAI_CHAT
    return None
