"""Thresholds and the run's verdict as a node part: on the master (or local runner) the thresholds given with
--llm-threshold / --llm-thresholds-file are evaluated over the merged summary, last of all parts, and the verdict
(docs/outputs.md, "Exit codes") joins the summary, the console and the web UI. Workers hold nothing here."""

from __future__ import annotations

from typing import Any

from loadlib.locust.parts import Node, NodePart
from loadlib.verdicts import verdict as verdicts
from loadlib.verdicts.evaluate import evaluate
from loadlib.verdicts.thresholds import Threshold, load_file, parse_all


def thresholds_from_options(options: Any) -> list[Threshold]:
    """Every threshold of the run; ConfigError (one line) on the first that does not parse."""
    written = [t for t in str(getattr(options, "llm_threshold", "") or "").split(";") if t.strip()]
    found = parse_all(written)
    path = str(getattr(options, "llm_thresholds_file", "") or "")
    return found + (load_file(path) if path else [])


class VerdictPart(NodePart):
    def __init__(self) -> None:
        self.thresholds: list[Threshold] = []

    def start(self, ctx: Node) -> None:
        if not ctx.is_worker:
            self.thresholds = thresholds_from_options(ctx.options)

    def summarize(self, summary: dict[str, Any]) -> None:
        results = evaluate(self.thresholds, summary)
        outcome = verdicts.verdict(results, summary)
        if results:
            summary["thresholds"] = results
        if outcome is not None:
            summary["verdict"] = outcome

    def lines(self, summary: dict[str, Any]) -> list[str]:
        return verdicts.lines(summary.get("thresholds") or [], summary.get("verdict"))
