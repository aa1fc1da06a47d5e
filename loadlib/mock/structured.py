"""Structured output of the mock: which JSON schema a request asks for, and a JSON answer generated from it.

OpenAI asks with `response_format` (`json_schema`, or `json_object` for any object) or a forced function (its
`parameters`, any object when it has none); Anthropic with a forced tool whose `input_schema` has properties (a bare
`{"type": "object"}` keeps the legacy `{"text": ...}` answer). The answer is a function of a seed: valid against the
schema, or broken (cut short, or missing a required property) when the server's dice say so. It is split into o200k
tokens, so every event carries one token and usage counts them. The work is a few microseconds per structured
request and none for the others.
"""

from __future__ import annotations

import json
import random
from typing import Any

from loadlib.mock.render import WORDS
from loadlib.records.tokens import get_encoding

GENERIC_OBJECT: dict[str, Any] = {
    "type": "object",
    "properties": {"result": {"type": "string"}},
    "required": ["result"],
}
_WORDS = tuple(w.strip() for w in WORDS)
MAX_DEPTH = 6


def requested_schema(api: str, body: dict[str, Any], tool: str | None) -> dict[str, Any] | None:
    """The schema a request wants its answer to follow, or None for plain text (or the legacy tool answer)."""
    if api == "anthropic":
        if tool is None:
            return None
        for t in body.get("tools") or ():
            if isinstance(t, dict) and t.get("name") == tool:
                schema = t.get("input_schema")
                if isinstance(schema, dict) and isinstance(schema.get("properties"), dict) and schema["properties"]:
                    return schema
        return None
    if tool is not None:
        return function_schema(body, tool)
    fmt = body.get("response_format")
    if not isinstance(fmt, dict):
        return None
    if fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        return schema if isinstance(schema, dict) and schema else GENERIC_OBJECT
    if fmt.get("type") == "json_object":
        return GENERIC_OBJECT
    return None


def function_schema(body: dict[str, Any], name: str) -> dict[str, Any]:
    """The parameters of the OpenAI function `name` (a generic object when it declares none): its arguments are
    always a JSON object."""
    for t in body.get("tools") or ():
        function = t.get("function") if isinstance(t, dict) else None
        if isinstance(function, dict) and function.get("name") == name:
            params = function.get("parameters")
            if isinstance(params, dict) and isinstance(params.get("properties"), dict) and params["properties"]:
                return params
    return GENERIC_OBJECT


def generate(schema: dict[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A value that validates against the common JSON-Schema subset (type, enum, const, properties, required,
    items, min/max, anyOf/oneOf/allOf)."""
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return rng.choice(enum)
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options and isinstance(options[0], dict):
            return generate(options[0], rng, depth)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        props = schema.get("properties") or {}
        if depth >= MAX_DEPTH:
            return {}
        return {k: generate(v if isinstance(v, dict) else {}, rng, depth + 1) for k, v in props.items()}
    if kind == "array":
        items: dict[str, Any] = schema["items"] if isinstance(schema.get("items"), dict) else {}
        low = int(schema.get("minItems", 1))
        high = max(low, min(int(schema.get("maxItems", 3)), low + 3))
        n = 0 if depth >= MAX_DEPTH else rng.randint(low, high)
        return [generate(items, rng, depth + 1) for _ in range(n)]
    if kind == "integer":
        low = int(schema.get("minimum", 0))
        return rng.randint(low, max(low, int(schema.get("maximum", low + 100))))
    if kind == "number":
        floor = float(schema.get("minimum", 0.0))
        return round(rng.uniform(floor, max(floor, float(schema.get("maximum", floor + 1.0)))), 3)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    low = int(schema.get("minLength", 0))
    text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 8)))
    return text if len(text) >= low else text + "x" * (low - len(text))


def answer_text(schema: dict[str, Any], seed: int, valid: bool) -> str:
    """The JSON answer for this seed. A broken one is cut in the middle (even seeds) or lacks a required property
    (odd seeds, when the schema requires one), the two ways models fail structured output."""
    rng = random.Random(seed)
    value = generate(schema, rng)
    if not valid:
        required = schema.get("required") if isinstance(value, dict) else None
        if seed % 2 and isinstance(required, list) and required and required[0] in value:
            value.pop(required[0])
        else:
            text = json.dumps(value)
            return text[: max(1, len(text) // 2)]
    return json.dumps(value)


def token_pieces(text: str) -> tuple[str, ...]:
    """The text split at o200k token boundaries (the answer is ASCII, so every token is whole characters)."""
    enc = get_encoding()
    return tuple(enc.decode_single_token_bytes(t).decode("utf-8", "replace") for t in enc.encode(text))


PAD = " "


def padded(pieces: tuple[str, ...], ratio: float, prose_tokens: int) -> tuple[str, ...]:
    """The JSON's tokens followed by whitespace tokens (which JSON allows after a value) up to `ratio` times the
    request's prose answer, so the amplification of structured output is a known factor; a JSON answer already
    longer stays as it is. `ratio` 0 leaves the answer alone."""
    target = round(ratio * prose_tokens)
    if ratio <= 0 or len(pieces) >= target:
        return pieces
    return pieces + (PAD,) * (target - len(pieces))
