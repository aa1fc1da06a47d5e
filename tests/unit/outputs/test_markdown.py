"""The Markdown summary: verdict first, then the tables a reviewer reads in a pull request, with the console's
number formats, threshold expressions as code spans, free text escaped only where a renderer would misread it (so the
file reads as written in an editor, no `&lt;`), and the GitHub step summary appended only inside GitHub Actions."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pytest

from loadlib.outputs.markdown import (
    STEP_SUMMARY_ENV,
    STEP_SUMMARY_MAX_BYTES,
    append_step_summary,
    code,
    esc,
    markdown_summary,
    threshold_limit,
    threshold_value,
    write_markdown,
)
from loadlib.redact import Redactor

ROOT = Path(__file__).resolve().parents[3]


def load(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "tests" / "fixtures" / "summaries" / f"{name}.json").read_text())


def table(text: str, header_start: str) -> list[list[str]]:
    """The rows of the table whose header starts with `header_start`, as lists of cells (header and rule dropped)."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header_start}"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split(" | ")])
    return rows


def test_the_first_line_is_the_verdict() -> None:
    text = markdown_summary(load("chat_with_verdict"))
    first = text.split("\n")[0]
    assert first.startswith("**Verdict: INVALID** (exit code 3): client saturated: worker event-loop lag p99 75.9 ms")
    assert "e2e p95 < 0.5s failed" in first
    assert text.split("\n\n")[1] == "Run 20261130-201024-5fb7, 5.0 s, openai mock-llm at http://127.0.0.1:44927/v1."


def test_the_threshold_table() -> None:
    rows = table(markdown_summary(load("chat_with_verdict")), "threshold")
    assert rows == [
        ["`ttft p95 < 150ms`", "52.7 ms", "< 150 ms", "pass"],
        ["`e2e p95 < 0.5s`", "0.682 s", "< 0.5 s", "**FAIL**"],
        ["`error_rate{scenario=chat} < 1%`", "0.0 %", "< 1 %", "pass"],
        ["`itl p99 <= 20`", "14.8", "<= 20", "pass"],
        [
            "`ttft{endpoint=mock} p99 < 100ms`",
            "54.4 ms",
            "< 100 ms",
            "not judged: 21 requests, too few to judge a p99 (at least 100)",
        ],
    ]


def test_the_request_table_matches_the_console_figures() -> None:
    rows = table(markdown_summary(load("failover_drill"), []), "scenario @ endpoint")
    # the console printed: primary 197/11 TTFT 60.6 61.0 E2E p95 309 tok/s 132 $0.0041; Aggregated ... 250 0.0077
    assert rows == [
        ["failover_drill @ primary", "197", "11", "60.6", "61.0", "309", "132", "0.0041"],
        ["failover_drill @ secondary", "166", "0", "150", "151", "524", "118", "0.0036"],
        ["**Aggregated**", "363", "11", "60.9", "151", "522", "250", "0.0077"],
    ]


def test_errors_client_and_drills() -> None:
    text = markdown_summary(load("failover_drill"), [])
    assert "Errors by class, failover_drill @ primary: http_5xx 11" in text
    assert "\n\nclient OK: loop lag p99 2.2 ms, CPU p90 6.0 %\n\n" in text
    assert table(text, "drill") == [
        [
            "1: primary http_503 at +20.0 s for 20.0 s",
            "pass",
            "failover 0.58 s <= 5 s; user errors 0.00 % <= 2 %",
        ]
    ]
    assert "**Thresholds**" not in text  # none given, none in the summary: no empty table


def test_incidents_have_a_table() -> None:
    summary = load("failover_drill")
    incident = {"index": 1, "endpoint": "primary", "at_s": 20.04, "duration_s": 6.1, "ongoing": False, "drill": 1}
    incident |= {"workers": ["local"], "user_requests": 760, "user_errors": 0, "user_error_rate": 0.0}
    incident |= {k: {"p50": 0.04, "max": 0.04, "per_worker": {}} for k in ("detect_s", "failover_s", "failback_s")}
    summary["failover"]["incidents"] = [incident]
    assert table(markdown_summary(summary, []), "incident") == [
        [
            "1: primary at +20.0 s for 6.100 s, drill 1",
            "1",
            "0.040 / 0.040",
            "0.040 / 0.040",
            "0.040",
            "0 of 760 (0.00 %)",
        ]
    ]
    assert "**Failover incidents**" not in markdown_summary(load("failover_drill"), [])


def test_a_saturated_client_is_said_with_its_reasons() -> None:
    text = markdown_summary(load("chat_with_verdict"))
    assert "\n\nCLIENT SATURATED: worker event-loop lag p99 75.9 ms > 50 ms" in text
    assert "**Failover drills**" not in text  # a pool of one without drills


@pytest.mark.parametrize(
    ("mutate", "verdict"),
    [
        (lambda s: None, "**Verdict: INVALID** (derived here: the run recorded no verdict): worker event-loop lag"),
        (lambda s: s.update(client_saturated=False), "**Verdict: FAIL** (derived here: the run recorded no verdict):"),
        (
            lambda s: s.update(client_saturated=False, thresholds=s["thresholds"][:1]),
            "**Verdict: PASS** (derived here: the run recorded no verdict)\n",
        ),
    ],
)
def test_without_a_recorded_verdict_one_is_derived_and_said_to_be(mutate: Any, verdict: str) -> None:
    summary = load("chat_with_verdict")
    del summary["verdict"]
    mutate(summary)
    assert markdown_summary(summary).startswith(verdict)


