"""Every output file a run writes says so in one line, as the JSON summary always did: `--llm-junit` and
`--llm-markdown` wrote silently, so a user could not tell from the console whether (and where) they were written."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from loadlib.locust.install import _write_outputs
from loadlib.settings import resolve

ROOT = Path(__file__).resolve().parents[3]


def summary() -> dict[str, Any]:
    return json.loads((ROOT / "tests" / "fixtures" / "summaries" / "chat_with_verdict.json").read_text())


def context(**paths: str) -> Any:
    options = {"llm_junit": "", "llm_markdown": "", "llm_summary": "", "llm_report": "", **paths}
    return SimpleNamespace(options=resolve(SimpleNamespace(**options)), redact=lambda text: text)


def test_junit_markdown_and_summary_each_print_where_they_were_written(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    junit, md, js = (str(tmp_path / name) for name in ("j.xml", "s.md", "s.json"))
    problems, notes = _write_outputs(context(llm_junit=junit, llm_markdown=md, llm_summary=js), summary())
    assert problems == []
    assert notes == [
        f"loadlib: JUnit report written to {junit}",
        f"loadlib: Markdown summary written to {md}",
        f"loadlib: LLM summary written to {js}",
    ]
    assert all(Path(p).stat().st_size > 0 for p in (junit, md, js))


def test_an_output_that_cannot_be_written_is_a_problem_not_a_note(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    (tmp_path / "s.md").mkdir()  # a directory where the file should go
    md = str(tmp_path / "s.md")
    problems, notes = _write_outputs(context(llm_junit=str(tmp_path / "j.xml"), llm_markdown=md), summary())
    assert len(problems) == 1 and md in problems[0]
    assert notes == [f"loadlib: JUnit report written to {tmp_path / 'j.xml'}"]


def test_nothing_asked_for_nothing_said(monkeypatch: Any) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert _write_outputs(context(), summary()) == ([], [])
