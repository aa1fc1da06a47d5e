"""Type-checked reads of the JSON fields the adapters take from a server, so that an adapter is total over JSON.

A field of the wrong type is classified: `MalformedEventError` naming the field and what it held. Usage counts are
validated apart: a count that is not a non-negative integer below `MAX_COUNT` is rejected (None), and the rejection
is kept on the `Usage` so the record says why the estimate was used instead; counts that are each sane but impossible
together are rejected the same way by loadlib/providers/usage.py. Pure functions, no I/O.
"""

from __future__ import annotations

from typing import Any

from loadlib.errors import MalformedEventError

MAX_COUNT = 1_000_000_000  # tokens in one request: far above any context window, far below 64-bit trouble


def kind(value: Any) -> str:
    """The JSON type of a decoded value, as a server author would name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def wrong(where: str, value: Any, expected: str) -> MalformedEventError:
    """The error for `where` holding a value of the wrong type."""
    return MalformedEventError(f"{where} is {_a(kind(value))}, not {_a(expected)}")


def _a(name: str) -> str:
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def text(value: Any, where: str) -> str | None:
    """A string field; None when absent (null)."""
    if value is None or type(value) is str:
        return value
    raise wrong(where, value, "string")


def mapping(value: Any, where: str) -> dict[str, Any] | None:
    """An object field; None when absent (null)."""
    if value is None or type(value) is dict:
        return value
    raise wrong(where, value, "object")


def array(value: Any, where: str) -> list[Any] | None:
    """An array field; None when absent (null)."""
    if value is None or type(value) is list:
        return value
    raise wrong(where, value, "array")


def index(value: Any, where: str) -> int:
    """A choice, block or tool-call index: a non-negative integer; absent means 0."""
    if value is None:
        return 0
    if type(value) is int and 0 <= value < MAX_COUNT:
        return value
    raise wrong(where, value, "index (a non-negative integer)")


def identifier(value: Any) -> str | None:
    """An id or model name: kept as text whatever its type (it is only ever shown), None when absent or empty."""
    if value is None or value == "":
        return None
    return value if type(value) is str else str(value)


def count(value: Any, where: str, rejected: list[str]) -> int | None:
    """A usage count, or None when absent or not a sane count (the reason is appended to `rejected`)."""
    if value is None:
        return None
    if type(value) is int and 0 <= value <= MAX_COUNT:
        return value
    if type(value) is float and value.is_integer() and 0 <= value <= MAX_COUNT:
        return int(value)
    rejected.append(f"{where}={_show(value)}")
    return None


def _show(value: Any) -> str:
    if isinstance(value, dict | list):
        return kind(value)
    shown = repr(value) if isinstance(value, str) else str(value)
    return shown if len(shown) <= 40 else shown[:39] + "…"
