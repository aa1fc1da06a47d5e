"""One exception tree and the error classes of docs/metrics.md, "Error classes".

`LoadlibError` is for problems the user can fix (bad configuration, bad data, unsupported API): the CLI prints its
message as one line and exits non-zero. Error *classes* are the outcome labels of a request attempt.
"""

from __future__ import annotations

from enum import StrEnum


class LoadlibError(Exception):
    """Base of every error loadlib raises on purpose. Its message is one line a user can act on."""


class ConfigError(LoadlibError):
    """Invalid configuration: endpoint, provider, base URL, API key variable, price table, CLI flag."""


class UnsupportedAPIError(LoadlibError):
    """The response stream belongs to an API the adapters do not speak (Responses, Gemini native, TGI, NDJSON)."""


class MalformedEventError(LoadlibError):
    """An SSE event whose data is not the JSON the provider's protocol promises."""


class NotJSONError(MalformedEventError):
    """An event or a body that is not JSON at all (not merely JSON of the wrong shape)."""


class OversizedError(LoadlibError):
    """A response crossed one of our size caps (`line`, `event` or `response`): reading stops, the connection closes."""

    def __init__(self, cap: str, limit_bytes: int) -> None:
        super().__init__(f"the {cap} crossed its size cap of {_size(limit_bytes)} (--llm-max-{cap}-mb)")
        self.cap = cap
        self.limit_bytes = limit_bytes


def _size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n / 1024:g} KiB"


class ErrorClass(StrEnum):
    """Outcome of one request attempt (docs/metrics.md, "Error classes"). `OK` is the only success."""

    OK = "ok"
    HTTP_4XX = "http_4xx"
    RATE_LIMITED = "rate_limited"
    HTTP_5XX = "http_5xx"
    CONNECT_ERROR = "connect_error"
    TIMEOUT_CONNECT = "timeout_connect"
    TIMEOUT_TTFT = "timeout_ttft"
    TIMEOUT_IDLE = "timeout_idle"
    TIMEOUT_TOTAL = "timeout_total"
    STREAM_BROKEN = "stream_broken"
    MALFORMED_EVENT = "malformed_event"
    PROVIDER_ERROR = "provider_error"
    CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"
    TRUNCATED = "truncated"
    EMPTY_RESPONSE = "empty_response"
    SCHEMA_INVALID = "schema_invalid"
    NONDETERMINISTIC = "nondeterministic"
    UNSUPPORTED_API = "unsupported_api"
    OVERSIZED = "oversized"
    INTERNAL_ERROR = "internal_error"
    CANCELLED = "cancelled"  # a hedge that lost: its tokens and cost still count
    CIRCUIT_OPEN = "circuit_open"  # every endpoint's breaker refused: the user-visible request failed unsent
    HTTP_REDIRECT = "http_redirect"  # a 3xx: redirects are not followed (--host should name the final URL)
    HTTP_INVALID_STATUS = "http_invalid_status"  # a status code outside 100-599: no HTTP class says what it means
    CUT_OFF = "cut_off"  # still running when its user was stopped (the run ended): counted, not an error

    @property
    def is_error(self) -> bool:
        """Counts as an error: anything but a success, a hedge's cancelled loser (its user got an answer) and an attempt
        cut off by the end of the run (not the server's doing)."""
        return self not in NOT_ERRORS


# the one rule: docs/metrics.md, "Error classes"
NOT_ERRORS = frozenset({ErrorClass.OK, ErrorClass.CANCELLED, ErrorClass.CUT_OFF})
