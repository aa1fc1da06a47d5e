"""Every shell command README.md and docs/*.md show either runs here, as written, against the mock, or is marked in
the doc as needing what this machine lacks (issue 21: load tests exit as the docs promise; issue 22: every command).

The commands are read out of the docs' fenced shell blocks (tests/support/doc_commands.py). What runs, each as a real
process from the repo root, in the environment a reader's shell has (none of the suite's LLM_* settings: the
scenarios' SLO defaults are on, as for the reader):

- each `locust -f ... --headless` that needs no server of the reader's and no key, with `-t 6s` (10 s when it judges
  thresholds), at most 10 users and its output files in a temporary directory; a `--master` run with its block's
  `--worker` command beside it (at most MAX_WORKERS);
- each `python -m loadlib report|compare` after the doc's run that writes the files it reads, in that run's
  directory, or on fixture summaries standing in for runs against real providers (STAND_INS); its -o / --markdown
  files must be written;
- each web UI command (no --headless) on a free port: its page must answer, then it is stopped;
- each `python -m loadlib.mock` on a free port, probed by its doc's `curl` commands in order (HTTP errors fail them),
  then stopped.

What does not run is a skipped test with the reason: a command marked `# needs: a real endpoint` (a Kubernetes
cluster, Docker, an InfluxDB server; the convention is in tests/support/doc_commands.py), an install, or an entry of
NOT_RUN. Any other command fails its own test item, so a new doc command cannot slip through unrun and unmarked; a
marker on a load test that would run here fails too. Runs go three at a time (PARALLEL) from a module fixture; the
module prints a table of every run's exit code, verdict line and time at the end.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.integration.locust_runs import ROOT, free_port
from tests.support.doc_commands import (
    OUTPUT_OPTIONS,
    Command,
    curl_port,
    doc_commands,
    follow_ups,
    is_install,
    is_load_test,
    is_loadlib,
    is_loadlib_tool,
    is_mock_server,
    is_shell_syntax,
    marker_problems,
    mock_for,
    mock_port,
    option_value,
    prepare,
    prepare_curl,
    prepare_master,
    prepare_mock,
    prepare_tool,
    prepare_web_ui,
    prepare_worker,
    producer,
    selection,
    workers_for,
    yaml_after,
)

pytestmark = [pytest.mark.integration, pytest.mark.alone]  # timing-sensitive: run with nothing beside it

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN_TIME = "4s"  # long enough for every verdict a doc shows without a threshold of its own
JUDGED_RUN_TIME = "10s"  # a command with thresholds: a p95 needs 100 samples, a share 20, before it is judged
JUDGED = ("--llm-threshold", "--scenario-slo", "--llm-capacity", "capacity.py", "--llm-request-slo")
# a capacity search's steps, shortened so that its first finishes within JUDGED_RUN_TIME (the defaults, 10 s warm-up
# and 30 s window, would finish none, and a search that finished no step is invalid)
SHORT_STEPS = ("--llm-capacity-warmup-s", "1", "--llm-capacity-window-s", "3")
MAX_USERS = 10
TIMEOUT_S = 60.0
READY_S = 30.0  # a server (the mock, a web UI) must answer by then: Locust's imports take seconds on a busy box
PARALLEL = 3
MAX_WORKERS = 2  # a distributed example's workers, capped like its users: a functional run on a 2-core machine
TAIL_LINES = 25
FIXTURES = "tests/fixtures/summaries"

# Commands (runs and the loadlib tools that follow them) whose documented outcome is not 0: (doc, words in the
# command; a trailing `$` anchors them at its end) -> (exit code the docs promise, where they promise it).
EXPECTED_EXIT: dict[tuple[str, str], tuple[int, str]] = {
    ("docs/comparison.md", "compare pool-run.json --pool pool.yaml -o cmp.html --markdown cmp.md --recommend-known"): (
        0,
        "comparison.md 'Try it without keys': middle recommended on the known bars only (context unknown), exit code 0",
    ),
    ("docs/comparison.md", "compare pool-run.json --pool pool.yaml -o cmp.html$"): (
        1,
        "comparison.md 'Try it without keys': without --recommend-known the same run prints No recommendation, exits 1",
    ),
    ("docs/comparison.md", "compare openai.json anthropic.json gateway.json"): (
        1,
        "comparison.md 'The bars': summaries without a context probe leave that bar unknown, never a pass: exit 1",
    ),
    ("README.md", "compare openai.json anthropic.json -o cmp.html"): (
        1,
        "comparison.md 'The bars': summaries without a context probe leave that bar unknown, never a pass: exit 1",
    ),
    ("docs/writing-load-tests.md", "error_rate{class=truncated} < 5% --llm-max-tokens 16"): (
        99,
        "writing-load-tests.md 'A check of your own': with --llm-max-tokens 16 every answer is truncated: exit code 99",
    ),
    ("README.md", "long_document.py --headless -u 4 -r 4 -t 60s --llm-model mock-64k"): (
        1,
        "README: the long-document run exits 1 by design, its 128K documents beyond the 64K model: failed requests",
    ),
    ("docs/scenarios.md", "long_document.py --headless -u 4 -r 4 -t 60s --llm-model mock-64k"): (
        1,
        "scenarios.md: the two long-document runs exit 1, their documents beyond the context on purpose",
    ),
    ("docs/scenarios.md", "--doc-mode probe --llm-mock context_limit=50000"): (
        1,
        "scenarios.md: the two long-document runs exit 1, the probe's tries beyond the limit fail",
    ),
    ("docs/gateway.md", "truncate_to=6000,usage_prompt=sent"): (
        1,
        "gateway.md: the truncating run exits 1, the documents the gateway cut are truncated requests",
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

# Summaries a doc's comparison reads that no doc command writes (runs against real providers): (doc, words in the
# command) -> {file name: fixture summary of a mock run standing in for it}. The command runs as written on them.
STAND_INS: dict[tuple[str, str], dict[str, str]] = {
    ("README.md", "compare openai.json anthropic.json -o cmp.html"): {
        "openai.json": f"{FIXTURES}/chat_with_verdict.json",
        "anthropic.json": f"{FIXTURES}/support_chat.json",
    },
    ("docs/comparison.md", "compare openai.json anthropic.json gateway.json"): {
        "openai.json": f"{FIXTURES}/chat_with_verdict.json",
        "anthropic.json": f"{FIXTURES}/support_chat.json",
        "gateway.json": f"{FIXTURES}/compliance.json",
    },
}

# Commands the test does not run by design, none of which a marker would describe: (doc, words) -> why.
NOT_RUN: dict[tuple[str, str], str] = {
    ("README.md", "bash scripts/test.sh"): "the whole suite, this test included (CI runs it: .ci/run)",
}
INSTALL = "an install: it made the environment this test runs in (scripts/test.sh runs the same pip install)"
MARK_HINT = (
    "mark it in the doc (`# needs: a real endpoint`, `a Kubernetes cluster`, `Docker` or `an InfluxDB server`, as the "
    "block's first line or on the command's line) or make it run here"
)

# The environment a reader's shell would not have: the suite's own settings (conftest turns the SLOs off) and keys.
FOREIGN_ENV_PREFIXES = ("LLM_", "LOCUST_", "INFLUX_")
FOREIGN_ENV_NAMES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


@dataclass(frozen=True)
class Case:
    """One doc command to run (or skip, with the reason; or fail, with the problem) and the exit code the docs promise.
    `kind` says how it runs: load (a run and its follow-ups), tool (a loadlib tool on stand-ins), web (a web UI asked
    for its page), mock (the mock server probed by its doc's curl commands, the `tools`)."""

    id: str
    command: Command
    args: tuple[str, ...] = ()
    expected: int = 0
    skip: str | None = None
    tools: tuple[Command, ...] = ()
    says: str = ""
    workers: tuple[Command, int] | None = None
    kind: str = "load"
    problem: str | None = None


@dataclass
class Outcome:
    """What a case did: its exit code (for a server: 0 when it answered) and output, then each follow-up's, and the
    output files a tool names that it did not write."""

    code: int | None
    seconds: float
    output: str
    tools: list[tuple[Command, int | None, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    note: str = ""
    alone: bool = False  # run again alone after a first try that shared the machine saturated the client

    @property
    def verdict(self) -> str:
        """The note of a server case (what it answered), else the run's verdict line (`Verdict: PASS (exit code 0)`),
        else its last non-empty line."""
        if self.note:
            return self.note
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


def names(command: Command, doc: str, words: str) -> bool:
    """Whether a table entry (doc, words) names the command: the words are in it; a trailing `$` anchors them at its
    end (docs/comparison.md shows a compare command that is the start of another)."""
    text = " ".join(command.argv)
    anchored = words.endswith("$")
    return command.source == doc and (text.endswith(words[:-1]) if anchored else words in text)


def entry(table: Mapping[tuple[str, str], object], command: Command) -> object | None:
    """The value of the table entry that names the command, None when none does."""
    return next((value for (doc, words), value in table.items() if names(command, doc, words)), None)


def expected_exit(command: Command) -> int:
    """The exit code the docs promise: EXPECTED_EXIT's when it names the command, else 0."""
    found = entry(EXPECTED_EXIT, command)
    return found[0] if isinstance(found, tuple) else 0


def load_case(command: Command, commands: Sequence[Command]) -> Case:
    """A load test's case: it runs (a master with its workers; a web UI asked for its page) or says why not."""
    files = documented_files(command.source)
    skip = selection(command, files, ROOT)
    workers = workers_for(commands, command) if "--master" in command.argv else None
    kind = "load"
    if workers is not None and skip and skip.startswith("distributed"):
        skip = selection(
            dataclasses.replace(command, argv=tuple(a for a in command.argv if a != "--master")), files, ROOT
        )
    elif "--worker" in command.argv and any(
        "--master" in c.argv for c in commands if c.block == command.block and c.source == command.source
    ):
        return Case(command.id, command, skip="a worker: runs with its block's --master command")
    elif skip and skip.startswith("web UI only"):
        kind, skip = "web", selection(dataclasses.replace(command, argv=(*command.argv, "--headless")), files, ROOT)
    if skip:
        return problem(command, f"{skip}: it cannot run here and carries no marker")
    tools = tuple(follow_ups(commands, command))
    return Case(command.id, command, (), expected_exit(command), None, tools, workers=workers, kind=kind)


def tool_case(command: Command, commands: Sequence[Command]) -> Case | None:
    """A loadlib tool's case: None when it follows the run that writes its files (that run's case runs it); on
    stand-ins when STAND_INS has them; skipped when its run is marked (it needs what the run needs)."""
    run = producer(commands, command) if is_loadlib_tool(command) else None
    if run is not None and run.needs:
        return Case(command.id, command, skip=f"reads the files of {run.id}, which needs {', '.join(run.needs)}")
    if run is not None:
        return None
    if is_loadlib_tool(command) and entry(STAND_INS, command) is None:
        return problem(
            command, "reads files no doc command writes (add the run that writes them, or stand-ins to STAND_INS)"
        )
    return Case(command.id, command, expected=expected_exit(command), kind="tool")


def mock_case(command: Command, commands: Sequence[Command]) -> Case:
    """The mock server's case: started, probed by the curl commands of its doc that ask its port, stopped."""
    probes = tuple(c for c in commands if curl_port(c) is not None and mock_for(commands, c) == command and not c.needs)
    return Case(command.id, command, tools=probes, kind="mock")


def problem(command: Command, why: str) -> Case:
    """A case that fails: a command that neither runs here nor carries a marker."""
    return Case(command.id, command, problem=f"{command.id}: {' '.join(command.argv)}\n{why}; {MARK_HINT}")


def case_for(command: Command, commands: Sequence[Command]) -> Case | None:
    """How the test accounts for one command: a case (run, skipped with the reason, or failing), or None when it runs
    inside another case (a follow-up tool, a curl probing its doc's mock, a loop's own words)."""
    if command.needs:
        return marked_case(command)
    if is_load_test(command):
        return load_case(command, commands)
    if is_loadlib(command):
        return tool_case(command, commands)
    if is_mock_server(command):
        return mock_case(command, commands)
    if (curl_port(command) is not None and mock_for(commands, command) is not None) or is_shell_syntax(command):
        return None
    if is_install(command):
        return Case(command.id, command, skip=INSTALL)
    reason = entry(NOT_RUN, command)
    if isinstance(reason, str):
        return Case(command.id, command, skip=reason)
    return problem(command, "the test does not know how to run it")


def marked_case(command: Command) -> Case:
    """A marked command is skipped, unless it is a load test that runs here on the embedded mock (a stale marker)."""
    needs = ", ".join(command.needs)
    files = documented_files(command.source)
    if is_load_test(command) and "--headless" in command.argv and selection(command, files, ROOT) is None:
        return Case(
            command.id,
            command,
            problem=f"{command.id}: marked `needs: {needs}` but runs here on the embedded mock: drop the marker",
        )
    return Case(command.id, command, skip=f"needs: {needs} (marked in the doc)")


def unique_ids(found: list[Case]) -> list[Case]:
    """Cases with distinct ids: a load test keeps `doc:line`; any other command adds its program (`-pip`,
    `-kubectl`), and a repeat on one line a count, so pytest's ids say what each is."""
    seen: dict[str, int] = {}
    out = []
    for case in found:
        name = case.id if case.kind in ("load", "web") and is_load_test(case.command) else f"{case.id}-{program(case)}"
        seen[name] = seen.get(name, 0) + 1
        out.append(dataclasses.replace(case, id=name if seen[name] == 1 else f"{name}-{seen[name]}"))
    return out


def program(case: Case) -> str:
    """The command's program as a reader names it (`python -m loadlib.mock` is `mock`, `python -m pip` is `pip`)."""
    argv = case.command.argv
    return argv[2].rsplit(".", 1)[-1] if len(argv) > 2 and argv[1] == "-m" else Path(argv[0]).name


def cases() -> list[Case]:
    """A case per command of the docs (see case_for) and per DERIVED variant."""
    commands = all_commands()
    found = [case for command in commands if (case := case_for(command, commands)) is not None]
    for doc, words, _, args, code, says in DERIVED:
        base = next(
            c for c in found if c.kind == "load" and c.command.source == doc and words in " ".join(c.command.argv)
        )
        found.append(Case(f"{base.id}+{'_'.join(args[1:])}", base.command, args, code, base.skip, says=says))
    return unique_ids(found)


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
    """Run the case by its kind; the time is the whole case's, follow-ups included."""
    start = time.monotonic()
    runner = {"load": run_load, "tool": run_stand_in_tool, "web": run_web_ui, "mock": run_mock}[case.kind]
    outcome = runner(case, tmp)
    outcome.seconds = time.monotonic() - start
    return outcome


def run_time(command: Command) -> str:
    """The -t a load command runs with: longer when it judges thresholds, which need their samples."""
    judged = any(word in arg for arg in command.argv for word in JUDGED)
    return JUDGED_RUN_TIME if judged else RUN_TIME


def short_steps(argv: Sequence[str]) -> tuple[str, ...]:
    """SHORT_STEPS for a capacity search whose command leaves its step lengths at their defaults."""
    searches = any("capacity.py" in arg or arg.startswith("--llm-capacity") for arg in argv)
    given = any(arg.startswith(("--llm-capacity-warmup-s", "--llm-capacity-window-s")) for arg in argv)
    return SHORT_STEPS if searches and not given else ()


def run_load(case: Case, tmp: Path) -> Outcome:
    """Run the case's command as prepared, then (when it ended in time, so its files are written) its follow-up
    tools in `tmp`: their outcome is worth knowing even when the run's exit code was not the promised one."""
    if case.workers is None:
        prepared = prepare(case.command, tmp, documented_files(case.command.source), run_time(case.command), MAX_USERS)
        argv = [*prepared.argv, *short_steps(prepared.argv), *case.args]
        code, output = run_process(argv, ROOT, reader_env(prepared.env), tmp / "run.log")
    else:
        code, output = run_distributed(case, tmp)
    outcome = Outcome(code, 0.0, output)
    for i, tool in enumerate(case.tools if code is not None else ()):
        run_tool(tool, tmp, f"tool{i}", outcome)
    return outcome


def run_tool(tool: Command, tmp: Path, name: str, outcome: Outcome) -> None:
    """Run a loadlib tool in `tmp`; note its code and output, and the -o / --markdown files it did not write."""
    code, output = run_process(prepare_tool(tool, tmp), tmp, reader_env({}), tmp / f"{name}.log")
    outcome.tools.append((tool, code, output))
    for option in ("-o", "--markdown"):
        path = option_value(tool.argv, (option,)) if option in OUTPUT_OPTIONS else None
        if path and not (tmp / path).is_file():
            outcome.missing.append(f"{tool.id} {option} {path}")


def run_stand_in_tool(case: Case, tmp: Path) -> Outcome:
    """A loadlib tool with nothing to follow: its STAND_INS copied in under the names it reads, then run as written;
    the tool's code is the case's."""
    stand_ins = entry(STAND_INS, case.command)
    for name, fixture in (stand_ins if isinstance(stand_ins, dict) else {}).items():
        shutil.copyfile(ROOT / fixture, tmp / name)
    outcome = Outcome(None, 0.0, "")
    run_tool(case.command, tmp, "tool", outcome)
    _, outcome.code, outcome.output = outcome.tools.pop()
    return outcome


def run_web_ui(case: Case, tmp: Path) -> Outcome:
    """Start a web UI command on a free port, ask its page (200, or the login's redirect with --web-login), stop it.
    The code is 0 when the page answered; the output says what it answered and how the process ended."""
    port = free_port()
    prepared = prepare_web_ui(case.command, tmp, port)
    with (tmp / "web.log").open("w") as log:
        proc = subprocess.Popen(
            prepared.argv,
            cwd=ROOT,
            env=reader_env(prepared.env),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        status = wait_for_page(proc, f"http://127.0.0.1:{port}/")
        stop_group(proc)
    # With --web-login (docs/webui.md) the page must not be served to a stranger: a redirect to the login or a 401.
    answered = status in ((302, 401) if "--web-login" in case.command.argv else (200,))
    note = f"GET / answered {status}; stopped, exit {proc.returncode}"
    return Outcome(0 if answered else 1, 0.0, (tmp / "web.log").read_text(errors="replace"), note=note)


def wait_for_page(proc: subprocess.Popen, url: str) -> int | None:
    """The HTTP status `url` first answers with (redirects not followed), None if the process ends or READY_S
    passes first."""
    opener = urllib.request.build_opener(NoRedirect)
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with opener.open(url, timeout=5) as answer:
                return answer.status
        except urllib.error.HTTPError as err:
            return err.code
        except OSError:
            time.sleep(0.25)
    return None


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """Leave a redirect as the answer (a web login sends / to /login: the page answered)."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def run_mock(case: Case, tmp: Path) -> Outcome:
    """Start the doc's mock command on a free port, run its curl commands against it in order, stop it. The code is
    0 when the mock listened and was still up after the last probe."""
    port = free_port()
    with (tmp / "mock.log").open("w") as log:
        proc = subprocess.Popen(
            prepare_mock(case.command, port),
            cwd=ROOT,
            env=reader_env({}),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        listening = wait_for_port(proc, port)
        outcome = Outcome(None, 0.0, "")
        for i, curl in enumerate(case.tools if listening else ()):
            argv = prepare_curl(curl, mock_port(case.command), port)
            outcome.tools.append((curl, *run_process(argv, tmp, reader_env({}), tmp / f"curl{i}.log")))
        up = listening and proc.poll() is None
        stop_group(proc)
    outcome.code = 0 if up else proc.returncode
    note = f"listening on {port}: {listening}; up after the probes: {up}; stopped, exit {proc.returncode}"
    outcome.output, outcome.note = (tmp / "mock.log").read_text(errors="replace"), note
    return outcome


def wait_for_port(proc: subprocess.Popen, port: int) -> bool:
    """Whether 127.0.0.1:`port` accepts a connection before the process ends or READY_S passes."""
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline and proc.poll() is None:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
        time.sleep(0.1)
    return False


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


def runnable(case: Case) -> bool:
    """Whether the case runs (neither skipped nor a problem)."""
    return case.skip is None and case.problem is None


def selected_cases(session: pytest.Session) -> list[Case]:
    """The cases of this module pytest will run (respecting -k and the skips), in order."""
    chosen = []
    for item in session.items:
        params = getattr(item, "callspec", None)
        case = params.params.get("case") if params else None
        if isinstance(case, Case) and runnable(case):
            chosen.append(case)
    return chosen


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Outcome]]:
    """Run every selected case, PARALLEL at a time, as soon as the module starts; then, alone, each run that the
    concurrency itself made invalid (a saturated client: three runs and their mocks share this machine's two cores,
    and the verdict is right to call such numbers untrustworthy). Tests read their own outcome."""
    started = time.monotonic()
    chosen = selected_cases(request.session)
    dirs = {case.id: tmp_path_factory.mktemp(case.id.replace("/", "_").replace(":", "_")) for case in chosen}
    first: dict[tuple, Case] = {}
    for case in chosen:  # twins run once: the first of them
        first.setdefault(same_run(case), case)
    with ThreadPoolExecutor(PARALLEL) as pool:
        futures = {key: pool.submit(run_case, case, dirs[case.id]) for key, case in first.items()}
        done = {key: finished(future) for key, future in futures.items()}
    outcomes = {case.id: done[same_run(case)] for case in chosen}
    for case in chosen:
        if saturated(outcomes[case.id]) and case.expected != 3:
            again = tmp_path_factory.mktemp(dirs[case.id].name + "_alone")
            outcomes[case.id] = run_case(case, again)
            outcomes[case.id].alone = True
    yield outcomes
    report(request.config, chosen, outcomes, time.monotonic() - started)


def same_run(case: Case) -> tuple:
    """What a case runs, so two docs that show the same command (README's quick start and the doc it points to) run
    it once: its kind, command, environment, added arguments, follow-ups and workers."""
    worker = (case.workers[0].argv, case.workers[1]) if case.workers else None
    tools = tuple((tool.argv, tuple(sorted(tool.env.items()))) for tool in case.tools)
    env = tuple(sorted(case.command.env.items()))
    return (case.kind, case.command.argv, env, case.args, tools, worker, case.expected, case.says)


def finished(future: Future) -> Outcome:
    """The case's outcome, or one that says why it has none."""
    try:
        return future.result()
    except Exception as exc:  # a bug of the harness: the test shows it
        return Outcome(None, 0.0, f"the case did not finish: {exc!r}")


def saturated(outcome: Outcome) -> bool:
    return outcome.code == 3 and "client saturated" in outcome.verdict


def report(config: pytest.Config, chosen: list[Case], outcomes: dict[str, Outcome], wall: float) -> None:
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
            reporter.write_line(f"  {case.id:<32} {describe(case, outcomes[case.id])}")


def describe(case: Case, outcome: Outcome) -> str:
    """One line for the table: exit code against the promise, seconds, follow-ups, verdict line."""
    codes = [code for _, code, _ in outcome.tools]
    tools = f", then {len(codes)} follow-ups exit {sorted(set(codes), key=str)}" if codes else ""
    alone = " (run again alone)" if outcome.alone else ""
    return f"exit {outcome.code} (want {case.expected}) {outcome.seconds:5.1f} s{alone}{tools}: {outcome.verdict}"


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
def test_doc_command_runs_as_documented(case: Case, runs: dict[str, Outcome]) -> None:
    if case.problem:
        pytest.fail(case.problem, pytrace=False)
    outcome = runs[case.id]
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
                f"{case.id}: then {' '.join(tool.argv)}\nexited {code}, the docs promise {expected_exit(tool)}\n"
                f"{tail(output)}",
                pytrace=False,
            )
    assert not outcome.missing, f"{case.id}: output files the commands name were not written: {outcome.missing}"


def test_markers_are_well_formed() -> None:
    """A misspelt marker or one on a line where it marks nothing would leave a command unmarked or hide a typo."""
    problems = [p for path in DOCS for p in marker_problems(path.read_text(), str(path.relative_to(ROOT)))]
    assert not problems, "\n".join(problems)


def test_tables_name_commands_the_docs_hold() -> None:
    """The tables above cannot go stale: each entry names exactly one command, claim or file in its doc."""
    commands = all_commands()
    for table in (EXPECTED_EXIT, STAND_INS, NOT_RUN):
        for doc, words in table:
            matching = [c for c in commands if names(c, doc, words)]
            assert len(matching) == 1, f"{doc} {words!r} matches {len(matching)} commands"
    for doc, words, claim, *_ in DERIVED:
        assert " ".join(claim.split()) in " ".join((ROOT / doc).read_text().split()), f"{doc} no longer says {claim!r}"
        runs = [c for c in commands if is_load_test(c)]
        assert any(c.source == doc and words in " ".join(c.argv) for c in runs), f"{doc}: no {words} command"
    for doc, name in DOCUMENTED_FILES:
        assert name in documented_files(doc), f"{doc} no longer gives {name}"
    assert any(runnable(case) for case in CASES), "no doc command runs against the embedded mock"
