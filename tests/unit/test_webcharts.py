"""The charts page's feed: the cache probe's "what busts the cache" as an HTML table (the report's own, every value
escaped), cell for cell the console's, and the run notes without the text table it replaces."""

from __future__ import annotations

from html.parser import HTMLParser
from types import SimpleNamespace
from typing import Any

from loadlib.locust.webcharts import feed
from loadlib.metrics import cache_probe_results as probe

VARIATIONS = [
    ("none", [], 3, 3, None, 120.5, 0.0031),
    ("temperature", ["temperature"], 3, 0, 0.96, 1.5, 0.0),
    ("<b>odd</b> & name", ["header:x-odd"], 2, 2, None, 118.0, 0.002),
]
PROBE = {
    "rounds": 3,
    "response_cache_source": "header",
    "variations": [
        dict(zip(("name", "changes", "requests", "response_cache_hits", "prompt_cache_hit_share"), v[:5], strict=True))
        | {"answered": v[2], "ttft_saved_ms": v[5], "cost_saved_usd": v[6]}
        for v in VARIATIONS
    ],
    "busts": {"prompt_cache": [], "response_cache": ["temperature"]},
}


class Tables(HTMLParser):
    """Every table's rows as lists of cell texts (header row first), and the paragraphs beside them."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.paras: list[str] = []
        self.cell: list[str] | None = None
        self.para: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = []
        elif tag == "p":
            self.para = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append("".join(self.cell))
            self.cell = None
        elif tag == "p" and self.para is not None:
            self.paras.append("".join(self.para))
            self.para = None

    def handle_data(self, data: str) -> None:
        for part in (self.cell, self.para):
            if part is not None:
                part.append(data)


def feed_of(summary: dict[str, Any], lines: list[str]) -> dict[str, Any]:
    ctx = SimpleNamespace(
        stats=SimpleNamespace(timeline=None),
        summary=lambda: summary,
        options=SimpleNamespace(run_id="r1", llm_grafana_url=""),
        user_count=lambda: 1,
        lines=lambda s: lines,
    )
    return feed(ctx, SimpleNamespace(runner=None))


def test_the_cache_probe_is_a_table_cell_for_cell_the_consoles() -> None:
    printed = ["LLM summary of run r1", "Scenario results", *probe.render(PROBE), "Thresholds:"]
    out = feed_of({"scenarios": {"cache_probe": PROBE}}, printed)
    (html,) = out["tables"]
    parsed = Tables()
    parsed.feed(html)
    (table,) = parsed.tables
    assert table == [probe.TABLE_HEADER, *probe.table_rows(PROBE)]
    assert [row[:3] for row in table[1:]] == [
        ["none", "3", "3 kept"],
        ["temperature", "3", "0 BUSTS"],
        ["<b>odd</b> & name", "2", "2 kept"],
    ]
    assert "<b>odd" not in html and "&lt;b&gt;odd&lt;/b&gt; &amp; name" in html, "names are escaped"
    assert "Busts the response cache: temperature" in parsed.paras
    assert out["lines"] == ["LLM summary of run r1", "Thresholds:"], "the text table is not repeated in the notes"


def test_no_tables_and_every_line_without_scenario_results() -> None:
    printed = ["LLM summary of run r1", "Scenario results", "support_chat: 3 conversations", "Thresholds:"]
    out = feed_of({"scenarios": {"support_chat": {"conversations": 3}}}, printed)
    assert out["tables"] == [] and out["lines"] == printed
