"""`python -m loadlib report PATHS -o FILE`: records and summary in any order, told apart by content; any bad input
is exit code 2 with one line on stderr and no traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from loadlib.__main__ import main
from tests.unit.reports.test_report import PLOTS, ROOT, known_run, summary_of, write_jsonl


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("loadlib report: "), err
    return err


@pytest.fixture
def run_files(tmp_path):
    """A worker's records file split in two (two workers) and the run's summary."""
    records = known_run()
    a = write_jsonl(tmp_path / "w1.jsonl", records[:8])
    b = write_jsonl(tmp_path / "w2.jsonl", records[8:])
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps(summary_of(records), indent=2))
    return a, b, summary


def test_summary_and_worker_files_in_any_order_make_one_report(tmp_path, run_files, capsys):
    a, b, summary = run_files
    out = tmp_path / "out" / "report.html"
    assert main(["report", str(summary), str(b), str(a), "-o", str(out)]) == 0
    html = out.read_text()
    assert html.count("<svg") == PLOTS and "Counts equal the summary" in html
    assert "16 attempts in 2 file(s)" in html
    assert f"run report written to {out} (16 attempts" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: [d / "missing.jsonl"], "missing.jsonl: No such file or directory"),
        (lambda d: [d], "is a directory; give its files"),
        (lambda d: [write(d / "x.txt", "hello\n")], "x.txt: neither a records JSONL file"),
        (lambda d: [write(d / "s.json", json.dumps(summary_of(known_run())))], "no records among the paths"),
        (lambda d: [write(d / "e.jsonl", "")], "no request records in"),
    ],
    ids=["missing", "directory", "not-json", "summary-only", "empty"],
)
def test_bad_inputs_exit_2_with_one_line(tmp_path, capsys, make, message):
    paths = [str(p) for p in make(tmp_path)]
    assert main(["report", *paths, "-o", str(tmp_path / "r.html")]) == 2
    assert message in one_line_error(capsys)
    assert not (tmp_path / "r.html").exists()


def test_two_summaries_are_refused(tmp_path, run_files, capsys):
    a, _, summary = run_files
    other = write(tmp_path / "other.json", summary.read_text())
    assert main(["report", str(a), str(summary), str(other), "-o", str(tmp_path / "r.html")]) == 2
    assert "2 summaries given" in one_line_error(capsys)


def test_an_unreadable_file_is_one_line(tmp_path, run_files, capsys, monkeypatch):
    """Opening fails as it does without read permission (chmod cannot show it: tests may run as root)."""
    a, _, _ = run_files
    monkeypatch.setattr("loadlib.reports.records_in.Path.open", _denied)
    assert main(["report", str(a), "-o", str(tmp_path / "r.html")]) == 2
    assert "Permission denied" in one_line_error(capsys)


def test_without_paths_is_a_usage_error(capsys):
    assert main(["report"]) == 2
    assert "usage: python -m loadlib report" in capsys.readouterr().err


def test_the_module_entry_point_exits_2_without_a_traceback(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "loadlib", "report", str(tmp_path / "nope.jsonl")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr


def write(path, text: str):
    path.write_text(text)
    return path


def _denied(*_args, **_kwargs):
    raise PermissionError(13, "Permission denied")


def test_an_output_that_cannot_be_written_is_one_line(tmp_path, run_files, capsys):
    a, _, _ = run_files
    blocker = write(tmp_path / "file", "")
    assert main(["report", str(a), "-o", str(blocker / "report.html")]) == 2
    assert "cannot write the run report" in one_line_error(capsys)
