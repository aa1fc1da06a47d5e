"""Deprecated: the user class moved to `loadlib.locust.user`; import it from `loadlib` (`from loadlib import LLMUser`).

This module keeps the old `loadlib.user` names working, each with a DeprecationWarning naming its new path, for one
release (CHANGELOG.md, 0.2.0); the next release removes it.
"""

from __future__ import annotations

from typing import Any

from loadlib.moved import moved

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
    return moved(__name__, name, _MOVED)
