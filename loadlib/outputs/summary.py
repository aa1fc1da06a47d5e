"""The end-of-run summary file (`--llm-summary`): JSON with every key masked, written whole or not at all.

Locust has already chosen its exit code when the run's last event fires, so a summary that cannot be written fails
the run through `force_exit_code`: at interpreter exit, after Locust has closed its own files, the process exits
with the given code instead.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

_NUMBER_LIST = re.compile(r"\[\s+(-?[\d.eE+-]+(?:,\s+-?[\d.eE+-]+)*)\s+\]")


def write_summary(path: str, summary: dict[str, Any], redact: Callable[[str], str]) -> str | None:
    """Write the summary as JSON; the problem as one line, or None when written."""
    problem = write_text(path, redact(summary_json(summary)) + "\n", "LLM summary")
    return f"{problem}; the table above is all there is" if problem else None


def summary_json(summary: dict[str, Any]) -> str:
    """Indented JSON with every list of numbers on one line: a histogram's buckets (loadlib.metrics.summary's
    `histograms`) would otherwise take a line per number."""
    text = json.dumps(summary, indent=2, default=str)
    return _NUMBER_LIST.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)


def write_text(path: str, text: str, what: str) -> str | None:
    """Write `text` via a temporary file, so a failure leaves no half file; the problem as one line, or None."""
    target = Path(path).expanduser()
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        return f"cannot write the {what} to {path} ({exc.strerror or exc})"
    return None


def force_exit_code(code: int) -> None:
    """Make the process exit with `code` once everything else has finished."""
    atexit.register(_exit_with, code)


def _exit_with(code: int) -> None:
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
