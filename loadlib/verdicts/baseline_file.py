"""Reading baseline summaries (--llm-baseline, `compare --baseline`): every problem is one ConfigError line naming
the file, raised before any load. A summary is usable when it is a run summary (--llm-summary) that kept its
histograms (loadlib.metrics.summary.with_histograms); several files are repeats of one setup, pooled."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from loadlib.errors import ConfigError
from loadlib.verdicts.baseline import has_histograms, pool
from loadlib.verdicts.relative import Baseline


def split_paths(text: str | None) -> list[str]:
    """--llm-baseline's value: one path, or several separated by ';' (the flag repeated)."""
    return [p.strip() for p in str(text or "").split(";") if p.strip()]


def load_baseline(paths: Sequence[str], what: str = "--llm-baseline") -> Baseline:
    """The summaries of `paths` with their histograms pooled."""
    summaries = tuple(read_summary(p, what) for p in paths)
    return Baseline(summaries, pool(summaries), tuple(paths))


def read_summary(path: str, what: str = "--llm-baseline") -> dict[str, Any]:
    """One summary file, checked: a mapping with rows and a total that holds histograms."""
    data = read_json(path, f"{what} {path}")
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list) or not isinstance(data.get("total"), dict):
        why = "not a loadlib run summary (no 'rows' and 'total'); write one with --llm-summary"
        raise ConfigError(f"{what} {path}: {why}")
    if not has_histograms(data):
        raise ConfigError(
            f"{what} {path}: the summary holds no histograms (written by an older loadlib); run the baseline again "
            "with --llm-summary to get one that does"
        )
    return data


def read_json(path: str, label: str, error: type[Exception] = ConfigError) -> Any:
    """A summary file's JSON, or `error` with one line that starts with `label` (the file, or the option and it)."""
    p = Path(path)
    if not p.exists():
        raise error(f"{label}: file not found")
    if not p.is_file():
        raise error(f"{label}: not a file; pass a summary JSON written by --llm-summary")
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise error(f"{label}: not UTF-8 text; pass a summary JSON written by --llm-summary") from None
    except json.JSONDecodeError as exc:
        raise error(f"{label}: not JSON ({exc.msg} at line {exc.lineno}); is it a summary?") from None
    except OSError as exc:
        raise error(f"{label}: cannot read it ({exc.strerror})") from None
