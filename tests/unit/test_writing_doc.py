"""docs/writing-load-tests.md shows the examples' code as it is: every example file of `examples/` appears in the doc
whole, and the doc has no code block that is not an example's (the examples themselves run in
tests/integration/test_examples.py, the doc's shell commands in tests/integration/test_doc_commands.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.doc_commands import fenced_blocks

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "writing-load-tests.md"
EXAMPLES = sorted(p for p in (ROOT / "examples").iterdir() if p.suffix in (".py", ".jsonl"))
CODE_LANGS = ("python", "json")


def code_blocks() -> list[str]:
    return ["\n".join(b.lines) for b in fenced_blocks(DOC.read_text()) if b.lang in CODE_LANGS]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_appears_whole_in_the_doc(example: Path) -> None:
    assert example.read_text().rstrip("\n") in code_blocks(), f"{example.name} differs from its block in {DOC.name}"
    assert f"examples/{example.name}" in DOC.read_text()


def test_every_code_block_of_the_doc_is_an_example() -> None:
    files = {p.read_text().rstrip("\n") for p in EXAMPLES}
    strays = [block.splitlines()[0] for block in code_blocks() if block not in files]
    assert not strays, f"code blocks in {DOC.name} that no example file holds: {strays}"
