"""The load-test commands the docs show, read out of README.md and docs/*.md, so a test can run each one as written.

Pure functions (no process, no network): `doc_commands` finds the shell commands in fenced code blocks (```bash,
sh, console, shell), `selection` says whether one can run here against the embedded mock (or why not), `prepare`
turns it into the argv a test runs: the same command with `-t 10s`, at most 10 users and every output file in a
temporary directory. tests/integration/test_doc_commands.py runs them; tests/unit/test_doc_commands_extract.py
checks the parsing.
"""

from __future__ import annotations

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
SECRET_NAME = re.compile(r"(KEY|TOKEN|PASSWORD|SECRET)$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


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


def strip_comment(line: str) -> str:
    """The line without its shell comment: a `#` at the start of a word, outside quotes (shlex would also cut
    `a#b`, which bash does not)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def tokens(line: str) -> list[str]:
    """Shell words and control operators (`&&`, `|`, `;`, `&`...) of one logical line; ValueError on an open quote."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def logical_lines(block: Block) -> Iterator[tuple[int, str]]:
    """(line number, text) of each command line: `\\` continuations, open quotes and a trailing `&&` / `||` / `|`
    join the next line; a console block keeps only `$ ` prompt lines (the rest is output)."""
    pending, start = "", 0
    for offset, raw in enumerate(block.lines):
        line = raw
        if block.lang == "console" and not pending:
            if not line.lstrip().startswith("$ "):
                continue
            line = line.lstrip()[2:]
        if not pending:
            start = block.first_line + offset
        text = strip_comment(line)
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        pending += text
        if _continues(pending):
            pending += " "
            continue
        if pending.strip():
            yield start, pending.strip()
        pending = ""
    if pending.strip():
        yield start, pending.strip()


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
    """The block's simple commands; `export A=b` lines are not commands but set A for the block's later ones."""
    exported: dict[str, str] = {}
    for line, text in logical_lines(block):
        for words, operator in split_commands(tokens(text)):
            env, argv = split_env(words)
            if argv[:1] == ["export"]:
                exported.update(split_env(argv[1:])[0])
                continue
            if argv:
                yield Command(source, line, index, tuple(argv), {**exported, **env}, operator == "&", text)


def doc_commands(markdown: str, source: str) -> list[Command]:
    """Every simple command in the document's shell blocks, in order."""
    found: list[Command] = []
    for index, block in enumerate(fenced_blocks(markdown)):
        if block.lang in SHELL_LANGS:
            found.extend(block_commands(block, source, index))
    return found


def is_load_test(command: Command) -> bool:
    """`locust ...`, `python -m locust ...` or `python3 -m locust ...`."""
    argv = command.argv
    return argv[:1] == ("locust",) or (
        bool(argv) and re.fullmatch(r"python(3(\.\d+)?)?", argv[0]) is not None and argv[1:3] == ("-m", "locust")
    )


def is_loadlib_tool(command: Command) -> bool:
    """`python -m loadlib report|compare ...`: reads a run's files, so it can follow a run in the same block."""
    argv = command.argv
    return (
        bool(argv)
        and re.fullmatch(r"python(3(\.\d+)?)?", argv[0]) is not None
        and argv[1:3] == ("-m", "loadlib")
        and argv[3:4] in (("report",), ("compare",))
    )


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


def shared_files(run: Command, tool: Command) -> set[str]:
    """File names a loadlib tool reads that the run names too: the tool follows the run in its block."""
    produced = {Path(arg).name for arg in run.argv[1:] if "." in Path(arg).name}
    return {Path(arg).name for arg in tool.argv[4:] if Path(arg).name in produced}


def follow_ups(commands: Sequence[Command], run: Command) -> list[Command]:
    """The `python -m loadlib report|compare` commands after `run` in its block that read a file `run` names
    (README: a run with `--llm-summary s.json`, then `report ... s.json`)."""
    return [
        c
        for c in commands
        if c.source == run.source
        and c.block == run.block
        and (c.line, c.argv) > (run.line, run.argv)
        and is_loadlib_tool(c)
        and shared_files(run, c)
    ]


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
