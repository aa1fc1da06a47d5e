"""`python -m loadlib --help`: every option loadlib adds to Locust, from the option registry (loadlib.options).

Locust prints `--help` before it imports the locustfile, so options added through `init_command_line_parser`
never show there. `--markdown` prints docs/options.md.
"""

from __future__ import annotations

import sys

from loadlib.options import help_parser, markdown


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--markdown"]:
        sys.stdout.write(markdown())
        return 0
    if args not in ([], ["-h"], ["--help"]):
        sys.stderr.write("usage: python -m loadlib [--help | --markdown]   (prints loadlib's Locust options)\n")
        return 2
    help_parser().print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
