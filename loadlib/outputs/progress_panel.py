"""The live progress panel of a headless run on a terminal (docs/outputs.md, "Progress during a run"): the words of
loadlib.outputs.progress in a small box, with a bar when the run has a length (-t).

Drawn with rich, a maintained and widely used terminal library: it redraws in place, follows the terminal's width
and colour support (NO_COLOR, dumb terminals) and prints log lines above the live area, each of which hand-written
escape codes would get wrong. Pure: `panel` returns a renderable and writes nothing. Imported only when a terminal
shows the panel, so workers and piped runs never load rich.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from loadlib.outputs.progress import View, facts, fraction

BAR_WIDTH = 40
WIDTH = 80  # at most: a panel as wide as the terminal (up to this) keeps its box still as figures grow
_GAP = "   "


def style_of(name: str, view: View) -> str:
    """The colour of one fact: red for a lost threshold or a saturated client, yellow for errors, green for what
    holds so far, dim for what is not judged yet."""
    t, c = view.thresholds, view.client.saturated
    if name == "errors":
        return "yellow" if any(view.errors.values()) else "green"
    if name == "thresholds" and t is not None and t.total:
        return "bold red" if t.failing else "green" if not t.pending else ""
    if name == "client":
        return "dim" if c is None else "bold red" if c else "green"
    return ""


def time_row(view: View, text: str) -> RenderableType:
    """The bar and elapsed / -t, or the elapsed time alone when the run has no length."""
    done = fraction(view)
    if done is None:
        return Text(f"elapsed {text} (no -t: until stopped)")
    row = Table.grid(padding=(0, 2))
    row.add_row(ProgressBar(total=1.0, completed=done, width=BAR_WIDTH, complete_style="cyan"), Text(text))
    return row


def fact_row(view: View, known: dict[str, str], names: tuple[str, ...]) -> Text:
    row = Text()
    for i, name in enumerate(names):
        row.append(_GAP if i else "")
        row.append(known[name], style=style_of(name, view))
    return row


def panel(view: View, title: str = "loadlib") -> RenderableType:
    """The whole panel: time, then load, then latency and errors, then what the run will be judged on."""
    known = facts(view)
    body = Group(
        time_row(view, known["time"]),
        fact_row(view, known, ("users", "requests", "tokens")),
        fact_row(view, known, ("ttft", "errors")),
        fact_row(view, known, ("thresholds",)),
        fact_row(view, known, ("client",)),
    )
    subtitle = "finished" if view.done else None
    return Panel(body, title=title, title_align="left", subtitle=subtitle, subtitle_align="left", width=WIDTH)
