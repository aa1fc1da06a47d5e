"""bench/locustfile_bench.py with a probe of our own send: for each attempt, from t0 to the request's last byte handed
to the kernel. bench/streams_per_core.py uses it to tell the client's part of the TTFT error from the server's read
lag. The percentiles are written at the end to the file named by SEND_PROBE_OUT."""

from __future__ import annotations

from locust import events

import json
import os
from time import perf_counter
from typing import Any

import loadlib.locust.user as user_module
from bench.locustfile_bench import BenchUser  # noqa: F401  (the user class Locust runs)
from loadlib.mock.engine.sim import quantile
from loadlib.transport.connection import Connection

_SENT: list[float] = []
_send, _stream_call = Connection.send, user_module.stream_call


def _probed_send(conn: Connection, data: bytes, until: float) -> None:
    _send(conn, data, until)
    conn.sent_at = perf_counter()  # type: ignore[attr-defined]


def _probed_call(conn: Connection, *args: Any) -> Any:
    conn.sent_at = None  # type: ignore[attr-defined]
    outcome = _stream_call(conn, *args)
    if conn.sent_at is not None:  # type: ignore[attr-defined]
        _SENT.append((conn.sent_at - outcome.t0) * 1000.0)  # type: ignore[attr-defined]
    return outcome


Connection.send = _probed_send  # type: ignore[method-assign]
user_module.stream_call = _probed_call


@events.test_stop.add_listener
def _write(**_: Any) -> None:
    if _SENT and os.environ.get("SEND_PROBE_OUT"):
        figures = {"n": len(_SENT), "p50": quantile(_SENT, 0.5), "p99": quantile(_SENT, 0.99), "max": max(_SENT)}
        with open(os.environ["SEND_PROBE_OUT"], "w") as f:
            json.dump(figures, f)
