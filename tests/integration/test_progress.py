"""The progress display of real headless runs (docs/outputs.md, "Progress during a run"): on a terminal (a
pseudo-terminal) the live panel is redrawn in place and ends before the summary; in a pipe there are periodic lines,
then the summary; Locust's 2 s request table is off unless asked for; a distributed master shows it and its worker
does not. Each run is bounded (-t 4-6 s, the mock as target).

The terminal run is also drawn for people: its bytes are replayed into a screen (the few control sequences rich's
live display uses: erase line, cursor up), exported as SVG by rich and photographed by Chromium into
test-artifacts/progress-terminal.png (git-ignored)."""

from __future__ import annotations

import errno
import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from tests.integration.locust_runs import ROOT, env, free_port, headless, locust_cmd, run

pytestmark = pytest.mark.integration
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"
ROWS, COLS = 40, 110
LOCUST_TABLE = "# fails"  # in the header of Locust's request table, printed every 2 s by its stats printer
MOCK = "--llm-mock", "fault=http_503,fault_rate=0.05,ttft_jitter_ms=15"
THRESHOLDS = "--llm-threshold", "ttft p95 < 1s", "--llm-threshold", "error_rate < 1%"
_TOKEN = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\r|\n|[^\x1b\r\n]+")


def run_in_terminal(args: list[str], timeout: float = 60) -> tuple[int, str]:
    """A real run whose stdin, stdout and stderr are a pseudo-terminal of ROWS x COLS: (exit code, what it showed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    environ = env(TERM="xterm-256color", COLUMNS=str(COLS), LINES=str(ROWS))
    proc = subprocess.Popen(args, cwd=ROOT, env=environ, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError as exc:  # EIO: the child closed the terminal
                    assert exc.errno == errno.EIO, exc
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        return proc.wait(timeout=max(deadline - time.monotonic(), 1)), out.decode("utf-8", "replace")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)


def screen(raw: str) -> str:
    """What a terminal shows after `raw`, for the control sequences rich's live display writes (erase line, cursor
    up, carriage return); colours are kept, the cursor's visibility is dropped. Lines are not wrapped."""
    lines, row = [""], 0
    for token in _TOKEN.findall(raw):
        if token == "\n":
            row += 1
            lines += [""] * (row + 1 - len(lines))
        elif token == "\x1b[1A":
            row = max(row - 1, 0)
        elif token == "\x1b[2K":
            lines[row] = ""
        elif token == "\r" or (token.startswith("\x1b[") and not token.endswith("m")):
            continue
        else:
            lines[row] += token
    return "\n".join(lines)


def svg_of(raw: str, title: str) -> str:
    console = Console(record=True, width=COLS, file=io.StringIO(), force_terminal=True, color_system="truecolor")
    console.print(Text.from_ansi(screen(raw).rstrip("\n")), crop=True, overflow="crop", no_wrap=True)
    return console.export_svg(title=title)


def photograph(svgs: dict[str, str], path: Path) -> None:
    """The SVGs on one page, photographed by Debian's Chromium."""
    from playwright.sync_api import sync_playwright

    body = "".join(f"<h2>{caption}</h2>{svg}" for caption, svg in svgs.items())
    page_html = f"<html><body style='background:#fff;font-family:sans-serif;width:1200px'>{body}</body></html>"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1240, "height": 900})
            page.set_content(page_html)
            page.screenshot(path=str(path), full_page=True)
        finally:
            browser.close()


def frames(raw: str) -> list[str]:
    """Each drawing of the panel, from its top border to its bottom one."""
    return re.findall(r"╭─ loadlib run .*?╰[^╯]*╯", raw, flags=re.S)


