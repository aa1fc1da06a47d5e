"""`python -m loadlib report PATHS -o report.html` (docs/reports.md): tells records files from the summary by
content, reads them, writes the page. Any problem with an input is one line on stderr and exit code 2, never a
traceback: the command is run by hand and in CI, where a clear line is what helps."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from loadlib.outputs.summary import write_text
from loadlib.reports.records_in import InputError, kind_of, load_summary, read_records
from loadlib.reports.report import build_report

PROG = "python -m loadlib report"
NO_RECORDS = "no records among the paths: give the run's --llm-records JSONL files (the summary alone has no plots)"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="An HTML run report from a run's --llm-records files (one per worker) and, optionally, its "
        "--llm-summary JSON; which is which is told by content.",
    )
    p.add_argument("paths", nargs="+", metavar="PATHS", help="records JSONL files and at most one summary JSON")
    p.add_argument("-o", "--output", default="report.html", help="the HTML file to write (default: report.html)")
    return p


def classify(paths: Sequence[Path]) -> tuple[list[Path], Path | None]:
    """(records files, the summary or None); InputError for a path that is neither, a directory, or a second
    summary."""
    records: list[Path] = []
    summaries: list[Path] = []
    for path in paths:
        if path.is_dir():
            raise InputError(f"{path}: is a directory; give its files (e.g. {path}/*.jsonl)")
        (summaries if kind_of(path) == "summary" else records).append(path)
    if len(summaries) > 1:
        raise InputError(f"{len(summaries)} summaries given ({', '.join(map(str, summaries))}); give one")
    if not records:
        raise InputError(NO_RECORDS)
    return records, summaries[0] if summaries else None


def report_main(argv: list[str]) -> int:
    """Build the report; 0 when written, 2 for bad arguments or inputs (one line on stderr)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    started = time.monotonic()
    try:
        records_paths, summary_path = classify([Path(p) for p in args.paths])
        summary = load_summary(summary_path) if summary_path else None
        records = read_records(records_paths)
    except InputError as exc:
        return _fail(str(exc))
    if not len(records):
        return _fail(f"no request records in {', '.join(map(str, records_paths))}")
    problem = write_text(args.output, build_report(records, summary, [str(p) for p in records_paths]), "run report")
    if problem:
        return _fail(problem)
    took = time.monotonic() - started
    sys.stderr.write(f"loadlib: run report written to {args.output} ({len(records)} attempts, {took:.1f} s)\n")
    return 0


def _fail(message: str) -> int:
    sys.stderr.write(f"loadlib report: {message}\n")
    return 2
