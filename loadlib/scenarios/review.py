"""Checking a structured answer, pure: extract it, parse and validate it against the schema, compare a repeat.

Reasons name the place and the rule broken, never the content (they reach Locust's failure table and the sinks).
"""

from __future__ import annotations

from typing import Any

import orjson

from loadlib.errors import ErrorClass
from loadlib.metrics import compliance_results as results
from loadlib.metrics.scenarios import ScenarioResults
from loadlib.providers.base import StreamResult
from loadlib.records.record import RequestRecord


def compile_validator(schema: dict[str, Any]) -> Any:
    """A jsonschema validator of the schema's own draft, compiled once per schema."""
    from jsonschema.validators import validator_for

    cls = validator_for(schema)
    return cls(schema)


def structured_output(result: StreamResult | None) -> str:
    """The JSON text of a structured answer: message content (OpenAI) or the forced tool's arguments (Anthropic)."""
    if result is None:
        return ""
    if result.text:
        return result.text
    return result.tool_calls[0].arguments if result.tool_calls else ""


def check_output(text: str, validator: Any) -> tuple[Any, str | None]:
    """(parsed value, None) when `text` is JSON valid against the schema, else (None or value, reason). The reason
    names the place and the rule, never the content."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return None, f"output is not JSON ({str(exc).split(':')[0]}; {len(text)} chars)"
    from jsonschema.exceptions import best_match

    error = best_match(validator.iter_errors(value))
    if error is None:
        return value, None
    return value, f"output fails the schema at {error.json_path} ({error.validator})"


def schema_depth(schema: Any) -> int:
    """How deeply a schema nests objects and arrays (a flat object is 1): structured output's token cost grows
    with it, so amplification is reported per depth."""
    if not isinstance(schema, dict):
        return 0
    children = [*(schema.get("properties") or {}).values(), schema.get("items")]
    for word in ("anyOf", "oneOf", "allOf"):
        children += schema.get(word) or []
    inner = max((schema_depth(c) for c in children), default=0)
    nests = schema.get("type") in ("object", "array") or "properties" in schema
    return inner + 1 if nests else inner


def canonical(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


class Review:
    """The check of one request: finish reason, schema, and (for a repeat) equality with the first answer."""

    def __init__(self, found: ScenarioResults, validator: Any, reference: bytes | None = None) -> None:
        self.found = found
        self.validator = validator
        self.reference = reference
        self.value: Any = None
        self.valid = False

    def __call__(self, result: StreamResult | None, record: RequestRecord) -> tuple[ErrorClass, str] | None:
        if record.finish_reason in ("length", "max_tokens"):
            results.compliance_check(self.found, False)
            return ErrorClass.TRUNCATED, "findings cut at max_tokens"
        value, reason = check_output(structured_output(result), self.validator)
        results.compliance_check(self.found, reason is None)
        if reason is not None:
            return ErrorClass.SCHEMA_INVALID, reason
        self.value, self.valid = value, True
        if self.reference is not None:
            same = canonical(value) == self.reference
            results.compliance_compare(self.found, same)
            if not same:
                return ErrorClass.NONDETERMINISTIC, "a repeated temperature-0 request got a different answer"
        return None
