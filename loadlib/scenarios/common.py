"""Pure helpers every scenario uses: prompt-token arithmetic that never re-tokenises a prompt, option parsing.

No Locust import here (nor in the other pure scenario modules): tests and tools use them in plain processes.
"""

from __future__ import annotations

from typing import Any

from loadlib.errors import ConfigError
from loadlib.records import tokens


def message_tokens(role: str, content_tokens: int) -> int:
    """Tokens one chat message adds to a prompt (OpenAI's accounting, as `tokens.count_chat`): framing, role,
    content. A prompt is REPLY_PRIMING plus the sum over its messages, so it can be grown without recounting."""
    return tokens.TOKENS_PER_MESSAGE + _role_tokens(role) + content_tokens


_ROLES: dict[str, int] = {}


def _role_tokens(role: str) -> int:
    n = _ROLES.get(role)
    if n is None:
        n = _ROLES[role] = tokens.count_text(role)
    return n


def prompt_tokens(*messages: tuple[str, int]) -> int:
    """Prompt tokens of messages given as (role, content tokens)."""
    return tokens.REPLY_PRIMING + sum(message_tokens(role, n) for role, n in messages)


def parse_range(text: str, name: str) -> tuple[float, float]:
    """`2` or `1-3` (seconds) -> (low, high)."""
    lo, sep, hi = (str(text).strip() or "0").partition("-")
    try:
        low = float(lo)
        high = float(hi) if sep else low
    except ValueError:
        raise ConfigError(f"{name} must be seconds like 2 or 1-3, got {text!r}") from None
    if low < 0 or high < low:
        raise ConfigError(f"{name} must be seconds like 2 or 1-3 (0 <= low <= high), got {text!r}")
    return low, high


def parse_ints(text: str, name: str, minimum: int = 1) -> tuple[int, ...]:
    """`4000,16000` -> (4000, 16000), every value >= minimum."""
    try:
        values = tuple(int(float(p)) for p in str(text).split(",") if p.strip())
    except ValueError:
        raise ConfigError(f"{name} must be comma-separated integers, got {text!r}") from None
    if not values or min(values) < minimum:
        raise ConfigError(f"{name} needs integers >= {minimum}, got {text!r}")
    return values


def positive(value: Any, name: str, minimum: float = 1) -> Any:
    if value is None or value < minimum:
        raise ConfigError(f"{name} must be >= {minimum:g}, got {value!r}")
    return value
