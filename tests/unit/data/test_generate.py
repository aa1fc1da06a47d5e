"""Generated scenario data: deterministic bytes, realistic shapes, token counts made once and cached."""

from __future__ import annotations

from pathlib import Path

import pytest

from loadlib import data
from loadlib.data import support_chat
from loadlib.data.jsonl import PREVIOUS, load_cases, load_conversations, load_documents
from loadlib.records import tokens


@pytest.fixture(autouse=True)
def fresh_memo():
    for fn in (data.conversations, data.documents, data.compliance_cases, data.system_prompt):
        fn.cache_clear()
    yield
    for fn in (data.conversations, data.documents, data.compliance_cases, data.system_prompt):
        fn.cache_clear()


def build_all(cache: Path, seed: int) -> dict[str, bytes]:
    data.conversations(seed, 12, 5, str(cache))
    data.documents(seed, (4000, 8000), 2, str(cache))
    data.compliance_cases(seed, 9, str(cache))
    return {p.name.split("-")[0]: p.read_bytes() for p in sorted(cache.iterdir())}


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    a = build_all(tmp_path / "a", 7)
    for fn in (data.conversations, data.documents, data.compliance_cases):
        fn.cache_clear()
    b = build_all(tmp_path / "b", 7)
    for fn in (data.conversations, data.documents, data.compliance_cases):
        fn.cache_clear()
    c = build_all(tmp_path / "c", 8)
    assert set(a) == {"conversations", "documents", "cases"}
    assert a == b
    assert all(a[k] != c[k] for k in a)
    assert support_chat.system_prompt(7, 500) == support_chat.system_prompt(7, 500)


def test_documents_hit_their_target_sizes_with_sections(tmp_path: Path) -> None:
    docs = data.documents(3, (4000, 16000), 3, str(tmp_path))
    assert len(docs) == 6
    assert {d.kind for d in docs} == {"contract", "annual_report", "policy"}
    for d in docs:
        target = int(d.id.split("-")[1])
        assert 0.95 * target <= d.tokens <= target, (d.id, d.tokens)
        assert d.tokens == tokens.count_text(d.text)
        assert d.text.startswith("# ") and d.title in d.text.splitlines()[0]
        assert d.text.count("\n## ") >= 3, "sections with headings"


def test_a_128k_document_is_generated_and_counted_once(tmp_path: Path, monkeypatch) -> None:
    calls: list[int] = []
    real = tokens.count_text

    def counting(text: str, encoding: str = "o200k_base") -> int:
        calls.append(len(text))
        return real(text, encoding)

    monkeypatch.setattr(tokens, "count_text", counting)
    (doc,) = data.documents(5, (128000,), 1, str(tmp_path))
    assert 0.97 * 128000 <= doc.tokens <= 128000
    big = [n for n in calls if n > 100_000]
    assert len(big) == 1, "the long document is counted once, when it is generated"
    assert data.documents(5, (128000,), 1, str(tmp_path))[0] is doc, "memoised in the process"
    data.documents.cache_clear()
    calls.clear()
    again = data.documents(5, (128000,), 1, str(tmp_path))[0]
    assert again == doc and not calls, "a later process reads the disk cache: no generation, no counting"


def test_conversations_quote_previous_answers_and_carry_counts(tmp_path: Path) -> None:
    convs = data.conversations(2, 30, 6, str(tmp_path))
    assert len(convs) == 30 and {c.topic for c in convs} == {"order", "product", "account"}
    quoting = 0
    for c in convs:
        assert len(c.turns) == len(c.turn_tokens) == 6
        for text, n in zip(c.turns, c.turn_tokens, strict=True):
            if PREVIOUS in text:
                quoting += 1
                assert n is None
            else:
                assert n == tokens.count_text(text)
    assert quoting > 10, "follow-ups refer to the previous answer"
    assert any("VM-" in c.turns[0] for c in convs), "orders have numbers"


def test_compliance_cases_rotate_kinds_with_policy_and_counts(tmp_path: Path) -> None:
    cases = data.compliance_cases(4, 12, str(tmp_path))
    assert [c.kind for c in cases[:3]] == ["transaction", "email", "clause"]
    for c in cases:
        assert c.policy_tokens == tokens.count_text(c.policy)
        assert c.case_tokens == tokens.count_text(c.case)
        assert c.schema["required"] == ["case_id", "verdict", "risk_score", "findings"]
    assert '"amount"' in cases[0].case and "From:" in cases[1].case and "clause" in cases[2].case.lower()


def test_system_prompt_has_about_the_requested_length() -> None:
    for target in (100, 500, 2000):
        text, n = data.system_prompt(1, target)
        assert n == tokens.count_text(text)
        assert 0.97 * target <= n <= target


def test_cache_files_load_with_the_user_file_loaders(tmp_path: Path) -> None:
    build_all(tmp_path, 1)
    files = {p.name.split("-")[0]: p for p in tmp_path.iterdir()}
    assert len(load_conversations(files["conversations"])) == 12
    assert len(load_documents(files["documents"])) == 4
    assert len(load_cases(files["cases"])) == 9
