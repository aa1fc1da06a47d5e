"""This checkout, for a unit test that starts a child Python: the repository root and an environment whose path
finds this checkout's loadlib first (not an installed copy)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
