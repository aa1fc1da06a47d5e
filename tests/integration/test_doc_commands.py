"""Every load test the docs show against the embedded mock runs, as written, and exits with the code the docs promise
(issue 21: 0 when nothing is wrong, 10 s runs included).

The commands are read out of README.md and docs/*.md (tests/support/doc_commands.py): each `locust -f ... --headless`
in a shell block that needs no server of the reader's and no key. Each runs as a real process from the repo root
with `-t 10s`, at most 10 users, its output files in a temporary directory, and the environment a reader's shell has
(none of the suite's LLM_* settings: the scenarios' SLO defaults are on, as for the reader). A `python -m loadlib
report|compare` in the same block that reads the run's files runs after it, in that directory; a `--master` run
starts its block's `--worker` command beside it (at most MAX_WORKERS). Commands that are not run are listed as
skipped with the reason. Runs go two at a time (PARALLEL) from a module fixture; the module
prints a table of every command's exit code, verdict line and time at the end.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.doc_commands import (
    Command,
    doc_commands,
    follow_ups,
    is_load_test,
    prepare,
    prepare_master,
    prepare_tool,
    prepare_worker,
    selection,
    workers_for,
    yaml_after,
)

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN_TIME = "10s"
MAX_USERS = 10
TIMEOUT_S = 60.0
PARALLEL = 2
MAX_WORKERS = 2  # a distributed example's workers, capped like its users: a functional run on a 2-core machine
TAIL_LINES = 25

# Commands (runs and the loadlib tools that follow them) whose documented outcome is not 0: (doc, words in the
# command) -> (exit code the docs promise, where they promise it).
EXPECTED_EXIT: dict[tuple[str, str], tuple[int, str]] = {
    ("docs/comparison.md", "compare pool-run.json --pool pool.yaml -o cmp.html --markdown cmp.md --recommend-known"): (
        0,
        "comparison.md 'Try it without keys': middle recommended on the known bars only (context unknown), exit code 0",
    ),
    ("docs/scenarios.md", "json_valid_rate=0.9"): (
        99,
        "scenarios.md: SLOs 'set the exit code (0 when they hold, 99 when one fails'; schema_valid >= 99% at 90% valid",
    ),
}

# Commands the prose makes from a block's command: (doc, words in the base command, the doc's claim, extra args,
# exit code the claim promises, what the output must name).
DERIVED: list[tuple[str, str, str, tuple[str, ...], int, str]] = [
    (
        "README.md",
        "locustfiles/compliance.py",
        "the run then exits 99, naming `schema_valid >= 99%`",
        ("--llm-mock", "json_valid_rate=0.9"),
        99,
        "schema_valid >= 99%",
    ),
]

# Files a doc gives in full that the repo does not hold: (doc, file name) -> phrase on the line before its yaml block.
DOCUMENTED_FILES: dict[tuple[str, str], str] = {
    ("docs/comparison.md", "pool.yaml"): "Try it without keys on three embedded mocks",
}

# The environment a reader's shell would not have: the suite's own settings (conftest turns the SLOs off) and keys.
FOREIGN_ENV_PREFIXES = ("LLM_", "LOCUST_", "INFLUX_")
FOREIGN_ENV_NAMES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


@dataclass(frozen=True)
class Case:
    """One doc command to run (or skip, with the reason) and the exit code the docs promise for it."""

    id: str
    command: Command
    args: tuple[str, ...] = ()
    expected: int = 0
    skip: str | None = None
    tools: tuple[Command, ...] = ()
    says: str = ""
    workers: tuple[Command, int] | None = None


@dataclass
class Outcome:
    """What a case did: the run's exit code and output, then each follow-up tool's."""

    code: int | None
    seconds: float
    output: str
    tools: list[tuple[Command, int | None, str]] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """The run's verdict line (`Verdict: PASS (exit code 0)`), else its last non-empty line."""
        lines = [line.strip() for line in self.output.splitlines() if line.strip()]
        verdicts = [line for line in lines if "Verdict:" in line]
        return (verdicts or lines or ["(no output)"])[-1]


def documented_files(source: str) -> dict[str, str]:
    """The files `source` gives in full (DOCUMENTED_FILES), by name."""
    files = {}
    for (doc, name), phrase in DOCUMENTED_FILES.items():
        text = yaml_after((ROOT / doc).read_text(), phrase) if doc == source else None
        if text is not None:
            files[name] = text
    return files


