"""docs/comparison.md's own keyless example, run for real: its pool of three embedded mocks (fast and dear, in between,
slow and cheap) measured side by side under one load, then its `python -m loadlib compare` command. What the command
prints must be what the docs show (figures masked: they vary from run to run), the two variants the prose names must
print what it quotes, and the HTML page is opened in Chromium and kept as test-artifacts/compare.png (git-ignored)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.locust_runs import ROOT, env, headless, load, locust_cmd, run
from tests.support.doc_commands import doc_commands, fenced_blocks, yaml_after

pytestmark = pytest.mark.integration

DOC = ROOT / "docs" / "comparison.md"
POOL_PHRASE = "Try it without keys on three embedded mocks"
OUTPUT_PHRASE = "With this pool file the two commands above end"
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"
BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
STRICT = (
    "No recommendation: middle passes every known bar, but its context is unknown, and unknown is never a pass; "
    "add --recommend-known to recommend on the known bars"
)


@dataclass(frozen=True)
class Example:
    """The docs' example after its run: the directory holding pool.yaml and pool-run.json, and the compare argv."""

    where: Path
    compare: list[str]


def masked(text: str) -> list[str]:
    """Lines with every number replaced: the words and their order are what the docs promise, not the figures."""
    return [re.sub(r"\d+(?:[.,]\d+)*", "N", line).rstrip() for line in text.strip().splitlines()]


def docs_output() -> str:
    """The ```text block after OUTPUT_PHRASE: what the docs say `compare` prints."""
    text = DOC.read_text()
    line = text[: text.index(OUTPUT_PHRASE)].count("\n") + 1
    return "\n".join(next(b for b in fenced_blocks(text) if b.lang == "text" and b.first_line > line).lines)


def docs_compare() -> list[str]:
    """The docs' `python -m loadlib compare ... --recommend-known` command, for this interpreter."""
    commands = doc_commands(DOC.read_text(), "docs/comparison.md")
    found = [c for c in commands if c.argv[3:4] == ("compare",) and "--recommend-known" in c.argv]
    assert len(found) == 1, f"docs/comparison.md holds {len(found)} compare --recommend-known commands"
    return [sys.executable, *found[0].argv[1:]]


def compare(example: Example, *args: str, drop: str = "") -> subprocess.CompletedProcess:
    """The docs' compare command (without `drop`, with `args`) in the example's directory, as a reader runs it."""
    argv = [a for a in example.compare if a != drop] + list(args)
    return subprocess.run(argv, cwd=example.where, env=env(), capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Example]:
    """The docs' pool run once (6 users, 5 s: enough requests for each endpoint's p95)."""
    where = tmp_path_factory.mktemp("compare")
    pool = yaml_after(DOC.read_text(), POOL_PHRASE)
    assert pool is not None, f"docs/comparison.md no longer gives the pool after {POOL_PHRASE!r}"
    (where / "pool.yaml").write_text(pool)
    args = ["--llm-pool", str(where / "pool.yaml"), "--llm-summary", str(where / "pool-run.json")]
    proc = run(locust_cmd(*headless(6, 5), *args), timeout=90)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = load(where / "pool-run.json")["rows"]
    assert {r["endpoint"] for r in rows} == {"fast", "middle", "slow"}, "the weighted policy spreads over all three"
    yield Example(where, docs_compare())


def test_the_docs_compare_command_prints_what_the_docs_show_and_exits_0(example: Example) -> None:
    done = compare(example)
    assert done.returncode == 0, done.stdout + done.stderr
    assert masked(done.stdout) == masked(docs_output()), done.stdout
    text = (example.where / "cmp.md").read_text()
    assert "**Recommended on the known bars only: middle," in text
    assert "- fast: fails cost:" in text and "- slow: fails latency: TTFT p95" in text
    assert "prices from the pool file's entry for this endpoint" in text
    page = (example.where / "cmp.html").read_text()
    assert "<svg" in page and "<script" not in page.lower()


def test_without_the_option_or_without_the_bar_it_prints_what_the_prose_quotes(example: Example) -> None:
    prose = " ".join(DOC.read_text().split())
    strict = compare(example, drop="--recommend-known")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    lines = strict.stdout.splitlines()
    assert lines[0] == STRICT and " ".join(STRICT.split()) in prose
    assert lines[1] == docs_output().splitlines()[1], "the same context sentence"
    off = compare(example, "--min-context", "off", drop="--recommend-known")
    assert off.returncode == 0, off.stdout + off.stderr
    first = off.stdout.splitlines()[0]
    assert first.startswith("Recommended: middle, the only endpoint that passes every bar ("), first
    assert "Recommended: middle, the only endpoint that passes every bar (...)" in prose
    assert off.stdout.splitlines()[1] == "Pareto front (TTFT p95 against blended $ per 1K tokens): fast, middle, slow"


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian chromium not installed (scripts/test.sh installs it)")
def test_the_html_page_renders_in_chromium_with_no_request_beyond_itself(example: Example) -> None:
    from playwright.sync_api import sync_playwright

    assert compare(example).returncode == 0
    page_file = example.where / "cmp.html"
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            requested: list[str] = []
            page.on("request", lambda r: requested.append(r.url))
            page.goto(page_file.as_uri())
            assert page.locator("svg").first.bounding_box()["width"] > 400
            assert "Recommended on the known bars only: middle" in page.inner_text("body")
            page.screenshot(path=str(ARTIFACTS / "compare.png"), full_page=True)
        finally:
            browser.close()
    assert requested == [page_file.as_uri()], "a self-contained page: no script, font or image fetched"
