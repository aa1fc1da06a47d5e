"""`python -m loadlib compare`: the files it writes (HTML with the chart and no script, Markdown with the tables), its
exit codes (0 recommended, 1 none, 2 bad input) and one clear line on stderr for every bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loadlib.reports.compare_cli import compare_main
from tests.unit.reports.test_compare import BIG, THREE, pool_summary, row, summary, three_summaries


def write(path: Path, data: Any) -> str:
    path.write_text(json.dumps(data))
    return str(path)


def three_files(tmp_path: Path, **kw: Any) -> list[str]:
    return [write(tmp_path / name, s) for s, name in three_summaries(**kw)]


def test_three_summaries_write_html_and_markdown_and_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out, md = tmp_path / "cmp.html", tmp_path / "cmp.md"
    code = compare_main([*three_files(tmp_path), "-o", str(out), "--markdown", str(md)])
    printed = capsys.readouterr().out
    assert code == 0
    assert printed.splitlines()[0].startswith("Recommended: middle, the only endpoint that passes every bar")
    page = out.read_text()
    assert "<svg" in page and "<script" not in page.lower()
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert all(name in svg for name in THREE)  # the points are labelled in the chart itself
    assert "Pareto front (TTFT p95 against blended $ per 1K tokens): fast, middle, slow" in page
    text = md.read_text()
    assert "| endpoint | latency | cost | context | passes every bar |" in text
    assert "| fast | run-fast | 100 | 50.0 ms | 100 ms | 400 ms | 10.0 ms | 500.0 | 0.00 % | none |" in text
    assert "**Recommended: middle, the only endpoint" in text


def test_nothing_passes_every_bar_exits_1_and_says_who_fails_what(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    md = tmp_path / "cmp.md"
    code = compare_main([*three_files(tmp_path), "--markdown", str(md), "--max-usd-per-1k", "0.0004"])
    assert code == 1
    assert capsys.readouterr().out.startswith("No recommendation: no endpoint passes every bar")
    text = md.read_text()
    assert "- middle: fails cost: $0.001 > $0.0004 per 1K tokens" in text
    assert "- slow: fails latency: TTFT p95 600 ms >= 380 ms; fails cost: $0.0005 > $0.0004 per 1K tokens" in text


def test_a_pool_summary_with_its_pool_file_names_models_and_prices(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    pool = tmp_path / "pool.yaml"
    pool.write_text(
        "policy: weighted\nendpoints:\n"
        "  - {name: fast, mock: {}, model: fast-model, prices: {input: 2.0, output: 4.33333}}\n"
        "  - {name: middle, mock: {}, model: mock-llm}\n"
        "  - {name: slow, mock: {}, model: not-priced}\n"
    )
    s = write(tmp_path / "pool.json", pool_summary())
    code = compare_main([s, "--pool", str(pool), "--min-context", "off"])
    text = capsys.readouterr().out  # without -o or --markdown the Markdown goes to stdout
    assert code == 0
    assert "| fast | fast-model | $0.002 | $0.00433 | $0.003 |" in text
    assert f"prices from the pool file's entry for this endpoint ({pool}; undated)" in text
    assert "| middle | mock-llm | $0.001 | $0.002 | $0.001 |" in text and "prices as of 20" in text
    assert "the run's own cost, price not named: model 'not-priced' is not in the price table" in text


def test_unknown_context_exits_1_and_recommend_known_exits_0_labelled(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    files, md = three_files(tmp_path, probe=None), tmp_path / "cmp.md"
    assert compare_main([*files, "--markdown", str(md)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("No recommendation: middle passes every known bar, but its context is unknown")
    assert lines[1].startswith("Context is unknown for all three endpoints: measure it with the long-document probe")
    assert lines[2].startswith("Pareto front")
    assert compare_main([*files, "--markdown", str(md), "--recommend-known"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "Recommended on the known bars only: middle, the only endpoint that passes every known bar "
        "($0.001 per 1K tokens), on the Pareto front"
    )
    assert lines[1].startswith("Context is unknown for all three endpoints")
    text = md.read_text()
    assert "**Recommended on the known bars only: middle," in text and "\n\nContext is unknown for all three" in text
    assert "| middle | pass: TTFT p95 250 ms < 380 ms |" in text
    assert "| unknown: no long-document probe in its run | unknown |" in text  # middle: fails none, so not "no"
    assert "| unknown: no long-document probe in its run | no |" in text  # fast fails cost


def test_the_bars_can_be_switched_off(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    files = three_files(tmp_path, probe=None)
    assert compare_main(files) == 1  # context unknown everywhere
    assert compare_main([*files, "--min-context", "off"]) == 0
    args = ["--min-context", "0", "--max-p95-ms", "off", "--max-usd-per-1k", "off"]
    assert compare_main([*files, *args]) == 0
    assert "Recommended: slow, the cheapest of the 3" in capsys.readouterr().out


def bad_inputs(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    good = write(tmp_path / "good.json", summary(row("a", 100.0, 0.1), probe=BIG))
    bad_table = tmp_path / "prices.yaml"
    bad_table.write_text("as_of: last week\nmodels: {}\n")
    (tmp_path / "text.json").write_text("locust said hello\n")
    return {
        "missing": ([str(tmp_path / "nope.json")], "nope.json: file not found"),
        "directory": ([str(tmp_path)], "not a file"),
        "not-json": ([str(tmp_path / "text.json")], "text.json: not JSON (Expecting value at line 1)"),
        "records": ([write(tmp_path / "r.json", [{"status": "ok"}])], "not a loadlib run summary"),
        "no-rows": ([write(tmp_path / "e.json", summary())], "the summary has no rows"),
        "bad-row": ([write(tmp_path / "b.json", {"meta": {}, "rows": [{"x": 1}]})], "rows[0] is not a summary row"),
        "bar": ([good, "--max-p95-ms", "fast"], "--max-p95-ms must be a number or 'off', got 'fast'"),
        "negative": ([good, "--max-usd-per-1k", "-1"], "--max-usd-per-1k must be a number of 0 or more"),
        "error-rate": ([good, "--max-error-rate", "5"], "--max-error-rate must be a number between 0 and 1"),
        "latency": ([good, "--latency", "tpot"], "argument --latency: invalid choice: 'tpot'"),
        "no-input": ([], "the following arguments are required: SUMMARY"),
        "price-table": ([good, "--price-table", str(bad_table)], "'as_of' must be the date the prices were checked"),
        "pool": ([good, "--pool", str(tmp_path / "no-pool.yaml")], "no such file; pass --pool the pool YAML file"),
        "unwritable": ([good, "-o", str(tmp_path / "no" / "dir" / "cmp.html")], "cannot write"),
    }


BAD = ("missing", "directory", "not-json", "records", "no-rows", "bad-row", "bar", "negative", "error-rate")
BAD += ("latency", "no-input", "price-table", "pool", "unwritable")


@pytest.mark.parametrize("kind", BAD)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture, kind: str) -> None:
    argv, expected = bad_inputs(tmp_path)[kind]
    assert compare_main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("compare: "), err
    assert expected in err
    assert "Traceback" not in err


def test_help_exits_0(capsys: pytest.CaptureFixture) -> None:
    assert compare_main(["--help"]) == 0
    assert "--max-p95-ms MS" in capsys.readouterr().out


def test_each_p95_is_shown_with_its_interval_from_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from loadlib.metrics.stats import LLMStats
    from loadlib.metrics.summary import build_summary, with_interval
    from tests.support.records import make_record

    files, shown = [], []
    for endpoint, base in (("quick", 100.0), ("steady", 200.0)):
        stats = LLMStats()
        for i in range(200):
            stats.add(make_record(endpoint=endpoint, ttft_ms=base + i % 50, e2e_ms=2 * base + i % 70))
        s = build_summary(stats, 10.0, None, {"run_id": endpoint})
        files.append(write(tmp_path / f"{endpoint}.json", s))
        shown += [with_interval(s["rows"][0]["latency_ms"][m], "p95") for m in ("ttft", "e2e")]
    assert compare_main([*files, "--min-context", "off", "--max-usd-per-1k", "off"]) in (0, 1)
    text = capsys.readouterr().out
    for cell in shown:  # e.g. "148 [146–149]": the p95 and its interval as the console shows them
        p95, interval = cell.split(" ", 1)
        assert f"{p95} ms {interval}" in text, (cell, text)
