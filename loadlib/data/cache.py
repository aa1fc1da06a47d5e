"""Generated data sets on disk: each is built (and token-counted) once per machine, then read back as JSONL.

The row builders (`support_chat`, `long_document`, `compliance` in this package) return plain rows in the JSONL
format of `loadlib.data.jsonl`, token counts included; cache files are keyed by the format version, the seed and the
parameters.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from loadlib.data.jsonl import write_jsonl

FORMAT_VERSION = 1


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/loadlib/data`, else `~/.cache/loadlib/data`."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "loadlib" / "data"


def cache_path(cache_dir: Path, kind: str, params: dict[str, Any]) -> Path:
    """`<dir>/<kind>-<hash of version, seed and parameters>.jsonl`."""
    key = orjson.dumps({"v": FORMAT_VERSION, "kind": kind, **params}, option=orjson.OPT_SORT_KEYS)
    return cache_dir / f"{kind}-{hashlib.sha256(key).hexdigest()[:16]}.jsonl"


def cached(
    kind: str, params: dict[str, Any], build: Callable[[], list[dict[str, Any]]], cache_dir: Path | None
) -> Path:
    """The cache file of this data set, generated (and counted) only when it is not there yet."""
    path = cache_path(cache_dir or default_cache_dir(), kind, params)
    if not path.exists():
        write_jsonl(path, build())
    return path
