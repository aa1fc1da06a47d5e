"""`python -m loadlib`: `--help` lists every option loadlib adds to Locust (from the option registry); `report` and
`compare` build the reports of docs/reports.md.

Locust prints `--help` before it imports the locustfile, so options added through `init_command_line_parser`
never show there. `--markdown` prints docs/options.md.
"""

from __future__ import annotations

import sys

from loadlib.options_help import help_parser, markdown

USAGE = (
    "usage: python -m loadlib [--help | --markdown]      loadlib's Locust options\n"
    "       python -m loadlib report PATHS -o report.html   an HTML run report from records and a summary\n"
    "       python -m loadlib compare A B ... -o cmp.html   compare endpoints: table, Pareto front, verdict\n"
    "       python -m loadlib compare --baseline A B        did B regress against A? (exit 1 if so)\n"
)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["report"]:
        from loadlib.reports.report_cli import report_main

        return report_main(args[1:])
    if args[:1] == ["compare"]:
        from loadlib.reports.compare_cli import compare_main

        return compare_main(args[1:])
    if args == ["--markdown"]:
        sys.stdout.write(markdown())
        return 0
    if args not in ([], ["-h"], ["--help"]):
        sys.stderr.write(USAGE)
        return 2
    help_parser().print_help()
    sys.stdout.write("\n" + USAGE.replace("usage: ", "       ", 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
