"""User JSONL data files: valid files load (with token counts made at load time); a malformed file fails with the
file, the line and the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadlib.data.jsonl import FINDINGS_SCHEMA, load_cases, load_conversations, load_documents
from loadlib.errors import ConfigError
from loadlib.records import tokens


def write(path: Path, *lines: object) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


def test_conversations_load_and_count(tmp_path: Path) -> None:
    f = write(
        tmp_path / "c.jsonl",
        {"id": "c1", "topic": "order", "turns": ["Where is my order?", 'You said "{previous}". Why?']},
        "",
        {"id": "c2", "system": "Be brief.", "turns": ["Hi"]},
    )
    a, b = load_conversations(f)
    assert a.turn_tokens == (tokens.count_text("Where is my order?"), None)
    assert a.system is None and b.system == "Be brief." and b.system_tokens == tokens.count_text("Be brief.")
    assert b.topic == "general"


def test_documents_and_cases_load(tmp_path: Path) -> None:
    docs = load_documents(write(tmp_path / "d.jsonl", {"id": "d1", "text": "# Title\n\nSome text."}))
    assert docs[0].tokens == tokens.count_text("# Title\n\nSome text.") and docs[0].kind == "document"
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    cases = load_cases(
        write(
            tmp_path / "x.jsonl",
            {"id": "t1", "kind": "transaction", "policy": "No cash.", "case": "Cash 9,900 EUR"},
            {"id": "t2", "kind": "email", "policy": "No cash.", "case": "Hello", "schema": schema},
        )
    )
    assert cases[0].schema is FINDINGS_SCHEMA and cases[1].schema == schema
    assert cases[0].policy_tokens == cases[1].policy_tokens == tokens.count_text("No cash.")


BAD_LINES = [
    (load_conversations, '{"id": "c1", "turns": ["a"]}\n{"id": "c2", "turns": ["b"]', 2, "not valid JSON"),
    (load_conversations, '["a", "b"]', 1, "must be a JSON object"),
    (load_conversations, '{"id": "c1"}', 1, "field 'turns' must be a non-empty list"),
    (load_conversations, '{"id": "c1", "turns": ["a", 3]}', 1, "every entry of 'turns'"),
    (load_conversations, '{"id": "c1", "turns": ["a"], "turn": 1}', 1, "unknown field 'turn'"),
    (load_conversations, '{"id": "c1", "turns": ["a"], "turn_tokens": [1, 2]}', 1, "one count (or null) per turn"),
    (load_documents, '{"id": "d1", "text": ""}', 1, "field 'text' must be a non-empty string"),
    (load_documents, '{"id": "d1", "text": "x", "tokens": -4}', 1, "non-negative integer"),
    (load_documents, '{"text": "x"}', 1, "missing field 'id'"),
    (load_cases, '{"id": "1", "kind": "fax", "policy": "p", "case": "c"}', 1, "field 'kind' must be one of"),
    (load_cases, '{"id": "1", "kind": "email", "policy": "p", "case": "c", "schema": {"type": "array"}}', 1, "schema"),
    (
        load_cases,
        '{"id": "1", "kind": "email", "policy": "p", "case": "c", "schema": {"type": "object", "required": 5}}',
        1,
        "not a valid JSON Schema",
    ),
]


@pytest.mark.parametrize(("loader", "text", "line", "reason"), BAD_LINES)
def test_malformed_file_names_file_line_and_reason(tmp_path: Path, loader, text: str, line: int, reason: str) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text(text + "\n")
    with pytest.raises(ConfigError) as info:
        loader(f)
    msg = str(info.value)
    assert msg.startswith(f"{f}:{line}: "), msg
    assert reason in msg
    assert "\n" not in msg


def test_empty_and_missing_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(ConfigError, match="no records"):
        load_documents(empty)
    with pytest.raises(ConfigError, match="cannot read the data file"):
        load_documents(tmp_path / "missing.jsonl")
