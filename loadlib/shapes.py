"""Deprecated: the load shapes moved to `loadlib.locust.shapes`; import them from `loadlib`
(`from loadlib import RampShape, StepShape`).

This module keeps the old `loadlib.shapes` names working (the shipped `locustfiles/shapes.py` imported them from
here before 0.1.0), each with a DeprecationWarning naming its new path, for one release (CHANGELOG.md, 0.2.0).
"""

from __future__ import annotations

from typing import Any

from loadlib.moved import moved

# old name -> (new path, module it lives in)
_MOVED = {
    "RampShape": ("loadlib", "loadlib.locust.shapes"),
    "StepShape": ("loadlib", "loadlib.locust.shapes"),
}
__all__ = list(_MOVED)


def __getattr__(name: str) -> Any:
    """The moved name, with a warning that points at the line importing it."""
    return moved(__name__, name, _MOVED)
