"""A worker's own options that the master's replace, said in one line on both sides instead of ignored in silence.

Locust parses a worker's command line, environment and config file, then, with each `spawn` message, overwrites
every custom option (all of loadlib's) and --expect-workers with the master's; -u, -r and -t a worker never uses.
So `--llm-records` given to a worker and not to its master writes nothing, without a word. Here the worker keeps a
copy of its own options from `init` (before any spawn can arrive: the master's gate admits it only after its hello),
and as a test starts compares what it was given (a value other than the default) with what the master sent: each
option that differs is named in one line on the worker, which also sends it to the master to print. Not those the
master too was started with (its options as started travel with the others, `options.carried`): a web UI's form
changed them on the master since, and a worker configured as its master was is not at fault. Options that change
what is measured never get this far: the handshake refuses such a worker at join (loadlib.locust.handshake).
"""

from __future__ import annotations

from locust.runners import STATE_RUNNING, STATE_SPAWNING

import logging
from dataclasses import asdict, dataclass
from typing import Any

from loadlib.options import OPTIONS
from loadlib.settings import LocustOptions, Options, option_values, options_of, sent_options

log = logging.getLogger("loadlib")
IGNORED = "loadlib_ignored"
# Locust's options loadlib reads that the master decides for its workers, by their flag
MASTERS = {"num_users": "-u", "spawn_rate": "-r", "run_time": "-t", "expect_workers": "--expect-workers"}
_FLAGS = {**{o.dest: o.flag for o in OPTIONS}, **MASTERS}
_DEFAULTS = {**{o.dest: o.default for o in OPTIONS}, **{k: asdict(LocustOptions())[k] for k in MASTERS}}


@dataclass(frozen=True)
class Ignored:
    """One option given to a worker and replaced by the master's."""

    flag: str
    given: Any
    used: Any


def values(options: Options) -> dict[str, Any]:
    """Every option a worker may be given and the master decides: loadlib's, and Locust's -u, -r, -t,
    --expect-workers."""
    locust = asdict(options.locust)
    return {**option_values(options), **{k: locust[k] for k in MASTERS}}


def given(options: Options) -> dict[str, Any]:
    """Those of `values` that are not at their default: what a node was started with."""
    return {k: v for k, v in values(options).items() if _given(v, _DEFAULTS[k])}


def ignored(own: Options, sent: Options) -> list[Ignored]:
    """The options a worker was given (other than their default) that differ from the master's, in registry order,
    then Locust's; not those the master too was started with (the web UI's form changed them on the master since)."""
    theirs = values(sent)
    started = sent.carried.llm_master_given
    return [
        Ignored(_FLAGS[k], v, theirs[k])
        for k, v in given(own).items()
        if v != theirs[k] and (started is None or v != started.get(k, _DEFAULTS[k]))
    ]


def _given(value: Any, default: Any) -> bool:
    return value not in (None, "", default)


def shown(value: Any) -> str:
    """An option's value as a line shows it: none, on/off, a number, a quoted string."""
    if value is None or value == "":
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    return repr(value) if isinstance(value, str) else str(value)


def _what(items: list[Ignored]) -> tuple[str, str, str]:
    """The flags, "is"/"are", "it"/"them" for one option or several."""
    flags = ", ".join(i.flag for i in items)
    return (flags, "is", "it") if len(items) == 1 else (flags, "are", "them")


def _masters(items: list[Ignored]) -> str:
    if len(items) == 1:
        return shown(items[0].used)
    return ", ".join(f"{i.flag} {shown(i.used)}" for i in items)


def worker_line(items: list[Ignored]) -> str:
    """`--llm-records given to this worker is ignored: the master's options decide (it has none); give it to the
    master`."""
    flags, verb, pronoun = _what(items)
    return (
        f"{flags} given to this worker {verb} ignored: the master's options decide (it has {_masters(items)}); "
        f"give {pronoun} to the master"
    )


def master_line(worker: str, items: list[Ignored]) -> str:
    """The master's line for a worker's report of its ignored options."""
    given = ", ".join(f"{i.flag} {shown(i.given)}" for i in items)
    _, verb, pronoun = _what(items)
    return (
        f"worker {worker} was given {given}, which {verb} ignored: the master's options decide (this master has "
        f"{_masters(items)}); give {pronoun} to the master"
    )


class OwnOptions:
    """A worker's own options, kept at init; at each test start (the `spawn` message that starts it, before Locust
    applies the master's options) the ones the master's replace are said here and sent to the master."""

    def __init__(self, environment: Any) -> None:
        self.own = options_of(environment)
        self.runner = environment.runner
        self._locust_handle = self.runner.handle_message
        self.runner.handle_message = self.handle

    def handle(self, msg: Any) -> None:
        if msg.type == "spawn" and self.runner.worker_state not in (STATE_RUNNING, STATE_SPAWNING):
            self.check(msg.data or {})
        self._locust_handle(msg)

    def check(self, job: dict[str, Any]) -> None:
        items = ignored(self.own, sent_options(job))
        if not items:
            return
        log.warning("loadlib: %s", worker_line(items))
        data = [[i.flag, i.given, i.used] for i in items]
        self.runner.send_message(IGNORED, data)


def install(ctx: Any) -> None:
    """At init: a worker keeps its own options; a master sends its workers those it was started with, and prints
    what they say of theirs."""
    if ctx.is_worker:
        OwnOptions(ctx.environment)
    elif ctx.is_master:
        ctx.amend(llm_master_given=given(ctx.options))
        ctx.environment.runner.register_message(IGNORED, lambda msg, **__: _said(str(msg.node_id), msg.data))


def _said(worker: str, data: Any) -> None:
    items = [Ignored(str(flag), given, used) for flag, given, used in data or ()]
    if items:
        log.warning("loadlib: %s", master_line(worker, items))
