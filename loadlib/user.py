"""Deprecated: the user class moved to `loadlib.locust.user`; import it from `loadlib` (`from loadlib import LLMUser`).

This module keeps the old `loadlib.user` names working, each with a DeprecationWarning naming its new path, for one
release (CHANGELOG.md, 0.2.0); the next release removes it.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

# old name -> (new path, module it lives in)
_MOVED = {
    "LLMUser": ("loadlib", "loadlib.locust.user"),
    "Reply": ("loadlib", "loadlib.locust.user"),
    "Check": ("loadlib", "loadlib.locust.user"),
    "LLMRequestError": ("loadlib.locust.user", "loadlib.locust.user"),
}
__all__ = list(_MOVED)


def __getattr__(name: str) -> Any:
    """The moved name, with a warning that points at the line importing it."""
    if name not in _MOVED:
        raise AttributeError(f"module 'loadlib.user' has no attribute {name!r}")
    new, module = _MOVED[name]
    warnings.warn(
        f"loadlib.user.{name} is deprecated and goes away in the next release: use `from {new} import {name}`",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(module), name)
