"""Options are resolved once into a typed object (loadlib.settings.Options) and read from nowhere else by name: its
fields, their types and defaults are the registry's (loadlib.options), so an option added to one and not the other
fails here; and no module outside loadlib/settings.py reads Locust's namespace or an option by its name."""

from __future__ import annotations

import argparse
import re
import typing
from dataclasses import MISSING, fields, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from loadlib.option import Option
from loadlib.options import OPTIONS, add_arguments
from loadlib.settings import Carried, LocustOptions, Options, amend, option_values, options_of, resolve

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "loadlib" / "settings.py"
NOT_REGISTRY = ("locust", "carried", "extra")  # Locust's own options, what the master adds, a locustfile's own


def registry_type(option: Option) -> object:
    """The type an option's value has once parsed: a switch is a bool, a number its kind, anything else a string;
    None too when that is its default (the failover overrides: not given)."""
    kind: object = bool if option.flag_only else option.type if option.type in (int, float) else str
    return kind | None if option.default is None else kind


def test_the_fields_are_the_registrys_options_in_order() -> None:
    own = [f.name for f in fields(Options) if f.name not in NOT_REGISTRY]
    assert own == [o.dest for o in OPTIONS]


def test_each_field_has_the_registrys_type() -> None:
    hints = typing.get_type_hints(Options)
    assert {o.dest: hints[o.dest] for o in OPTIONS} == {o.dest: registry_type(o) for o in OPTIONS}


def test_the_one_default_of_each_option_is_the_registrys() -> None:
    own = [f for f in fields(Options) if f.name not in NOT_REGISTRY]
    assert all(f.default is MISSING and f.default_factory is MISSING for f in own)  # the class holds no second copy
    assert option_values(resolve(None)) == {o.dest: o.default for o in OPTIONS}
    assert option_values(resolve(argparse.Namespace())) == {o.dest: o.default for o in OPTIONS}


def test_a_parsed_namespace_resolves_to_the_same_values() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(_LocustLike(parser))
    namespace = parser.parse_args(["--influx-db", "metrics", "--chat-turns", "7", "--llm-cold-connect"])
    options = resolve(namespace)
    assert (options.influx_db, options.chat_turns, options.llm_cold_connect) == ("metrics", 7, True)
    assert option_values(options) == {o.dest: getattr(namespace, o.dest) for o in OPTIONS}


def test_locusts_own_options_the_carried_ones_and_a_locustfiles_own() -> None:
    namespace = SimpleNamespace(headless=True, num_users=4, llm_pool_urls={"a": "http://a"}, prompts_file="p.jsonl")
    options = resolve(namespace)
    assert options.locust == replace(LocustOptions(), headless=True, num_users=4)
    assert options.carried == Carried(llm_pool_urls={"a": "http://a"})
    assert dict(options.extra) == {"prompts_file": "p.jsonl"}
    assert options.prompts_file == "p.jsonl"  # as on Locust's namespace: a scenario's prepare(options) reads it
    with pytest.raises(AttributeError):
        options.no_such_option  # noqa: B018


def test_amend_writes_known_options_on_the_namespace_only() -> None:
    environment = SimpleNamespace(parsed_options=SimpleNamespace(run_id=""))
    amend(environment, run_id="r1", llm_pool_data={"endpoints": []}, only_summary=True)
    options = options_of(environment)
    assert (options.run_id, options.carried.llm_pool_data, options.locust.only_summary) == (
        "r1",
        {"endpoints": []},
        True,
    )
    with pytest.raises(KeyError, match="llm_modle"):
        amend(environment, llm_modle="x")


def test_no_module_but_the_settings_reads_an_option_by_name() -> None:
    names = {o.dest for o in OPTIONS} | {f.name for kind in (LocustOptions, Carried) for f in fields(kind)}
    option_name = "|".join(sorted(names))
    by_name = re.compile(
        r"parsed_options|getattr\(\s*(options|opts|ctx\.options)\b|\.extra\[|getattr\([^,()]+,\s*[\"']("
        + option_name
        + r")[\"']"
    )
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "loadlib").rglob("*.py"))
        if path != SETTINGS
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if by_name.search(line)
    ]
    assert found == [], "read options from the run context's typed `options` (loadlib.settings.Options):\n" + "\n".join(
        found
    )


class _LocustLike:
    """An argparse parser that takes Locust's keywords (`env_var`) as Locust's parser does."""

    def __init__(self, parser: Any) -> None:
        self.parser = parser

    def add_argument_group(self, title: str) -> _LocustLike:
        return _LocustLike(self.parser.add_argument_group(title))

    def add_argument(self, *flags: str, env_var: str = "", **kw: Any) -> argparse.Action:
        return self.parser.add_argument(*flags, **kw)
