"""The repository's documents: every relative link resolves, and docs/options.md is the option registry's own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from loadlib.options import OPTIONS
from loadlib.options_help import markdown

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(title: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    return {slug(line.lstrip("#")) for line in path.read_text().splitlines() if line.startswith("#")}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_relative_link_resolves(doc: Path) -> None:
    broken = []
    for target in LINK.findall(doc.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        if not path.exists() or (anchor and path.suffix == ".md" and anchor not in anchors(path)):
            broken.append(target)
    assert not broken, f"{doc.name}: broken links {broken}"


def test_options_doc_is_generated_from_the_registry() -> None:
    assert (ROOT / "docs" / "options.md").read_text() == markdown(), (
        "run: python -m loadlib --markdown > docs/options.md"
    )


def test_every_option_follows_the_one_environment_naming_rule() -> None:
    for option in OPTIONS:
        name = option.flag.removeprefix("--").removeprefix("llm-")
        assert option.env_var == "LLM_" + name.replace("-", "_").upper()
    assert len({o.env_var for o in OPTIONS}) == len(OPTIONS)


def test_no_document_points_at_a_design_file_outside_the_repository() -> None:
    for path in [*DOCS, *(ROOT / "loadlib").rglob("*.py")]:
        assert "DESIGN.md" not in path.read_text(), path
