"""The shell commands the docs show, read out of README.md and docs/*.md, so a test can run each one as written.

Pure functions (no process, no network): `doc_commands` finds the shell commands in fenced code blocks (```bash,
sh, console, shell) with the marker each carries; the `is_*` predicates sort them (load tests, loadlib tools, the mock
server and the curl commands that probe it, installs, loop syntax); `selection` says whether a load test can run here
against the embedded mock (or why not); the `prepare*` functions turn a command into the argv a test runs: a load test
with `-t 10s`, at most 10 users and every output file in a temporary directory, the mock on a free port with the curl
commands pointed at it, a web UI on a free port. tests/integration/test_doc_commands.py runs them;
tests/unit/test_doc_commands_extract.py checks the parsing.

The marker. A command that cannot run here (it needs a real provider, a cluster, Docker, an InfluxDB server) says so
with a comment, the one convention the docs use:

    # needs: a Kubernetes cluster              <- the block's first line: every command of the block
    locust ... --host https://x/v1   # needs: a real endpoint (your gateway)   <- on the command's line: that command

The words after `needs:` are one or more of NEEDS, joined by `, `; a note may follow in parentheses. A marker
anywhere else, or with other words, is a problem (`marker_problems`) so a typo cannot hide a command.
"""

from __future__ import annotations

import contextlib
import fnmatch
import re
import shlex
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import yaml

SHELL_LANGS = frozenset({"bash", "sh", "console", "shell"})
OPERATORS = frozenset({"&&", "||", ";", "&", "|"})
KEYWORDS = frozenset({"do", "then", "else", "{", "!"})
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})
# Options whose value is a file the run writes: the test puts them in its temporary directory.
OUTPUT_OPTIONS = frozenset(
    {
        "--llm-summary",
        "--llm-records",
        "--llm-report",
        "--llm-junit",
        "--llm-markdown",
        "--audit-file",
        "--csv",
        "--html",
        "--json-file",
        "--logfile",
        "-o",
        "--markdown",
    }
)
TARGET_OPTIONS = ("--host", "-H")
RUN_TIME_OPTIONS = ("-t", "--run-time")
USERS_OPTIONS = ("-u", "--users")
# A provider's or a server's key set on the command line: the command is meant for that provider. A password the doc
# sets itself (the web login's) is the doc's own choice, not one the reader must bring.
SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET)$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# What a marked command needs that this machine's tests do not have: the only words a `# needs:` marker may use.
NEEDS = ("a real endpoint", "a Kubernetes cluster", "Docker", "an InfluxDB server", "a real engine")
MARKER = re.compile(r"^needs:\s*(.*?)\s*(\(.*\))?$")
PYTHON = re.compile(r"python(3(\.\d+)?)?")
SHELL_SYNTAX = frozenset({"for", "while", "until", "done", "fi", "}", "esac"})
DEFAULT_MOCK_PORT = 8000  # python -m loadlib.mock's --port default
LOCAL_URL = re.compile(r"^(?:https?://)?(localhost|127\.0\.0\.1)(?::(\d+))?(/.*)?$")


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language, the file's line number of its first content line, its lines."""

    lang: str
    first_line: int
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Command:
    """One simple command of a doc's shell block, as the shell would run it (quotes removed, comments dropped)."""

    source: str
    line: int
    block: int
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    background: bool = False
    text: str = ""
    needs: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        """`docs/scenarios.md:19`: where a reader finds the command (pytest tells apart two on one line)."""
        return f"{self.source}:{self.line}"


@dataclass(frozen=True)
class Prepared:
    """What the test runs: argv from the repo root, environment additions, and the temporary directory's files."""

    argv: list[str]
    env: dict[str, str]


def fenced_blocks(markdown: str) -> Iterator[Block]:
    """Every fenced block (``` or ~~~) with its info string's first word as language; unclosed blocks run to EOF."""
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        opening = re.match(r"^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)", lines[i])
        i += 1
        if not opening:
            continue
        fence, lang, start = opening.group(1), opening.group(2).lower(), i
        while i < len(lines) and not lines[i].strip().startswith(fence):
            i += 1
        yield Block(lang, start + 1, tuple(lines[start:i]))
        i += 1


