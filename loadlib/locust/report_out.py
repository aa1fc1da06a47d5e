"""`--llm-report`: the HTML run report written when a run ends (docs/reports.md), on the master or a local runner.

The report is built from the run's records, so a run asked for a report without `--llm-records` writes them beside
the report (the option travels to the workers with the others). A master reads every worker's file it can see, which
is all of them on one machine or a shared volume; otherwise it says how to build the report where the files are.
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Any

from loadlib.outputs.summary import write_text
from loadlib.settings import Options


def records_for_report(options: Options) -> str | None:
    """Where --llm-records should point when a report is wanted and no records were: beside the report (None: leave
    it as it is)."""
    report = str(options.llm_report or "")
    if not report or options.llm_records:
        return None
    target = Path(report).expanduser()
    return str(target.with_name(f"{target.stem}-records-{{worker}}.jsonl"))


def record_files(options: Options, run_id: str) -> list[str]:
    """Every records file of this run the node can see (`{worker}` matches any worker)."""
    pattern = str(options.llm_records).replace("{run_id}", run_id).replace("{worker}", "*")
    return sorted(glob.glob(str(Path(pattern).expanduser())))


def write_report(options: Options, summary: dict[str, Any], redact: Any) -> str | None:
    """Build and write the report; the problem as one line (None when written or not asked for)."""
    path = str(options.llm_report or "")
    if not path:
        return None
    files = record_files(options, str(summary.get("meta", {}).get("run_id") or ""))
    if not files:
        return (
            f"--llm-report {path}: no records of this run here ({options.llm_records}); build it where the workers "
            "wrote them: python -m loadlib report RECORDS SUMMARY -o REPORT"
        )
    from loadlib.reports.records_in import read_records  # numpy and matplotlib: only when a report is built
    from loadlib.reports.report import build_report

    records = read_records(Path(f) for f in files)
    problem = write_text(path, redact(build_report(records, summary, files)), "run report")
    if problem is None:
        print(f"loadlib: run report written to {path} ({len(records)} attempts from {len(files)} file(s))", flush=True)
    return problem
