"""Names whose module moved: the old path keeps working for one release, with a DeprecationWarning naming the new one.

Each old module (`loadlib.user`, `loadlib.shapes`, `loadlib.tokens`: the homes of the user class, the load shapes and
the token counters before 0.1.0's reorganisation) keeps a table of its names and calls `moved` from its module
`__getattr__` (PEP 562), so a name is imported, and warned about, only when a locustfile uses it.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Mapping
from typing import Any


def moved(old: str, name: str, table: Mapping[str, tuple[str, str]]) -> Any:
    """`name` of the old module `old`, from its new home. `table` maps each old name to (the path to import it from
    now, the module it lives in). The warning points at the line of the locustfile that used the old path."""
    if name not in table:
        raise AttributeError(f"module {old!r} has no attribute {name!r}")
    new, module = table[name]
    warnings.warn(
        f"{old}.{name} is deprecated and goes away in the next release: use `from {new} import {name}`",
        DeprecationWarning,
        stacklevel=3,  # moved <- the old module's __getattr__ <- the line importing the name
    )
    return getattr(importlib.import_module(module), name)
