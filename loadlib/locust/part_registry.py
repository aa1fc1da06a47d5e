"""Which node parts each run context has, and in which order: every part is registered by name with an order number.

The run context (loadlib.locust.context) makes its parts from this registry, lowest order first, and drives them in
that order: a part that reads another's figures (the verdicts judge what every other part summarized) comes after it.
A new output or sink is one registration, made when its module is imported (a locustfile imports it), before Locust's
`init` creates the run context (docs/extending.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from loadlib.locust.parts import NodePart

PartMaker = Callable[[Any], NodePart | Sequence[NodePart]]


@dataclass(frozen=True, slots=True)
class PartEntry:
    """`make(ctx)` gives the part (or several, as a scenario's own parts) for one run context; parts made earlier
    are found with `ctx.named(name)`."""

    name: str
    order: int
    make: PartMaker


_ENTRIES: dict[str, PartEntry] = {}


def register_part(name: str, order: int, make: PartMaker) -> None:
    """Add (or replace) the part `name`; `order` places it among the others (see `ORDERS` of the context)."""
    _ENTRIES[name] = PartEntry(name, order, make)


def unregister_part(name: str) -> None:
    """Forget the part `name` (a test's toy part)."""
    _ENTRIES.pop(name, None)


def entries() -> list[PartEntry]:
    """The registered parts, lowest order first (names break ties, so the order never depends on import order)."""
    return sorted(_ENTRIES.values(), key=lambda e: (e.order, e.name))


def make_parts(ctx: Any, by_name: dict[str, NodePart]) -> list[NodePart]:
    """Every registered part for `ctx`, in order; `by_name` gets each as it is made (a maker that gives several
    is known by its first), so a later maker finds an earlier part."""
    parts: list[NodePart] = []
    for entry in entries():
        made = entry.make(ctx)
        some = list(made) if isinstance(made, Sequence) else [made]
        if some:
            by_name[entry.name] = some[0]
        parts += some
    return parts