def test_a_failed_drill_fails_the_derived_verdict() -> None:
    summary = load("failover_drill")
    summary["failover"]["drills"][0]["passed"] = False
    text = markdown_summary(summary, [])
    assert text.startswith("**Verdict: FAIL** (derived here: the run recorded no verdict): drill 1 failed")
    assert table(text, "drill")[0][1] == "**FAIL**"


def test_free_text_cannot_break_a_table_or_hide_as_html() -> None:
    assert esc("a | b <redacted> *x* [l](u) `c`\nnext") == "a \\| b \\<redacted> \\*x\\* \\[l\\](u) \\`c\\` next"
    assert (
        esc("p95 < 0.5s, 1 <= 2 > 0, R&D &amp; </b> <!-- <?")
        == "p95 < 0.5s, 1 <= 2 > 0, R&D \\&amp; \\</b> \\<!-- \\<?"
    )
    summary = load("chat_with_verdict")
    summary["rows"][0]["name"] = "chat | evil @ mock"
    rows = table(markdown_summary(summary), "scenario @ endpoint")
    assert rows[0][0] == "chat \\| evil @ mock"
    assert len(rows[0]) == 8


@pytest.mark.parametrize(
    ("value", "unit", "shown"),
    [(682.5, "s", "0.682 s"), (0.004, "%", "0.4 %"), (0.004, "", "0.004"), (1234.5, "ms", "1234 ms"), (None, "", "-")],
)
def test_threshold_values_speak_the_unit_they_were_written_in(value: float | None, unit: str, shown: str) -> None:
    assert threshold_value(value, unit) == shown


def test_limits_read_as_written() -> None:
    assert threshold_limit("<", 500.0, "s") == "< 0.5 s"
    assert threshold_limit("<=", 0.07, "%") == "<= 7 %"
    assert threshold_limit(">", 0.99, "") == "> 0.99"


def test_write_markdown_masks_secrets(tmp_path: Path) -> None:
    secret = "sk-test-0123456789abcdef"
    summary = load("chat_with_verdict")
    summary["meta"]["host"] = f"http://h/v1?key={secret}"
    target = tmp_path / "out" / "summary.md"
    assert write_markdown(str(target), summary, redact=Redactor([secret])) is None
    text = target.read_text(encoding="utf-8")
    assert secret not in text
    assert "at http://h/v1?key=\\<redacted>." in text


def test_the_step_summary_is_appended_inside_github_actions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    step = tmp_path / "step_summary.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv(STEP_SUMMARY_ENV, str(step))
    text = markdown_summary(load("chat_with_verdict"))
    assert append_step_summary(text) is None
    assert append_step_summary("second") is None
    assert step.read_text() == "earlier step\n" + text + "second\n"


def test_no_step_summary_outside_github_actions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(STEP_SUMMARY_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert append_step_summary("anything") is None
    monkeypatch.setenv(STEP_SUMMARY_ENV, "")
    assert append_step_summary("anything") is None
    assert list(tmp_path.iterdir()) == []


def test_the_step_summary_stays_under_githubs_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    step = tmp_path / "step_summary.md"
    monkeypatch.setenv(STEP_SUMMARY_ENV, str(step))
    assert append_step_summary("é" * STEP_SUMMARY_MAX_BYTES) is None
    data = step.read_bytes()
    assert len(data) <= STEP_SUMMARY_MAX_BYTES + 1
    assert data.decode("utf-8").endswith("(cut at GitHub's 1 MiB step-summary limit)\n")


def test_an_unwritable_step_summary_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(STEP_SUMMARY_ENV, str(tmp_path / "missing-dir" / "summary.md"))
    problem = append_step_summary("x")
    assert problem is not None and problem.startswith("cannot append to the GitHub step summary")


def test_expressions_are_code_spans_that_need_no_escaping_but_a_pipe() -> None:
    assert code("ttft p95 < 150ms") == "`ttft p95 < 150ms`"
    assert code("ttft{endpoint=a|b} p95 < 1s") == "`ttft{endpoint=a\\|b} p95 < 1s`"
    assert code("a `b` c") == "``a `b` c``"
    assert code("`x") == "`` `x ``"


def test_a_commonmark_renderer_shows_every_text_as_it_was_written() -> None:
    """What GitHub and GitLab do with the file: the escapes vanish, nothing hides as HTML, no cell splits."""
    markdown_it = pytest.importorskip("markdown_it")
    render = markdown_it.MarkdownIt("commonmark").enable("table").render
    text = "key=<redacted> a | b &amp; *x* [l](u) e2e p95 < 0.5s <!-- x"
    assert render(esc(text)) == f"<p>{html.escape(text, quote=False)}</p>\n"
    cell = render(f"| a | b |\n| --- | --- |\n| {code('ttft{e=a|b} p95 < 1s')} | {esc('< 1 %')} |\n")
    assert "<td><code>ttft{e=a|b} p95 &lt; 1s</code></td>\n<td>&lt; 1 %</td>" in cell
