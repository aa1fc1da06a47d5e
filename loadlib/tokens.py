"""Deprecated: the token counters moved to `loadlib.records.tokens`; import `count_text` and `count_chat` from
`loadlib`.

This module keeps the old `loadlib.tokens` names working (the shipped `locustfiles/chat.py` imported the module
before 0.1.0), each with a DeprecationWarning naming its new path, for one release (CHANGELOG.md, 0.2.0).
"""

from __future__ import annotations

from typing import Any

from loadlib.moved import moved

_HERE = "loadlib.records.tokens"
# old name -> (new path, module it lives in): the counters are public, the rest private by convention
_MOVED = {
    "count_text": ("loadlib", _HERE),
    "count_chat": ("loadlib", _HERE),
    **{name: (_HERE, _HERE) for name in ("get_encoding", "encoding_name_for", "install_offline_encodings")},
    **{name: (_HERE, _HERE) for name in ("BUNDLED", "TOKENS_PER_MESSAGE", "TOKENS_PER_NAME", "REPLY_PRIMING")},
}
__all__ = list(_MOVED)


def __getattr__(name: str) -> Any:
    """The moved name, with a warning that points at the line importing it."""
    return moved(__name__, name, _MOVED)
