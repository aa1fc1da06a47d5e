"""The HTML both reports share: one self-contained page (inline CSS, inline SVG plots, no script, no network).

Pure string building with every value escaped; matplotlib figures (built as `Figure` objects, never through pyplot,
so no display or GUI backend is involved) become inline SVG through `svg()`. matplotlib is imported there only: the
web UI's scenario tables use this module inside a Locust process that draws no figure."""

from __future__ import annotations

import html
import io
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

STYLE = """
body{margin:0;font:14px Roboto,"DejaVu Sans",Arial,sans-serif;color:#212121;background:#fafafa}
header{background:#178038;color:#fff;padding:14px 28px}header h1{margin:0;font-size:20px;font-weight:500}
header p{margin:4px 0 0;color:#c8e6c9}main{padding:8px 28px 40px;max-width:1280px}
h2{font-size:17px;font-weight:500;margin:28px 0 8px}figure{margin:12px 0;background:#fff;border:1px solid #e0e0e0;
padding:8px}figcaption{color:#424242;margin-top:4px}table{border-collapse:collapse;background:#fff;
border:1px solid #e0e0e0;margin:8px 0}th,td{text-align:left;padding:5px 9px;border-bottom:1px solid #eee}
th{color:#616161;font-weight:500}td.num{text-align:right;font-variant-numeric:tabular-nums}.pass{color:#178038}
.fail{color:#c62828}.muted{color:#757575}svg{max-width:100%;height:auto}
"""


# matplotlib's RDF block names purl.org, creativecommons.org and the build date: none of it, so a page names no URL
# but SVG's namespaces and the same figure gives the same bytes.
_NO_METADATA = {"Creator": None, "Date": None, "Format": None, "Type": None}


def esc(value: Any) -> str:
    return html.escape("-" if value is None else str(value), quote=True)


def page(title: str, subtitle: str, sections: Iterable[str]) -> str:
    """A whole document: header, then the sections in order."""
    body = "\n".join(sections)
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
        f"<style>{STYLE}</style></head><body><header><h1>{esc(title)}</h1><p>{esc(subtitle)}</p></header>"
        f"<main>{body}</main></body></html>\n"
    )


def section(heading: str, *parts: str) -> str:
    return f"<section><h2>{esc(heading)}</h2>{''.join(parts)}</section>"


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[bool] | None = None) -> str:
    """Cells are escaped; `numeric` right-aligns columns. A cell given as ("text", "css-class") gets that class."""
    flags = list(numeric or [False] * len(headers))
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    out = []
    for row in rows:
        cells = []
        for value, is_num in zip(row, flags, strict=True):
            text, cls = value if isinstance(value, tuple) else (value, "")
            classes = " ".join(c for c in ("num" if is_num else "", cls) if c)
            cells.append(f'<td class="{classes}">{esc(text)}</td>' if classes else f"<td>{esc(text)}</td>")
        out.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(out)}</tbody></table>"


def svg(fig: Figure) -> str:
    """The figure as an inline <svg> element (text kept as text, so it stays small and searchable)."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata=_NO_METADATA)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def figure(fig: Figure, caption: str) -> str:
    """A plot with the one-line caption that says what to read from it."""
    return f"<figure>{svg(fig)}<figcaption>{esc(caption)}</figcaption></figure>"
