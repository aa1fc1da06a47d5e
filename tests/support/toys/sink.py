"""A toy sink, the one module docs/extending.md ("A new output or sink") asks for: a node part that receives every
request's record and writes one JSON line for it, registered by name with an order among the built-in parts.

It writes to the file named by the environment variable TOY_SINK_FILE (one per process; nothing when unset) and keeps
the records it received in memory, where a unit test reads them."""

from __future__ import annotations

import os
from typing import IO, Any

import orjson

from loadlib.locust.part_registry import register_part, unregister_part
from loadlib.locust.parts import Node, NodePart
from loadlib.records.record import RequestRecord

NAME = "toy_sink"
ORDER = 450  # after the InfluxDB sink (400), before the scenario results (500)


class ToySink(NodePart):
    """Every record of this node, in memory and (with TOY_SINK_FILE) as a JSON line each."""

    def __init__(self) -> None:
        self.records: list[RequestRecord] = []
        self.file: IO[bytes] | None = None

    def start(self, ctx: Node) -> None:
        path = os.environ.get("TOY_SINK_FILE")
        self.file = open(path, "ab") if path else None  # noqa: SIM115  closed at stop

    def add(self, record: RequestRecord) -> None:
        self.records.append(record)
        if self.file is not None:
            line = {"request_id": record.request_id, "scenario": record.scenario, "status": str(record.status)}
            self.file.write(orjson.dumps(line) + b"\n")

    def stop(self, ctx: Node) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


def register() -> None:
    """Give every run context made from now on a toy sink (a locustfile calls this when it is imported)."""
    register_part(NAME, ORDER, lambda ctx: ToySink())


def unregister() -> None:
    unregister_part(NAME)


def of(ctx: Any) -> ToySink:
    """The toy sink of a run context."""
    sink: ToySink = ctx.named(NAME)
    return sink
