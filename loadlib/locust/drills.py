"""Drills driven from the master (or the local runner), so every worker sees the same outage at the same time
(docs/failover.md, "Drills").

At each drill's start the driver breaks the endpoint: a mock endpoint (embedded, or one with an `admin_url`) through
its admin API (`POST /mock/fault`, which also ends the fault by itself when the window is over), any other endpoint
on the client side, by telling every worker to answer its attempts with the fault. Then it announces the drill to
every worker (their ledgers time detection and failover from it) and fires `drill_start`; at the end the same with
`drill_stop`. The pool's embedded mocks are started here too, before any load.
"""

from __future__ import annotations

import gevent
from locust.runners import MasterRunner

import json
import logging
import time
import urllib.request
from typing import Any

from loadlib.errors import ConfigError
from loadlib.failover.pool import DrillSpec, PoolConfig
from loadlib.mock import MockConfig, start_subprocess

log = logging.getLogger("loadlib.failover")
DRILL_MESSAGE = "loadlib_drill"
ADMIN_TIMEOUT_S = 3.0


def start_pool_mocks(pool: PoolConfig) -> dict[str, Any]:
    """Start one mock process per mock endpoint of the pool; their handles by endpoint name."""
    mocks: dict[str, Any] = {}
    try:
        for spec in pool.endpoints:
            if spec.is_mock:
                mocks[spec.name] = start_subprocess(MockConfig().with_overrides(spec.mock or {}))
    except Exception as exc:
        stop_mocks(mocks)
        raise ConfigError(f"the embedded mock of the pool could not start: {exc}") from None
    return mocks


def stop_mocks(mocks: dict[str, Any]) -> None:
    for mock in mocks.values():
        mock.stop()


class DrillDriver:
    """The schedule of one run: greenlets that start and stop each drill at its time from test start."""

    def __init__(self, ctx: Any, pool: PoolConfig, admin_urls: dict[str, str]) -> None:
        self.ctx = ctx
        self.pool = pool
        self.admin_urls = admin_urls
        self.greenlets: list[gevent.Greenlet] = []
        self.active: dict[int, DrillSpec] = {}

    def start(self) -> None:
        self.stop()
        for index, drill in enumerate(self.pool.drills, 1):
            self.greenlets.append(gevent.spawn_later(drill.at_s, self._begin, index, drill))
            self.greenlets.append(gevent.spawn_later(drill.at_s + drill.for_s, self._end, index, drill))

    def stop(self) -> None:
        """The test stops: no further drill starts; a drill in progress ends now (its mock recovers)."""
        gevent.killall(self.greenlets)
        self.greenlets.clear()
        for index, drill in list(self.active.items()):
            self._end(index, drill)

    def _begin(self, index: int, drill: DrillSpec) -> None:
        """The drill's start is taken before the mock is told, so no failure it causes can precede it."""
        at = time.time()
        admin = self.admin_urls.get(drill.endpoint)
        if admin is not None:
            self._post(admin, {"kind": drill.fault, "for_s": drill.for_s, **drill.params})
        self.active[index] = drill
        self._announce(index, drill, "start", admin is None, at)

    def _end(self, index: int, drill: DrillSpec) -> None:
        if self.active.pop(index, None) is None:
            return
        at = time.time()
        admin = self.admin_urls.get(drill.endpoint)
        if admin is not None:
            self._post(admin, {"kind": "none"})
        self._announce(index, drill, "stop", admin is None, at)

    def _announce(self, index: int, drill: DrillSpec, phase: str, client_side: bool, at: float) -> None:
        data = {
            "index": index,
            "phase": phase,
            "endpoint": drill.endpoint,
            "fault": drill.fault,
            "for_s": drill.for_s,
            "params": dict(drill.params),
            "client_side": client_side,
            "at": at,
        }
        runner = self.ctx.environment.runner
        if isinstance(runner, MasterRunner):
            runner.send_message(DRILL_MESSAGE, data)
        self.ctx.failover.drill(data)
        side = "client-side" if client_side else "on the server"
        what = f"drill {index}: {drill.endpoint} {drill.fault} {side}"
        message = f"{what} for {drill.for_s:g} s" if phase == "start" else f"{what} over"
        self.ctx.events.endpoint_event.fire(kind=f"drill_{phase}", endpoint=drill.endpoint, message=message)

    def _post(self, admin: str, body: dict[str, Any]) -> None:
        """Call the mock's admin API; a failure is logged (a refusing mock cannot be told to stop: it recovers by
        itself when its window ends)."""
        req = urllib.request.Request(
            admin.rstrip("/") + "/mock/fault",
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=ADMIN_TIMEOUT_S) as resp:
                resp.read()
        except OSError as exc:
            if body.get("kind") != "none":
                log.error("loadlib: drill could not reach the admin API at %s: %s", admin, exc)
