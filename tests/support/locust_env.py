"""Locust environments for unit tests of the integration: parsed options with loadlib's registry, and runners that
play a worker or the master without sockets."""

from __future__ import annotations

from locust.argument_parser import get_parser
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from typing import Any

from loadlib import options

HOST = "http://127.0.0.1:9/v1"


def parsed(*args: str) -> Any:
    """Locust's options plus loadlib's, parsed from `args` (no key needed: --llm-api-key-env none)."""
    parser = get_parser()  # has loadlib's options once loadlib's wiring is installed on Locust's events
    if "--llm-provider" not in parser._option_string_actions:
        options.add_arguments(parser)
    return parser.parse_args(["--llm-api-key-env", "none", *args])


class FakeWorkerRunner(WorkerRunner):
    def __init__(self, client_id: str) -> None:  # no connection to a master
        self.client_id = client_id
        self.greenlet = None


class FakeMasterRunner(MasterRunner):
    def __init__(self) -> None:  # no sockets
        self.greenlet = None


def environment(*args: str, runner: Any = None, user_classes: list[Any] | None = None) -> Environment:
    """An environment with loadlib's options; a local runner unless `runner` ("master" or a worker id) is given."""
    env = Environment(parsed_options=parsed(*args), host=HOST, user_classes=user_classes or [])
    if runner is None:
        env.create_local_runner()
    else:
        env.runner = FakeMasterRunner() if runner == "master" else FakeWorkerRunner(runner)
    return env
