"""The API reference builds from the docstrings (scripts/api_docs.sh, pdoc) and documents every public name, so it
cannot rot: a name added to `loadlib.__all__` without a docstring, or a docstring pdoc cannot render, fails here."""

from __future__ import annotations

import html
import re
import subprocess
from pathlib import Path

import loadlib
from tests.support.checkout import ROOT, child_env

SECTION = re.compile(r'<section id="([^"]+)">')


def build(out: Path) -> str:
    done = subprocess.run(
        ["bash", "scripts/api_docs.sh", str(out)],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return (out / "loadlib.html").read_text()


def sections(page: str) -> dict[str, str]:
    """Each public name's text, up to the next name's section (a class's members are in its section)."""
    found = list(SECTION.finditer(page))
    ends = [m.start() for m in found[1:]] + [len(page)]
    return {m.group(1): plain(page[m.end() : end]) for m, end in zip(found, ends, strict=True)}


def plain(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def test_the_reference_documents_exactly_the_public_names(tmp_path: Path) -> None:
    page = build(tmp_path / "api")
    found = sections(page)
    assert {name for name in found if "." not in name} == set(loadlib.__all__)
    assert "def chat" in found["LLMUser"] and "check(result, record)" in found["LLMUser"]
    assert "prepare(options)" in found["ScenarioSpec"]
    assert all(found[name] for name in loadlib.__all__), "every public name has text in the reference"
    assert not list((tmp_path / "api").glob("loadlib/*.html")), "only the public package page is built"