def split_comment(line: str) -> tuple[str, str]:
    """The line without its shell comment, and the comment's text (after the `#`): a `#` at the start of a word,
    outside quotes (shlex would also cut `a#b`, which bash does not)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def strip_comment(line: str) -> str:
    """The line without its shell comment."""
    return split_comment(line)[0]


def marker_needs(comment: str) -> tuple[str, ...] | None:
    """What a `needs:` comment names (None when the comment is no marker); ValueError on words outside NEEDS."""
    found = MARKER.match(comment)
    if not found:
        return None
    terms = tuple(term.strip() for term in found.group(1).split(","))
    unknown = [term for term in terms if term not in NEEDS]
    if unknown:
        raise ValueError(f"needs {unknown}: the marker's words are {', '.join(map(repr, NEEDS))}")
    return terms


def block_needs(block: Block) -> tuple[str, ...]:
    """The block's marker: its first non-blank line when that is a `# needs: ...` comment line."""
    first = next((line.strip() for line in block.lines if line.strip()), "")
    if not first.startswith("#"):
        return ()
    try:
        return marker_needs(first[1:].strip()) or ()
    except ValueError:
        return ()


def tokens(line: str) -> list[str]:
    """Shell words and control operators (`&&`, `|`, `;`, `&`...) of one logical line; ValueError on an open quote."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def logical_lines(block: Block) -> Iterator[tuple[int, str, tuple[str, ...]]]:
    """(line number, text, marker) of each command line: `\\` continuations, open quotes and a trailing `&&` / `||` /
    `|` join the next line; a console block keeps only `$ ` prompt lines (the rest is output). The marker is what a
    `# needs:` comment on one of its physical lines names (words outside NEEDS are left to `marker_problems`)."""
    pending, start, needs = "", 0, ()
    for offset, raw in enumerate(block.lines):
        line = raw
        if block.lang == "console" and not pending:
            if not line.lstrip().startswith("$ "):
                continue
            line = line.lstrip()[2:]
        if not pending:
            start, needs = block.first_line + offset, ()
        text, comment = split_comment(line)
        with contextlib.suppress(ValueError):
            needs = marker_needs(comment) or needs
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        pending += text
        if _continues(pending):
            pending += " "
            continue
        if pending.strip():
            yield start, pending.strip(), needs
        pending = ""
    if pending.strip():
        yield start, pending.strip(), needs


def _continues(line: str) -> bool:
    """Whether the shell would read on: an open quote or a trailing operator that needs a right-hand side."""
    try:
        words = tokens(line)
    except ValueError:
        return True
    return bool(words) and words[-1] in {"&&", "||", "|"}


def split_commands(words: Sequence[str]) -> Iterator[tuple[list[str], str]]:
    """Each simple command of a tokenised line with the operator that ends it ('' at the end of the line); leading
    shell keywords (`do`, `then`, `{`) are dropped so `for ...; do locust ... & done` yields the locust command."""
    current: list[str] = []
    for word in [*words, ""]:
        if word in OPERATORS or word == "":
            while current and current[0] in KEYWORDS:
                current.pop(0)
            if current:
                yield current, word
            current = []
        else:
            current.append(word)


def split_env(words: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """Leading `NAME=value` assignments (the command's environment) and the rest."""
    env: dict[str, str] = {}
    i = 0
    while i < len(words) and ASSIGNMENT.match(words[i]):
        name, _, value = words[i].partition("=")
        env[name] = value
        i += 1
    return env, list(words[i:])


def block_commands(block: Block, source: str, index: int) -> Iterator[Command]:
    """The block's simple commands; `export A=b` lines are not commands but set A for the block's later ones. A
    command carries its line's marker, else its block's."""
    exported: dict[str, str] = {}
    marked = block_needs(block)
    for line, text, needs in logical_lines(block):
        for words, operator in split_commands(tokens(text)):
            env, argv = split_env(words)
            if argv[:1] == ["export"]:
                exported.update(split_env(argv[1:])[0])
                continue
            if argv:
                yield Command(
                    source, line, index, tuple(argv), {**exported, **env}, operator == "&", text, needs or marked
                )


def doc_commands(markdown: str, source: str) -> list[Command]:
    """Every simple command in the document's shell blocks, in order."""
    found: list[Command] = []
    for index, block in enumerate(fenced_blocks(markdown)):
        if block.lang in SHELL_LANGS:
            found.extend(block_commands(block, source, index))
    return found


def marker_problems(markdown: str, source: str) -> list[str]:
    """Markers that would not do what their writer meant: words outside NEEDS, or a `# needs:` comment line that is
    not its block's first line (it would mark nothing)."""
    problems = []
    for block in fenced_blocks(markdown):
        if block.lang not in SHELL_LANGS:
            continue
        first = next((i for i, line in enumerate(block.lines) if line.strip()), -1)
        for offset, line in enumerate(block.lines):
            text, comment = split_comment(line)
            try:
                needs = marker_needs(comment)
            except ValueError as err:
                problems.append(f"{source}:{block.first_line + offset}: {err}")
                continue
            if needs is not None and not text.strip() and offset != first:
                problems.append(
                    f"{source}:{block.first_line + offset}: a `# needs:` line marks only as its block's first line; "
                    "put it there or on the command's line"
                )
    return problems


def python_m(command: Command, module: str) -> bool:
    """`python -m MODULE ...` in any spelling of python (python3, python3.11)."""
    argv = command.argv
    return bool(argv) and PYTHON.fullmatch(argv[0]) is not None and argv[1:3] == ("-m", module)


def is_load_test(command: Command) -> bool:
    """`locust ...`, `python -m locust ...` or `python3 -m locust ...`."""
    return command.argv[:1] == ("locust",) or python_m(command, "locust")


def is_loadlib(command: Command) -> bool:
    """`python -m loadlib ...`: the report, the comparison, the options' help."""
    return python_m(command, "loadlib")


def is_loadlib_tool(command: Command) -> bool:
    """`python -m loadlib report|compare ...`: reads a run's files, so it follows the run that writes them."""
    return is_loadlib(command) and command.argv[3:4] in (("report",), ("compare",))


def is_mock_server(command: Command) -> bool:
    """`python -m loadlib.mock ...` or its console script `llm-mock ...`: a server that runs until stopped."""
    return command.argv[:1] == ("llm-mock",) or python_m(command, "loadlib.mock")


def is_install(command: Command) -> bool:
    """`pip install ...`, `pip3 install ...` or `python -m pip install ...`."""
    argv = command.argv
    return (bool(argv) and argv[0] in ("pip", "pip3") and argv[1:2] == ("install",)) or (
        python_m(command, "pip") and argv[3:4] == ("install",)
    )


def is_shell_syntax(command: Command) -> bool:
    """A loop's or group's own words (`for i in 1 2`, `done`): the commands in its body are what runs."""
    return bool(command.argv) and command.argv[0] in SHELL_SYNTAX


def curl_port(command: Command) -> int | None:
    """The port of a `curl` command's local URL (`localhost:8000/health`), None for any other command or host."""
    if command.argv[:1] != ("curl",):
        return None
    for arg in command.argv[1:]:
        url = LOCAL_URL.match(arg)
        if url:
            return int(url.group(2) or (443 if arg.startswith("https") else 80))
    return None


def mock_port(command: Command) -> int:
    """The port a mock server command listens on."""
    args = command.argv[1:] if command.argv[0] == "llm-mock" else command.argv[3:]
    port = option_value(args, ("--port",))
    return int(port) if port and port.isdigit() else DEFAULT_MOCK_PORT


def mock_for(commands: Sequence[Command], curl: Command) -> Command | None:
    """The mock server command of the curl's doc that listens on the port the curl asks (docs/mock.md starts one on
    8000, then probes it): the curl probes that mock."""
    port = curl_port(curl)
    servers = [c for c in commands if c.source == curl.source and is_mock_server(c) and not c.needs]
    return next((c for c in servers if port is not None and mock_port(c) == port), None)


def locust_args(command: Command) -> list[str]:
    """The arguments after `locust` / `python -m locust`."""
    return list(command.argv[1:] if command.argv[0] == "locust" else command.argv[3:])


def option_value(args: Sequence[str], names: Sequence[str]) -> str | None:
    """The value of the last `--name value` / `--name=value` among `args`, None when absent."""
    value = None
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                value = args[i + 1]
            elif arg.startswith(name + "=") and name.startswith("--"):
                value = arg.split("=", 1)[1]
    return value


def has_flag(args: Sequence[str], name: str) -> bool:
    """Whether a flag (or `--flag=value`) is given."""
    return any(arg == name or arg.startswith(name + "=") for arg in args)


def placeholder(command: Command) -> str | None:
    """The first word the reader must fill in (`$VAR`, `...`, `<name>`), None when the command is runnable as is."""
    for word in [*command.argv, *command.env.values()]:
        if "$" in word or "..." in word or re.search(r"<[\w-]+>", word):
            return word
    return None


def selection(command: Command, files: Mapping[str, str], root: Path) -> str | None:
    """None when the command runs here against the embedded mock(s) with no key; otherwise why not (a skip reason).
    `files` maps file names the docs show but the repo lacks (a documented pool file) to their text."""
    args = locust_args(command)
    distributed = has_flag(args, "--master") or has_flag(args, "--worker")
    word = placeholder(command)
    reasons = (
        target_reason(command, args),
        "distributed (--master/--worker processes)" if distributed else None,
        None if has_flag(args, "--headless") else "web UI only (no --headless)",
        pool_reason(args, files, root),
        key_reason(command, args),
        None if word is None else f"placeholder {word!r} to fill in",
        "shell redirection" if any(w in {"<", ">", ">>"} for w in command.argv) else None,
    )
    return next((reason for reason in reasons if reason), None)


def target_reason(command: Command, args: Sequence[str]) -> str | None:
    """Why a command with its own target does not run on the embedded mock: a server at --host / LLM_BASE_URL /
    --influx-url is one the reader starts (or a remote one), never the mock the run starts itself."""
    for name, url in (
        ("--host", option_value(args, TARGET_OPTIONS)),
        ("LLM_BASE_URL", command.env.get("LLM_BASE_URL")),
        ("--influx-url", option_value(args, ("--influx-url",))),
    ):
        if url:
            where = "a local server of yours" if urlsplit(url).hostname in LOCAL_HOSTS else "a remote endpoint"
            return f"{name} {url}: {where}, not the embedded mock"
    return None


def pool_reason(args: Sequence[str], files: Mapping[str, str], root: Path) -> str | None:
    """Why a --llm-pool run cannot run here: the file is neither in the repo nor documented, or it names an endpoint
    that is not an embedded mock (`mock:` without `base_url`)."""
    pool = option_value(args, ("--llm-pool",))
    if pool is None:
        return None
    text = pool_text(pool, files, root)
    if text is None:
        return f"--llm-pool {pool}: the reader's own file (neither in the repo nor given by the docs)"
    endpoints = (yaml.safe_load(text) or {}).get("endpoints") or []
    foreign = [e.get("name", "?") for e in endpoints if not isinstance(e.get("mock"), dict) or e.get("base_url")]
    return f"--llm-pool {pool}: endpoints {foreign} are not embedded mocks" if foreign else None


def pool_text(pool: str, files: Mapping[str, str], root: Path) -> str | None:
    """The pool's YAML: inline (`{...}`), a documented file, or a file in the repo."""
    if pool.lstrip().startswith("{"):
        return pool
    if pool in files:
        return files[pool]
    path = root / pool
    return path.read_text() if path.is_file() else None


def key_reason(command: Command, args: Sequence[str]) -> str | None:
    """Why a command needs a secret: a key variable named by --llm-api-key-env, or one set on the command line."""
    key_env = option_value(args, ("--llm-api-key-env",))
    if key_env and key_env.lower() != "none":
        return f"needs the key in ${key_env}"
    secrets = sorted(name for name in command.env if SECRET_NAME.search(name))
    return f"needs {', '.join(secrets)}" if secrets else None


def with_option(args: list[str], names: Sequence[str], value: str) -> list[str]:
    """`args` with every `names` option set to `value` (appended under the first name when absent)."""
    out, found, skip = [], False, False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in names and i + 1 < len(args):
            out += [arg, value]
            found = skip = True
        elif any(arg.startswith(n + "=") for n in names if n.startswith("--")):
            out.append(arg.split("=", 1)[0] + "=" + value)
            found = True
        else:
            out.append(arg)
    return out if found else [*out, names[0], value]


def in_tmp(path: str, tmp: Path) -> str:
    """Where an output path goes in the temporary directory: relative paths keep their folders, absolute ones only
    their name; parent folders are created (a run does not make `results/` itself)."""
    target = tmp / (Path(path).name if Path(path).is_absolute() else path)
    target.parent.mkdir(parents=True, exist_ok=True)
    return str(target)


def redirect_outputs(args: list[str], tmp: Path) -> list[str]:
    """`args` with every output file (OUTPUT_OPTIONS) moved into `tmp`."""
    out = list(args)
    for i, arg in enumerate(out):
        name, eq, value = arg.partition("=")
        if eq and name in OUTPUT_OPTIONS and name.startswith("--"):
            out[i] = f"{name}={in_tmp(value, tmp)}"
        elif arg in OUTPUT_OPTIONS and i + 1 < len(out) and out[i + 1].lower() != "none":
            out[i + 1] = in_tmp(out[i + 1], tmp)
    return out


def cap_users(args: list[str], most: int) -> list[str]:
    """`args` with the user count at most `most`, so the run checks the command, not the machine's capacity."""
    users = option_value(args, USERS_OPTIONS)
    if users is None or not users.isdigit() or int(users) <= most:
        return args
    return with_option(args, USERS_OPTIONS, str(most))


def prepare(
    command: Command, tmp: Path, files: Mapping[str, str], run_time: str = "10s", max_users: int = 10
) -> Prepared:
    """The argv (this interpreter's Locust) and environment additions that run `command` for `run_time` with at most
    `max_users` users, every output in `tmp`, documented files (`files`) written there and pointed at."""
    args = redirect_outputs(cap_users(with_option(locust_args(command), RUN_TIME_OPTIONS, run_time), max_users), tmp)
    pool = option_value(args, ("--llm-pool",))
    if pool in files:
        args = with_option(args, ("--llm-pool",), write_file(tmp, pool, files[pool]))
    env = dict(command.env)
    if not has_flag(args, "--audit-file"):
        env["LLM_AUDIT_FILE"] = str(tmp / "results" / "audit-{run_id}.jsonl")
    return Prepared([sys.executable, "-m", "locust", *args], env)


def write_file(tmp: Path, name: str, text: str) -> str:
    """Write a documented file into `tmp` (once per run) and return its path."""
    path = Path(in_tmp(name, tmp))
    path.write_text(text)
    return str(path)


def prepare_tool(command: Command, cwd: Path) -> list[str]:
    """`python -m loadlib report|compare ...` for this interpreter, globs expanded in `cwd` as the shell would (a
    pattern that matches nothing stays as written); it runs in the load run's temporary directory, where the run's
    outputs (and documented files) sit under the names the doc gives them."""
    args: list[str] = []
    for arg in command.argv[1:]:
        matches = (
            sorted(str(p.relative_to(cwd)) for p in cwd.glob(arg))
            if any(c in arg for c in "*?[") and not arg.startswith("/")
            else []
        )
        args.extend(matches or [arg])
    return [sys.executable, *args]


def tool_inputs(tool: Command) -> list[str]:
    """The files a `python -m loadlib report|compare` command reads: its words that are neither options nor an
    output option's value (`-o`, `--markdown`), so `--pool pool.yaml` counts."""
    args = tool.argv[4:]
    return [a for i, a in enumerate(args) if not a.startswith("-") and (i == 0 or args[i - 1] not in OUTPUT_OPTIONS)]


def run_files(run: Command) -> list[str]:
    """The files a load test writes or reads by name (outputs and the pool file), `{worker}` / `{run_id}` filled in
    as a local run fills them, and the records `--llm-report` writes beside the report."""
    args = locust_args(run)
    files = [
        value for i, arg in enumerate(args) for name, eq, value in [arg.partition("=")] if eq and name in OUTPUT_OPTIONS
    ]
    files += [args[i + 1] for i, arg in enumerate(args[:-1]) if arg in (*OUTPUT_OPTIONS, "--llm-pool")]
    report = option_value(args, ("--llm-report",))
    if report:
        files.append(str(Path(report).with_name(f"{Path(report).stem}-records-local.jsonl")))
    return [f.replace("{worker}", "local").replace("{run_id}", "run") for f in files]


def produces(run: Command, tool: Command) -> bool:
    """Whether the tool reads a file the run names (a glob matching one counts): the tool reads that run's files."""
    files = run_files(run)
    return any(
        inp == f or (any(c in inp for c in "*?[") and fnmatch.fnmatch(f, inp))
        for inp in tool_inputs(tool)
        for f in files
    )


def producer(commands: Sequence[Command], tool: Command) -> Command | None:
    """The load test whose files a loadlib tool reads: the last one before it in its block that does, else the first
    in its doc (docs/comparison.md shows the comparison before the run that feeds it)."""
    runs = [c for c in commands if c.source == tool.source and is_load_test(c) and produces(c, tool)]
    before = [c for c in runs if c.block == tool.block and (c.line, c.argv) < (tool.line, tool.argv)]
    return (before or runs or [None])[-1 if before else 0]


def follow_ups(commands: Sequence[Command], run: Command) -> list[Command]:
    """The `python -m loadlib report|compare` commands of the run's doc that read its files (README: a run with
    `--llm-summary s.json`, then `report ... s.json`), in the doc's order."""
    return [c for c in commands if is_loadlib_tool(c) and producer(commands, c) == run]


def yaml_after(markdown: str, phrase: str) -> str | None:
    """The first ```yaml block after the line holding `phrase`: a file the docs give in full (a pool file)."""
    position = markdown.find(phrase)
    if position < 0:
        return None
    first_line = markdown.count("\n", 0, position) + 1
    for block in fenced_blocks(markdown):
        if block.lang == "yaml" and block.first_line > first_line:
            return "\n".join(block.lines) + "\n"
    return None


def workers_for(commands: Sequence[Command], master: Command) -> tuple[Command, int] | None:
    """The worker command that goes with a `--master` run in its block, and how many the doc starts: the words of a
    `for i in 1 2 3 4; do ... --worker ... & done` loop on its line, else one per worker line."""
    workers = [
        c
        for c in commands
        if c.source == master.source and c.block == master.block and is_load_test(c) and has_flag(c.argv, "--worker")
    ]
    if not workers:
        return None
    loops = [c for c in commands if c.line == workers[0].line and c.block == master.block and c.argv[:1] == ("for",)]
    count = len(loops[0].argv) - 3 if loops and "in" in loops[0].argv else len(workers)
    return workers[0], max(count, 1)


def prepare_master(command: Command, tmp: Path, port: int, workers: int, max_users: int = 10) -> Prepared:
    """A `--master` run prepared like any run, waiting for `workers` workers on `port` (a free one, not Locust's
    5557 that another run may hold)."""
    prepared = prepare(command, tmp, {}, max_users=max_users)
    args = with_option(prepared.argv[3:], ("--expect-workers",), str(workers))
    return Prepared([*prepared.argv[:3], *with_option(args, ("--master-bind-port",), str(port))], prepared.env)


def prepare_worker(command: Command, port: int) -> list[str]:
    """A `--worker` command for this interpreter, connecting to the master on `port`."""
    return [sys.executable, "-m", "locust", *with_option(locust_args(command), ("--master-port",), str(port))]


def prepare_mock(command: Command, port: int) -> list[str]:
    """A mock server command for this interpreter on `port` (a free one: the doc's 8000 may be taken)."""
    args = command.argv[1:] if command.argv[0] == "llm-mock" else command.argv[3:]
    return [sys.executable, "-m", "loadlib.mock", *with_option(list(args), ("--port",), str(port))]


def prepare_curl(command: Command, doc_port: int, port: int) -> list[str]:
    """A curl command pointed at the mock's `port` instead of the doc's `doc_port`, bounded (`--max-time`) and
    failing on an HTTP error (`--fail-with-body`: curl -s alone exits 0 on a 400, so a rejected call would pass)."""
    moved = [
        re.sub(rf"^((?:https?://)?(?:localhost|127\.0\.0\.1)):{doc_port}\b", rf"\g<1>:{port}", a) for a in command.argv
    ]
    return [moved[0], "--fail-with-body", "--max-time", "10", *moved[1:]]


def prepare_web_ui(command: Command, tmp: Path, port: int) -> Prepared:
    """A web UI command (no --headless) on 127.0.0.1:`port`, outputs in `tmp`: it serves until stopped, so the test
    asks its page and stops it."""
    args = with_option(with_option(locust_args(command), ("--web-port",), str(port)), ("--web-host",), "127.0.0.1")
    env = dict(command.env)
    if not has_flag(args, "--audit-file"):
        env["LLM_AUDIT_FILE"] = str(tmp / "results" / "audit-{run_id}.jsonl")
    return Prepared([sys.executable, "-m", "locust", *redirect_outputs(args, tmp)], env)