def all_commands() -> list[Command]:
    """Every simple command of every doc's shell blocks."""
    return [c for path in DOCS for c in doc_commands(path.read_text(), str(path.relative_to(ROOT)))]


def expected_exit(command: Command) -> int:
    """The exit code the docs promise: EXPECTED_EXIT's when it names the command, else 0."""
    for (doc, words), (code, _) in EXPECTED_EXIT.items():
        if command.source == doc and words in " ".join(command.argv):
            return code
    return 0


def cases() -> list[Case]:
    """A case per load-test command (runnable or skipped) and per DERIVED variant."""
    commands = all_commands()
    found = []
    for command in filter(is_load_test, commands):
        skip = selection(command, documented_files(command.source), ROOT)
        workers = workers_for(commands, command) if "--master" in command.argv else None
        if workers is not None and skip and skip.startswith("distributed"):
            alone = dataclasses.replace(command, argv=tuple(a for a in command.argv if a != "--master"))
            skip = selection(alone, documented_files(command.source), ROOT)
        elif "--worker" in command.argv:
            skip = "a worker: runs with its block's --master command"
        tools = () if skip else tuple(follow_ups(commands, command))
        found.append(Case(command.id, command, (), expected_exit(command), skip, tools, workers=workers))
    for doc, words, _, args, code, says in DERIVED:
        base = next(c for c in found if c.command.source == doc and words in " ".join(c.command.argv))
        found.append(Case(f"{base.id}+{'_'.join(args[1:])}", base.command, args, code, base.skip, says=says))
    return found


CASES = cases()


def reader_env(extra: dict[str, str]) -> dict[str, str]:
    """os.environ without the suite's settings and keys, plus the command's own assignments."""
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith(FOREIGN_ENV_PREFIXES) and k not in FOREIGN_ENV_NAMES
    }
    environ["PYTHONPATH"] = str(ROOT) + os.pathsep + environ.get("PYTHONPATH", "")
    return {**environ, **extra}


def run_process(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[int | None, str]:
    """Run argv in its own process group with output to `log`; after TIMEOUT_S the group (the embedded mock too)
    gets SIGTERM, then SIGKILL: (exit code or None on timeout, output)."""
    with log.open("w") as out:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
            stop_group(proc)
    return code, log.read_text(errors="replace")


def stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group this test started, SIGKILL it if it is still there after 10 s."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=wait)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def run_case(case: Case, tmp: Path) -> Outcome:
    """Run the case's command as prepared, then (when it ended in time, so its files are written) its follow-up
    tools in `tmp`: their outcome is worth knowing even when the run's exit code was not the promised one."""
    start = time.monotonic()
    if case.workers is None:
        prepared = prepare(case.command, tmp, documented_files(case.command.source), RUN_TIME, MAX_USERS)
        code, output = run_process([*prepared.argv, *case.args], ROOT, reader_env(prepared.env), tmp / "run.log")
    else:
        code, output = run_distributed(case, tmp)
    outcome = Outcome(code, time.monotonic() - start, output)
    for i, tool in enumerate(case.tools if code is not None else ()):
        tool_code, tool_output = run_process(prepare_tool(tool, tmp), tmp, reader_env({}), tmp / f"tool{i}.log")
        outcome.tools.append((tool, tool_code, tool_output))
    outcome.seconds = time.monotonic() - start
    return outcome


def run_distributed(case: Case, tmp: Path) -> tuple[int | None, str]:
    """The master as prepared plus its workers (at most MAX_WORKERS) on a free port; the master's exit code and
    output. Workers quit with their master; any still there 10 s later are stopped."""
    assert case.workers is not None
    worker, count = case.workers
    count = min(count, MAX_WORKERS)
    port = free_port()
    prepared = prepare_master(case.command, tmp, port, count, MAX_USERS)
    argv, env = prepare_worker(worker, port), reader_env({})
    procs = [
        subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True
        )
        for _ in range(count)
    ]
    try:
        return run_process(prepared.argv, ROOT, reader_env(prepared.env), tmp / "run.log")
    finally:
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                stop_group(proc)


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def selected_cases(session: pytest.Session) -> list[Case]:
    """The cases of this module pytest will run (respecting -k and the skips), in order."""
    chosen = []
    for item in session.items:
        params = getattr(item, "callspec", None)
        case = params.params.get("case") if params else None
        if isinstance(case, Case) and case.skip is None:
            chosen.append(case)
    return chosen


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Future]]:
    """Start every selected case, PARALLEL at a time, as soon as the module starts; tests wait for their own."""
    started = time.monotonic()
    chosen = selected_cases(request.session)
    with ThreadPoolExecutor(PARALLEL) as pool:
        futures = {
            case.id: pool.submit(run_case, case, tmp_path_factory.mktemp(case.id.replace("/", "_").replace(":", "_")))
            for case in chosen
        }
        yield futures
        pool.shutdown(wait=True, cancel_futures=True)
    report(request.config, chosen, futures, time.monotonic() - started)


