"""Threshold files (--llm-thresholds-file, docs/thresholds.md "Threshold files"): YAML, so JSON too.

Three shapes, optionally under a top-level `thresholds:` key:
- a list of expressions: `[ttft p95 < 150ms, error_rate < 1%]`;
- k6's mapping from a metric (with its tags) to expressions without the metric: `ttft: [p95 < 150ms]`;
- in either, k6's per-threshold object in place of an expression: `{threshold: "p95 < 150ms", abortOnFail: true,
  delayAbortEval: "10s"}`, which gives that threshold its own abort-on-fail and delay (loadlib.locust.abort).
Every mistake is one ConfigError line naming the file and the entry.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from loadlib.errors import ConfigError
from loadlib.verdicts.k6 import OBJECT_KEYS, duration_s, key_hint
from loadlib.verdicts.thresholds import Threshold, parse

_EXAMPLE = "{threshold: 'ttft p95 < 1s', abortOnFail: true, delayAbortEval: '10s'}"


def load_file(path: str | Path) -> list[Threshold]:
    """Every threshold of the file, in order (module docstring: the shapes)."""
    label = str(path)
    data = _read_yaml(Path(path), label)
    if isinstance(data, dict) and set(data) == {"thresholds"}:
        data = data["thresholds"]
    if data is None:
        return []
    if isinstance(data, list):
        return [_threshold("", e, f"{label} entry {i}") for i, e in enumerate(data, 1)]
    if isinstance(data, dict):
        return [t for key, entries in data.items() for t in _mapping_entry(label, key, entries)]
    raise ConfigError(f"threshold file {label}: expected a list of expressions or a mapping metric -> list of them")


def _mapping_entry(label: str, key: Any, entries: Any) -> list[Threshold]:
    """k6 style: `ttft: [p95 < 150ms, {threshold: p99 < 300ms, abortOnFail: true}]`, one threshold per item."""
    if not isinstance(key, str):
        raise ConfigError(f"threshold file {label}: key {key!r} is not a metric name")
    items = [entries] if isinstance(entries, str | dict) else entries
    if not isinstance(items, list) or not items:
        raise ConfigError(f"threshold file {label}: {key} needs a list of expressions such as ['p95 < 150ms']")
    return [_threshold(key, e, f"{label} {key}[{i}]") for i, e in enumerate(items, 1)]


def _threshold(metric: str, entry: Any, where: str) -> Threshold:
    """One entry (an expression or k6's object) parsed; `metric` is the mapping's key, "" in a list."""
    text, abort = _object(entry, where) if isinstance(entry, dict) else (_text(entry, where), {})
    return dataclasses.replace(parse(f"{metric} {text}" if metric else text, where), **abort)


def _object(entry: dict[Any, Any], where: str) -> tuple[str, dict[str, Any]]:
    """k6's `{threshold, abortOnFail, delayAbortEval}`: the expression and the Threshold fields it sets."""
    for key in entry:
        if key not in OBJECT_KEYS:
            hint = key_hint(str(key))
            raise ConfigError(
                f"{where}: unknown key {key!r} in a threshold object{f' ({hint})' if hint else ''}; "
                f"valid: {', '.join(OBJECT_KEYS)}"
            )
    if "threshold" not in entry:
        raise ConfigError(f"{where}: a threshold object needs the key 'threshold', e.g. {_EXAMPLE}")
    abort: dict[str, Any] = {}
    if "abortOnFail" in entry:
        abort["abort_on_fail"] = _flag(entry["abortOnFail"], where)
    if "delayAbortEval" in entry:
        abort["abort_delay_s"] = _delay(entry["delayAbortEval"], where)
    return _text(entry["threshold"], where), abort


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: abortOnFail is {value!r}; write true or false")
    return value


def _delay(value: Any, where: str) -> float:
    """k6's delayAbortEval, a duration with its unit; a bare number is refused (k6 reads it as ms, people as s)."""
    seconds = duration_s(value) if isinstance(value, str) else None
    if seconds is None:
        raise ConfigError(
            f"{where}: delayAbortEval {value!r} is not a duration; write it with a unit: '10s', '500ms', '1m30s'"
        )
    return seconds


def _text(e: Any, where: str) -> str:
    if not isinstance(e, str):
        raise ConfigError(f"{where}: {e!r} is not a string; write each threshold as text, e.g. 'ttft p95 < 150ms'")
    return e


def _read_yaml(path: Path, label: str) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"threshold file {label}: file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"threshold file {label}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"threshold file {label}: not valid YAML ({_yaml_problem(exc)})") from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line out of PyYAML's multi-line message."""
    mark = getattr(exc, "problem_mark", None)
    text = " ".join(str(getattr(exc, "problem", None) or str(exc).splitlines()[0]).split())
    return f"line {mark.line + 1}, column {mark.column + 1}: {text}" if mark is not None else text
