"""Entry point of `python -m loadlib.mock` (and the `llm-mock` script)."""

from __future__ import annotations

import sys

from loadlib.mock.cli import main as _main


def main() -> None:
    sys.exit(_main())


if __name__ == "__main__":
    main()
