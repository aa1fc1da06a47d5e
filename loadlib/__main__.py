"""`python -m loadlib --help`: every option loadlib adds to Locust, with its help.

Locust prints `--help` before it imports the locustfile, so options added through `init_command_line_parser`
never show there; this command registers them all and prints them.
"""

from __future__ import annotations

import argparse
import importlib
import sys

OPTION_MODULES = (
    "loadlib.user",
    "loadlib.scenarios.support_chat",
    "loadlib.scenarios.long_document",
    "loadlib.scenarios.compliance",
    "loadlib.shapes",
)


def options_parser() -> argparse.ArgumentParser:
    from locust import argument_parser

    for name in OPTION_MODULES:
        importlib.import_module(name)
    locust_parser = argument_parser.get_parser()
    locust_defaults = argument_parser.default_args_dict()
    out = argparse.ArgumentParser(
        prog="python -m loadlib",
        usage="locust -f locustfiles/<scenario>.py [LOCUST OPTIONS] [THE OPTIONS BELOW]",
        description="Options loadlib adds to Locust (on the command line, in locust.conf or as environment "
        "variables; Locust's own options: `locust --help`). Keys are never options: they come from the "
        "environment variable that --llm-api-key-env names.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        add_help=False,
    )
    for action in locust_parser._actions:
        if action.option_strings and action.dest not in locust_defaults and action.dest not in ("help", "version"):
            out._add_action(action)
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["-h"], ["--help"]):
        sys.stderr.write("usage: python -m loadlib [--help]   (prints loadlib's Locust options)\n")
        return 2
    options_parser().print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
