"""Thresholds and the run's verdict as a node part: on the master (or local runner) the thresholds given with
--llm-threshold / --llm-thresholds-file and the SLO defaults of the run's scenarios (unless --scenario-slo off) are
evaluated over the merged summary, last of all parts, and the verdict (docs/outputs.md, "Exit codes") joins the
summary, the console and the web UI. Workers hold nothing here."""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from loadlib.errors import ConfigError, ErrorClass
from loadlib.locust.parts import Node, NodePart
from loadlib.metrics.confidence import DEFAULT_LEVEL
from loadlib.metrics.summary_types import Summary
from loadlib.settings import Options
from loadlib.verdicts import verdict as verdicts
from loadlib.verdicts.baseline_file import load_baseline, split_paths
from loadlib.verdicts.evaluate import Histograms, evaluate, stats_histograms
from loadlib.verdicts.goodput import parse_request_slo
from loadlib.verdicts.relative import Baseline
from loadlib.verdicts.slo import applicable, combine, scenario_defaults
from loadlib.verdicts.thresholds import Threshold, load_file, parse_option


def thresholds_from_options(options: Options, slos: Mapping[str, Sequence[str]] | None = None) -> list[Threshold]:
    """Every threshold of the run: the user's, then the scenario SLO defaults (`slos`: scenario -> expressions) they
    do not restate. ConfigError (one line) on the first that does not parse, and on a baseline threshold without a
    usable --llm-baseline (the file is read here, before any load)."""
    found = parse_option(options.llm_threshold)
    path = str(options.llm_thresholds_file or "")
    user = found + (load_file(path) if path else [])
    _check_goodput(user, options)
    baseline_from_options(options, user)
    if str(options.scenario_slo or "on") == "off":
        return user
    return combine(user, scenario_defaults(slos or {}))


def baseline_from_options(options: Options, thresholds: Sequence[Threshold]) -> Baseline | None:
    """--llm-baseline's summaries, read and pooled; None without the option. A threshold against the baseline
    without one is a ConfigError."""
    paths = split_paths(options.llm_baseline)
    relative = [t for t in thresholds if t.relative is not None]
    if relative and not paths:
        raise ConfigError(
            f"threshold {relative[0].expression!r} compares against a baseline: add --llm-baseline SUMMARY.json, a "
            "summary of the baseline run written with --llm-summary (docs/baseline.md)"
        )
    return load_baseline(paths) if paths else None


def _check_goodput(thresholds: Sequence[Threshold], options: Options) -> None:
    """Goodput counts requests against the per-request SLO: without one there is nothing to count."""
    has_slo = parse_request_slo(options.llm_request_slo) is not None
    for t in thresholds:
        if t.metric == "goodput" and not has_slo:
            raise ConfigError(
                f"threshold {t.expression!r} needs a per-request SLO to count good requests: add "
                "--llm-request-slo, e.g. 'ttft <= 500ms, tpot <= 50ms' (docs/thresholds.md#goodput)"
            )


_REPR = re.compile(r"^\w+\((.*)\)$", re.S)
CLASSES = frozenset(c.value for c in ErrorClass)


def failure_samples(errors: Mapping[str, Any]) -> dict[str, str]:
    """The message Locust's error report holds most often for each error class (`LLMRequestError("http_5xx: ...")`,
    an exception on a local runner, its repr as a string on a master): what the server said, for the verdict's line
    when nothing succeeded. Entries that are not an attempt's failure (a locustfile's exception) are left out."""
    counts: Counter[tuple[str, str]] = Counter()
    for entry in errors.values():
        error_class, _, message = _failure_text(getattr(entry, "error", None)).partition(": ")
        if error_class in CLASSES and message:
            counts[(error_class, message)] += int(getattr(entry, "occurrences", 0) or 0)
    out: dict[str, str] = {}
    for (error_class, message), _ in counts.most_common():
        out.setdefault(error_class, message)
    return out


def _failure_text(error: Any) -> str:
    if not isinstance(error, str):
        return str(error) if isinstance(error, Exception) else ""
    found = _REPR.match(error)
    try:
        inner = ast.literal_eval(found.group(1)) if found else None
    except (ValueError, SyntaxError):
        return ""
    return inner if isinstance(inner, str) else ""


class VerdictPart(NodePart):
    """How the run ended, for its verdict: `aborted` is set by the abort watch (loadlib.locust.abort) when a lost
    threshold stopped the run, `interrupted` at quit when a signal ended a test that was still running, `fatal` (the
    one line) when a run that could only fail was stopped, `not_started` when the workers it waited for never came."""

    def __init__(self, slos: Mapping[str, Sequence[str]] | None = None) -> None:
        self.slos = dict(slos or {})
        self.thresholds: list[Threshold] = []
        self.aborted: dict[str, Any] | None = None
        self.interrupted = False
        self.fatal: str | None = None
        self.not_started: str | None = None
        self.histograms: Histograms | None = None  # percentiles the summary rows do not hold (p90, p99.9)
        self.baseline: Baseline | None = None  # --llm-baseline, for thresholds against it
        self.confidence: float | None = None  # judge percentiles by their interval at this level (--llm-threshold-ci)
        self.level = DEFAULT_LEVEL  # --llm-confidence: thresholds against the baseline share 1 - this
        self.failures: Any = None  # Locust's request statistics: its error report, what servers said

    def start(self, ctx: Node) -> None:
        self.aborted, self.interrupted, self.fatal = None, False, None
        if not ctx.is_worker:
            self.thresholds = thresholds_from_options(ctx.options, self.slos)
            self.baseline = baseline_from_options(ctx.options, self.thresholds)
            self.level = float(ctx.options.llm_confidence)
            self.confidence = self.level if ctx.options.llm_threshold_ci else None
            stats = getattr(getattr(ctx, "stats", None), "stats", None)  # the run context's StatsPart
            self.histograms = stats_histograms(stats) if stats is not None else None
            self.failures = getattr(getattr(ctx, "environment", None), "stats", None)

    def summarize(self, summary: Summary) -> None:
        summary["aborted"] = self.aborted
        summary["interrupted"] = self.interrupted
        summary["fatal"] = self.fatal
        summary["not_started"] = self.not_started
        judged = [] if summary.get("capacity") else applicable(self.thresholds, summary)  # a search judges per step
        results = evaluate(
            judged,
            summary,
            histograms=self.histograms,
            confidence=self.confidence,
            baseline=self.baseline,
            level=self.level,
        )
        outcome = verdicts.verdict(results, summary, self.samples())
        if results:
            summary["thresholds"] = results
        if outcome is not None:
            summary["verdict"] = outcome

    def samples(self) -> dict[str, str]:
        """A server message per error class, from Locust's error report (merged from the workers on a master)."""
        return failure_samples(getattr(self.failures, "errors", None) or {})

    def lines(self, summary: dict[str, Any]) -> list[str]:
        return verdicts.lines(summary.get("thresholds") or [], summary.get("verdict"))
