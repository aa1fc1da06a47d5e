"""`python -m loadlib compare A B ... [-o cmp.html] [--markdown cmp.md] [bars]`: which endpoint to pick; with
`--baseline A.json B.json` instead: is B slower than A (loadlib.reports.compare_baseline, docs/baseline.md)?

Reads run summaries (--llm-summary), treats every endpoint in them as a candidate, and writes the side-by-side
comparison, the latency–cost chart with its Pareto front and the verdict against the bars (docs/comparison.md).
Exit codes: 0 an endpoint is recommended (on every bar, or with --recommend-known on the bars that are known), 1 none
is, 2 bad input (one line on stderr, no traceback). Against a baseline: 0 no regression, 1 a regression, 2 bad input,
3 nothing could be judged (too few requests on a side, or no row both have: as a run's `invalid`).
This module is the edge: argument parsing, reading and writing files, printing; the rest is pure."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from loadlib.errors import ConfigError
from loadlib.reports import compare_baseline as baseline
from loadlib.reports.compare import LATENCIES, Bars, Verdict, assess, decide
from loadlib.reports.compare_load import CompareInputError, candidates, read_summary, unique_names
from loadlib.reports.compare_prices import load_pool, load_table, priced
from loadlib.reports.compare_render import front_text, html_report, markdown_report, verdict_lines
from loadlib.verdicts.baseline_file import load_baseline

DEFAULTS = Bars()
NOT_JUDGED_EXIT = 3  # as a run whose thresholds could not be judged (docs/outputs.md, "Exit codes")
OFF = ("off", "none")


class _UsageError(Exception):
    """A bad option: argparse's message, kept to one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{message} (see python -m loadlib compare --help)")


def compare_main(argv: Sequence[str]) -> int:
    """Run the comparison. Exit code: 0 an endpoint is recommended (the headline says on which bars), 1 none is,
    2 bad input."""
    try:
        args = _parser().parse_args(list(argv))
        if args.baseline:
            return _against_baseline(args)
        verdict, table_label = _verdict(args)
        _write(args, verdict, table_label)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except (_UsageError, CompareInputError, ConfigError) as exc:
        sys.stderr.write(f"compare: {_one_line(str(exc))}\n")
        return 2
    except OSError as exc:
        sys.stderr.write(f"compare: cannot write {exc.filename}: {exc.strerror}\n")
        return 2
    return 0 if verdict.recommended else 1


def _against_baseline(args: argparse.Namespace) -> int:
    """The regression table on stdout (and as Markdown to --markdown): 0 without a regression, 1 with one, 3 when
    no comparison could be judged."""
    what = "compare"
    base, cand = load_baseline(args.baseline, what), load_baseline(args.summaries, what)
    table = baseline.build(
        base.pooled,
        cand.pooled,
        _names(args.metrics, "--metrics", baseline.METRICS),
        _percentiles(args.percentiles),
        _share(args.tolerance, "--tolerance", 1.0),
        _share(args.false_alarm, "--false-alarm", 0.5, positive=True),
    )
    table.notes.extend(baseline.saturated([*base.summaries, *cand.summaries], [*base.files, *cand.files]))
    labels = _label(base.files, base.pooled), _label(cand.files, cand.pooled)
    if args.markdown:
        Path(args.markdown).write_text(baseline.markdown(table, *labels), encoding="utf-8")
    sys.stdout.write(baseline.text(table, *labels))
    if not table.judged:
        return NOT_JUDGED_EXIT
    return 1 if table.regressed else 0


def _label(files: Sequence[str], pooled: baseline.Pooled) -> str:
    n = pooled.get(baseline.TOTAL_ROW, {}).get("e2e")
    runs = f"{len(files)} runs pooled: " if len(files) > 1 else ""
    return f"{runs}{', '.join(files)}" + (f" ({n.count:,} requests)" if n is not None else "")


def _names(text: str, flag: str, valid: Sequence[str]) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in valid]
    if bad or not names:
        raise _UsageError(f"{flag}: unknown {bad[0]!r}; valid: {', '.join(valid)}" if bad else f"{flag} is empty")
    return names


def _percentiles(text: str) -> list[str]:
    out = []
    for p in (x.strip() for x in text.split(",") if x.strip()):
        try:
            ok = p.startswith("p") and 0 < float(p[1:]) < 100
        except ValueError:
            ok = False
        if not ok:
            raise _UsageError(f"--percentiles: {p!r} is no percentile; write e.g. p50,p95,p99")
        out.append(p)
    if not out:
        raise _UsageError("--percentiles is empty; write e.g. p50,p95,p99")
    return out