def report(config: pytest.Config, chosen: list[Case], futures: dict[str, Future], wall: float) -> None:
    """Print every case's exit code (expected), time and verdict line, and the total wall time, past pytest's
    capture (a module fixture's teardown is captured like a test)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        return
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        reporter.write_line("")
        reporter.write_line(f"doc commands: {len(chosen)} run, {PARALLEL} at a time, {wall:.0f} s wall")
        for case in chosen:
            reporter.write_line(f"  {case.id:<32} {describe(case, futures[case.id])}")


def describe(case: Case, future: Future) -> str:
    """One line for the table: exit code against the promise, seconds, follow-ups, verdict line."""
    if future.cancelled() or future.exception() is not None:
        return f"not finished: {'cancelled' if future.cancelled() else future.exception()!r}"
    outcome: Outcome = future.result()
    tools = "".join(f", then {tool.argv[3]} exit {code}" for tool, code, _ in outcome.tools)
    return f"exit {outcome.code} (want {case.expected}) {outcome.seconds:5.1f} s{tools}: {outcome.verdict}"


def tail(output: str) -> str:
    """The last TAIL_LINES lines: where Locust's summary ends with the thresholds and the verdict."""
    return "\n".join(output.splitlines()[-TAIL_LINES:])


def params() -> list:
    """CASES as pytest params, skipped ones with their reason."""
    return [
        pytest.param(case, id=case.id, marks=[pytest.mark.skip(reason=case.skip)] if case.skip else [])
        for case in CASES
    ]


@pytest.mark.parametrize("case", params())
def test_doc_command_exits_as_documented(case: Case, runs: dict[str, Future]) -> None:
    outcome: Outcome = runs[case.id].result(timeout=len(runs) * (TIMEOUT_S + 30))
    command = " ".join([*case.command.argv, *case.args])
    if outcome.code != case.expected:
        pytest.fail(
            f"{case.id}: {command}\nexited {outcome.code} (None = still running after {TIMEOUT_S:.0f} s), the docs "
            f"promise {case.expected}; verdict: {outcome.verdict}\n--- last lines ---\n{tail(outcome.output)}",
            pytrace=False,
        )
    if case.says and case.says not in outcome.output:
        pytest.fail(f"{case.id}: the docs say the run names {case.says!r}\n{tail(outcome.output)}", pytrace=False)
    for tool, code, output in outcome.tools:
        if code != expected_exit(tool):
            pytest.fail(
                f"{case.id}: after the run, {' '.join(tool.argv)}\nexited {code}, the docs promise "
                f"{expected_exit(tool)}\n{tail(output)}",
                pytrace=False,
            )


def test_tables_name_commands_the_docs_hold() -> None:
    """The tables above cannot go stale: each entry names exactly one command, claim or file in its doc."""
    commands = all_commands()
    for doc, words in EXPECTED_EXIT:
        matching = [c for c in commands if c.source == doc and words in " ".join(c.argv)]
        assert len(matching) == 1, f"EXPECTED_EXIT {doc} {words!r} matches {len(matching)} commands"
    for doc, words, claim, *_ in DERIVED:
        assert " ".join(claim.split()) in " ".join((ROOT / doc).read_text().split()), f"{doc} no longer says {claim!r}"
        runs = [c for c in commands if is_load_test(c)]
        assert any(c.source == doc and words in " ".join(c.argv) for c in runs), f"{doc}: no {words} command"
    for doc, name in DOCUMENTED_FILES:
        assert name in documented_files(doc), f"{doc} no longer gives {name}"
    assert any(case.skip is None for case in CASES), "no doc command runs against the embedded mock"
