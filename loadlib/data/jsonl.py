"""The scenario data formats: one JSON object per line, the same for user files and for the generated cache.

A malformed line fails at start-up with `file:line: reason` (a ConfigError), never in the middle of a run. Token
counts may be given in the file (the generated cache always has them); missing ones are counted here, once, when the
file is loaded, so no request ever tokenises its prompt.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import orjson

from loadlib.errors import ConfigError
from loadlib.records import tokens

PREVIOUS = "{previous}"  # in a support-chat turn: replaced by the start of the previous answer at run time
CASE_KINDS = ("transaction", "email", "clause")

FINDINGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["case_id", "verdict", "risk_score", "findings"],
    "properties": {
        "case_id": {"type": "string"},
        "verdict": {"type": "string", "enum": ["compliant", "violation", "needs_review"]},
        "risk_score": {"type": "integer", "minimum": 0, "maximum": 100},
        "findings": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["rule", "severity", "evidence"],
                "properties": {
                    "rule": {"type": "string"},
                    "severity": {"type": "string", "enum": ["low", "medium", "high"]},
                    "evidence": {"type": "string"},
                },
            },
        },
    },
}


@dataclass(frozen=True, slots=True)
class Conversation:
    """A support conversation: the user's turns in order. `turn_tokens[i]` is the content token count of turn i, or
    None when the turn quotes the previous answer (`{previous}`) and is counted when it is filled in."""

    id: str
    topic: str
    turns: tuple[str, ...]
    turn_tokens: tuple[int | None, ...]
    system: str | None = None
    system_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Document:
    """A long document to summarise; `tokens` is the o200k count of `text`."""

    id: str
    kind: str
    title: str
    text: str
    tokens: int


@dataclass(frozen=True, slots=True)
class ComplianceCase:
    """A case (transaction, e-mail, contract clause) to review against a policy, with the findings schema."""

    id: str
    kind: str
    policy: str
    case: str
    policy_tokens: int
    case_tokens: int
    schema: dict[str, Any]


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; ConfigError `file:line: reason` for anything else."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read the data file: {exc.strerror or exc}") from None
    for number, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise ConfigError(f"{p}:{number}: not valid JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise ConfigError(f"{p}:{number}: each line must be a JSON object, got {type(obj).__name__}")
        yield number, obj


class _Line:
    """Typed field access on one line, with errors that name the file, the line and the field."""

    def __init__(self, path: Path, number: int, obj: dict[str, Any], fields: tuple[str, ...]) -> None:
        self.where = f"{path}:{number}"
        self.obj = obj
        unknown = sorted(set(obj) - set(fields))
        if unknown:
            self.fail(f"unknown field {unknown[0]!r} (known: {', '.join(fields)})")

    def fail(self, reason: str) -> NoReturn:
        raise ConfigError(f"{self.where}: {reason}")

    def text(self, name: str, required: bool = True) -> str | None:
        value = self.obj.get(name)
        if value is None:
            if required:
                self.fail(f"missing field {name!r}")
            return None
        if not isinstance(value, str) or not value.strip():
            self.fail(f"field {name!r} must be a non-empty string")
        return value

    def count(self, name: str) -> int | None:
        value = self.obj.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self.fail(f"field {name!r} must be a non-negative integer")
        return value


def _load(path: str | Path, fields: tuple[str, ...], parse: Callable[[_Line], Any]) -> list[Any]:
    p = Path(path)
    out = [parse(_Line(p, number, obj, fields)) for number, obj in read_jsonl(p)]
    if not out:
        raise ConfigError(f"{p}: no records (one JSON object per line expected)")
    return out


def _count(text: str, given: int | None) -> int:
    return given if given is not None else tokens.count_text(text)


def load_conversations(path: str | Path) -> list[Conversation]:
    """Lines like {"id": "c1", "topic": "order", "system": "...", "turns": ["...", "You said {previous}. ..."]}."""

    def parse(line: _Line) -> Conversation:
        turns = line.obj.get("turns")
        if not isinstance(turns, list) or not turns:
            line.fail("field 'turns' must be a non-empty list of strings")
        if not all(isinstance(t, str) and t.strip() for t in turns):
            line.fail("every entry of 'turns' must be a non-empty string")
        given = line.obj.get("turn_tokens")
        if given is not None and (
            not isinstance(given, list)
            or len(given) != len(turns)
            or not all(g is None or (isinstance(g, int) and not isinstance(g, bool) and g >= 0) for g in given)
        ):
            line.fail("field 'turn_tokens' must list one count (or null) per turn")
        counts = tuple(
            None if PREVIOUS in t else (given[i] if given and given[i] is not None else tokens.count_text(t))
            for i, t in enumerate(turns)
        )
        system = line.text("system", required=False)
        system_tokens = line.count("system_tokens")
        return Conversation(
            id=str(line.text("id")),
            topic=line.text("topic", required=False) or "general",
            turns=tuple(turns),
            turn_tokens=counts,
            system=system,
            system_tokens=_count(system, system_tokens) if system is not None else None,
        )

    return _load(path, ("id", "topic", "system", "system_tokens", "turns", "turn_tokens"), parse)


def load_documents(path: str | Path) -> list[Document]:
    """Lines like {"id": "d1", "kind": "contract", "title": "...", "text": "..."}."""

    def parse(line: _Line) -> Document:
        text = str(line.text("text"))
        return Document(
            id=str(line.text("id")),
            kind=line.text("kind", required=False) or "document",
            title=line.text("title", required=False) or "Untitled document",
            text=text,
            tokens=_count(text, line.count("tokens")),
        )

    return _load(path, ("id", "kind", "title", "text", "tokens"), parse)


def load_cases(path: str | Path) -> list[ComplianceCase]:
    """Lines like {"id": "tx-1", "kind": "transaction", "policy": "...", "case": "...", "schema": {...}}."""
    policy_counts: dict[str, int] = {}

    def parse(line: _Line) -> ComplianceCase:
        kind = str(line.text("kind"))
        if kind not in CASE_KINDS:
            line.fail(f"field 'kind' must be one of {', '.join(CASE_KINDS)}, got {kind!r}")
        policy = str(line.text("policy"))
        case = str(line.text("case"))
        schema = line.obj.get("schema", FINDINGS_SCHEMA)
        if schema is not FINDINGS_SCHEMA:
            reason = schema_problem(schema)
            if reason:
                line.fail(f"field 'schema' {reason}")
        given = line.count("policy_tokens")
        if given is None and policy not in policy_counts:
            policy_counts[policy] = tokens.count_text(policy)
        return ComplianceCase(
            id=str(line.text("id")),
            kind=kind,
            policy=policy,
            case=case,
            policy_tokens=given if given is not None else policy_counts[policy],
            case_tokens=_count(case, line.count("case_tokens")),
            schema=schema,
        )

    return _load(path, ("id", "kind", "policy", "case", "schema", "policy_tokens", "case_tokens"), parse)


def schema_problem(schema: Any) -> str | None:
    """Why `schema` cannot be a findings schema (None when it can): an object schema, valid as JSON Schema."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return 'must be a JSON Schema object with "type": "object"'
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        return f"is not a valid JSON Schema: {exc.message}"
    return None


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write atomically (temp file, then rename), so a crashed generation never leaves a half cache file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    tmp.replace(path)