def _share(text: str, flag: str, upper: float, positive: bool = False) -> float:
    """A percentage such as '5%' (or a bare fraction such as 0.05) as a fraction."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise _UsageError(f"{flag} must be a percentage such as 5%, got {text!r}") from None
    if not (value > 0 if positive else value >= 0) or value >= upper or value != value:
        raise _UsageError(f"{flag} must be {'above' if positive else 'at least'} 0 and under {upper * 100:g}%")
    return value


def _verdict(args: argparse.Namespace) -> tuple[Verdict, str]:
    bars = _bars(args)
    found = unique_names(m for path in args.summaries for m in candidates(read_summary(path), path))
    table = load_table(args.price_table)
    pool = load_pool(args.pool)
    pairs = [priced(m, table, pool, args.pool or "") for m in found]
    return decide(assess(pairs, bars), bars, args.recommend_known), table.source


def _write(args: argparse.Namespace, v: Verdict, table_label: str) -> None:
    """The files asked for, then the verdict on stdout; without -o or --markdown, the Markdown goes to stdout."""
    if not args.output and not args.markdown:
        sys.stdout.write(markdown_report(v, table_label))
        return
    if args.output:
        Path(args.output).write_text(html_report(v, table_label), encoding="utf-8")
    if args.markdown:
        Path(args.markdown).write_text(markdown_report(v, table_label), encoding="utf-8")
    written = ", ".join(p for p in (args.output, args.markdown) if p)
    lines = [*verdict_lines(v), front_text(v), f"written: {written}"]
    sys.stdout.write("".join(f"{line}\n" for line in lines))


def _bars(args: argparse.Namespace) -> Bars:
    context = _bar(args.min_context, "--min-context", int)
    return Bars(
        max_latency_ms=_bar(args.max_p95_ms, "--max-p95-ms", float),
        max_usd_per_1k=_bar(args.max_usd_per_1k, "--max-usd-per-1k", float),
        min_context=int(context) if context else None,
        max_error_rate=_bar(args.max_error_rate, "--max-error-rate", float, upper=1.0),
        latency=args.latency,
    )


def _bar(text: str, flag: str, kind: type, upper: float | None = None) -> float | None:
    """A bar's value, or None when switched off ("off")."""
    if text.strip().lower() in OFF:
        return None
    try:
        value = kind(text)
    except ValueError:
        raise _UsageError(f"{flag} must be a number or 'off', got {text!r}") from None
    if value < 0 or value != value or (upper is not None and value > upper):
        limit = f" between 0 and {upper:g}" if upper is not None else " of 0 or more"
        raise _UsageError(f"{flag} must be a number{limit}, or 'off'; got {text!r}")
    return value


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m loadlib compare",
        description="Compare endpoints measured by loadlib runs: a side-by-side table, the latency-cost Pareto front "
        "and a verdict against selection bars (docs/comparison.md). Exit 0: an endpoint is recommended; 1: none "
        "is; 2: bad input.",
    )
    p.add_argument("summaries", nargs="+", metavar="SUMMARY", help="run summary JSON files (--llm-summary)")
    p.add_argument(
        "--baseline",
        action="append",
        metavar="SUMMARY",
        help="compare the SUMMARYs (pooled) against this baseline run instead (repeat to pool its repeats): a table "
        "of regressed / improved / no significant change per row, metric and percentile with both intervals; exit "
        "1 on a regression, 3 when nothing could be judged (docs/baseline.md)",
    )
    p.add_argument("--tolerance", default="0%", help="with --baseline: a change within it is none (default 0%%)")
    p.add_argument("--false-alarm", default="5%", help="with --baseline: the table's false-alarm budget (5%%)")
    p.add_argument("--percentiles", default=",".join(baseline.DEFAULT_PERCENTILES), help="with --baseline")
    p.add_argument(
        "--metrics",
        default=",".join(baseline.DEFAULT_METRICS),
        help=f"with --baseline, of {', '.join(baseline.METRICS)} (itl's gaps are not independent samples)",
    )
    p.add_argument("-o", "--output", metavar="HTML", help="write the HTML report (with the chart) here")
    p.add_argument("--markdown", metavar="MD", help="write the Markdown report here")
    off = "(default %(default)s; 'off' drops the bar)"
    lat, usd = f"{DEFAULTS.max_latency_ms:g}", f"{DEFAULTS.max_usd_per_1k:g}"
    p.add_argument("--max-p95-ms", metavar="MS", default=lat, help=f"latency bar: p95 under this {off}")
    p.add_argument("--max-usd-per-1k", metavar="USD", default=usd, help=f"cost bar: blended $ per 1K tokens {off}")
    p.add_argument("--min-context", metavar="TOKENS", default=str(DEFAULTS.min_context), help=f"context bar {off}")
    p.add_argument("--max-error-rate", metavar="FRACTION", default="off", help=f"error bar, e.g. 0.01 {off}")
    p.add_argument("--latency", choices=LATENCIES, default=DEFAULTS.latency, help="the p95 the bar and chart use")
    p.add_argument(
        "--recommend-known",
        action="store_true",
        help="when no endpoint passes every bar, recommend the cheapest that fails none of the bars that are known "
        "(labelled 'on the known bars only'; an unknown bar is still never a pass) and exit 0",
    )
    p.add_argument("--price-table", metavar="YAML", help="the price table the runs used (default: the bundled one)")
    p.add_argument("--pool", metavar="YAML", help="the pool file the run used: each endpoint's model and prices")
    return p
