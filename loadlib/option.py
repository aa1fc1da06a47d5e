"""One option of the registry (loadlib.options) and the groups it is listed under: the type apart from the list, so
the registry module holds only the options themselves."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ENDPOINT = "LLM endpoint and requests"
LIMITS = "Time and size limits"
OUTPUT = "Outputs"
CLIENT = "Client health"
LOAD = "Load model (any scenario)"
DATA = "Scenario data"
CHAT = "Support chat scenario"
DOC = "Long-document scenario"
COMPLIANCE = "Compliance scenario"
CACHE = "Cache probe scenario"
SHAPES = "Load shapes (RampShape, StepShape)"
CAPACITY = "Capacity search (CapacityShape, docs/capacity.md)"
INFLUX = "InfluxDB sink"
FAILOVER = "Failover and drills (docs/failover.md)"


@dataclass(frozen=True)
class Option:
    """One option: its flag, default, type and help, the group it is listed under, and whether the web UI's start
    form offers it (paths and files are left to the command line)."""

    flag: str
    help: str
    group: str
    default: Any = ""
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] | None = None
    flag_only: bool = False  # a switch: present or absent (store_true)
    web_ui: bool = True
    repeatable: bool = False  # each occurrence adds to the list (JoinAction), none is silently dropped

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    @property
    def env_var(self) -> str:
        return "LLM_" + self.flag.removeprefix("--").removeprefix("llm-").replace("-", "_").upper()

    def kwargs(self) -> dict[str, Any]:
        """argparse keyword arguments (Locust's parser also reads `env_var` and `include_in_web_ui`)."""
        kw: dict[str, Any] = {"help": argparse_text(self.help), "default": self.default, "env_var": self.env_var}
        if self.flag_only:
            kw["action"] = "store_true"
        elif self.repeatable:
            kw["action"] = JoinAction
        else:
            kw.update({k: v for k, v in (("type", self.type), ("choices", self.choices)) if v is not None})
        return kw


class JoinAction(argparse.Action):
    """A repeatable option whose value stays one ';'-separated string: `--llm-threshold A --llm-threshold B` is
    'A; B'. argparse's default would keep only B, silently; a string (not a list) is what the web UI's form, the
    environment variable and locust.conf give, and what the master sends its workers. An empty value given on the
    command line or in the environment is refused (issue 21: a blank `--llm-threshold ''` ran unjudged); the web UI's
    blank field and the option's default do not come through here."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        if not str(values).strip():  # given on the command line or in the environment, so meant to hold something
            parser.error(f"{option_string} {values!r}: empty; give a value, or leave {option_string} out for none")
        before = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, f"{before}; {values}" if before and before != self.default else values)


def argparse_text(text: str) -> str:
    """argparse formats help with %: a literal percent sign (as in 'error_rate < 1%') must be doubled."""
    return text.replace("%", "%%")


def checked_by(parse: Callable[[str], object], flag: str) -> Callable[[str], str]:
    """An argparse type: the text as given when `parse` takes it, else its ValueError as one line of error (argparse
    exits 2 with it), without the `FLAG 'text': ` head argparse adds itself."""

    def check(text: str) -> str:
        try:
            parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix(f"{flag} {text!r}: ")) from None
        return text

    return check