def test_terminal_run_draws_the_panel_in_place_and_ends_it_before_the_summary() -> None:
    args = [*headless(4, 5), *MOCK, *THRESHOLDS]
    code, raw = run_in_terminal(locust_cmd(*args))
    assert code == 99, raw[-3000:]  # error_rate < 1% fails against 5 % of 503s
    drawn = frames(raw)
    assert len(drawn) >= 4, raw[-3000:]  # once a second over 5 s, plus the last one
    assert "\x1b[1A\x1b[2K" in raw, "redrawn in place: each refresh moves up over the previous panel"
    last = drawn[-1]
    for fact in ("0:05/0:05 100%", "users 4/4", "out tok/s", "TTFT p50", "errors ", "http_5xx", "FAIL error_rate < 1%"):
        assert fact in last, (fact, last)
    assert "finished" in last and "client OK" in last
    verdict = raw.index("Verdict: FAIL")
    assert raw.rindex("╰") < raw.index("LLM summary of run") < verdict, "the panel ends before the summary"
    assert raw.rindex("\x1b[?25h") < verdict, "the live display is stopped (cursor shown again) before the verdict"
    assert raw.count(LOCUST_TABLE) == 1, "Locust's table only once, at the end: its 2 s printer is off"
    ARTIFACTS.mkdir(exist_ok=True)
    during = raw[: raw.index(drawn[len(drawn) // 2]) + len(drawn[len(drawn) // 2])]
    title = "locust -f locustfiles/chat.py --headless -u 4 -r 4 -t 5s (5 % of 503s, two thresholds)"
    svgs = {"During the run": svg_of(during, title), "At the end": svg_of(raw, title)}
    (ARTIFACTS / "progress-terminal.svg").write_text(svgs["At the end"])
    if CHROMIUM.exists():
        photograph(svgs, ARTIFACTS / "progress-terminal.png")


def progress_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("loadlib progress")]


def test_piped_run_prints_compact_lines_then_the_summary() -> None:
    p = run(locust_cmd(*headless(3, 5), "--llm-progress", "lines:1"), timeout=60)  # 4 lines even when it starts late
    assert p.returncode == 0, p.stderr[-3000:]
    lines = progress_lines(p.stdout)
    assert len(lines) >= 4 and lines[-1].startswith("loadlib progress (end) 0:05/0:05 100%"), p.stdout
    assert all(len(line) < 200 and "\x1b" not in line for line in lines), lines
    assert re.search(r"\| users 3/3 \| \d+ req, [\d.]+/s \| [\d,.]+ out tok/s \| TTFT p50 [\d.]+ p95", lines[-2]), lines
    out = p.stdout
    assert out.index(lines[-1]) < out.index("LLM summary of run") < out.index("Verdict: PASS")
    assert p.stderr.count(LOCUST_TABLE) == 1, "Locust's table only once, at the end"


def test_locust_mode_keeps_locusts_table_and_shows_nothing_of_ours() -> None:
    p = run(locust_cmd(*headless(2, 5), "--llm-progress", "locust"), timeout=60)
    assert p.returncode == 0, p.stderr[-3000:]
    assert not progress_lines(p.stdout)
    assert p.stderr.count(LOCUST_TABLE) >= 3, "Locust's table every 2 s, then at the end"


def test_distributed_master_shows_progress_and_its_worker_does_not(tmp_path) -> None:
    port = free_port()
    bind = ("--master-bind-host", "127.0.0.1", "--master-bind-port", str(port), "--expect-workers", "1")
    cmd = locust_cmd("--master", *bind, *headless(4, 5), "--llm-progress", "lines:1.5")
    worker_out = (tmp_path / "worker.out").open("w")
    worker = subprocess.Popen(
        locust_cmd("--worker", "--master-host", "127.0.0.1", "--master-port", str(port), "--llm-progress", "lines:1"),
        cwd=ROOT,
        env=env(),
        stdout=worker_out,
        stderr=subprocess.STDOUT,
    )
    try:
        master = run(cmd, timeout=90)
        worker.wait(timeout=30)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        worker_out.close()
    assert master.returncode == 0, master.stderr[-3000:]
    lines = progress_lines(master.stdout)
    assert len(lines) >= 3 and any("users 4/4 on 1 worker |" in line for line in lines), master.stdout
    assert master.stdout.index(lines[-1]) < master.stdout.index("Verdict:")
    assert not progress_lines((tmp_path / "worker.out").read_text()), "a worker shows no progress"
