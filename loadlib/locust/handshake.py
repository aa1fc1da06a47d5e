"""Workers that would measure something else are refused at join (docs/metrics.md, "Run integrity").

Locust only warns when a worker runs another Locust version. Here each worker sends the master a fingerprint when it
starts: the loadlib version, a digest of its locustfile(s), and the measurement options it was *given* (on its
command line, in its environment or config file: anything other than the default). The master compares them with
its own and refuses a worker that differs with one line naming the difference (on both sides, the worker exits 2);
with --expect-workers the run waits for workers that match. A worker started without options is never refused for
them: it follows the master's values, which Locust sends with every start.
"""

from __future__ import annotations

import gevent

import hashlib
import importlib.metadata
import logging
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from loadlib.options import OPTIONS
from loadlib.settings import Options, option_values, options_of

log = logging.getLogger("loadlib")
HELLO = "loadlib_hello"
REFUSED = "loadlib_refused"
HELLO_WAIT_S = 5.0
# options that change what is measured: where the requests go, what they ask, when an attempt counts as failed
MEASURED = tuple(
    o.dest
    for o in OPTIONS
    if o.dest in ("llm_provider", "llm_model", "llm_max_tokens", "llm_endpoint_name", "llm_pool")
    or o.dest.startswith("llm_timeout")
)
_DEFAULTS = {o.dest: o.default for o in OPTIONS}


def loadlib_version() -> str:
    """The installed version and a digest of loadlib's own source: a worker with edited code differs too."""
    try:
        version = importlib.metadata.version("loadlib")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    h = hashlib.sha256()
    root = Path(__file__).parents[1]  # loadlib/, without importing its facade from below it
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return f"{version}+{h.hexdigest()[:12]}"


def fingerprint(options: Options) -> dict[str, Any]:
    """What a node measures with: loadlib's version, its locustfiles' digest, its measurement options as given."""
    values = option_values(options)
    given = {k: values[k] for k in MEASURED}
    return {
        "loadlib": loadlib_version(),
        "locustfile": locustfile_digest(str(options.locust.locustfile or "")),
        "options": {k: v for k, v in given.items() if v not in (None, "", _DEFAULTS.get(k))},
    }


def locustfile_digest(spec: str) -> str:
    """SHA-256 over the contents of the comma-separated locustfiles (sorted by name), "" when none can be read."""
    h = hashlib.sha256()
    found = False
    for name in sorted(p.strip() for p in spec.split(",") if p.strip()):
        path = Path(name)
        if path.is_file():
            h.update(path.name.encode() + b"\0" + path.read_bytes())
            found = True
    return h.hexdigest()[:16] if found else ""


def mismatch(master: Mapping[str, Any], worker: Mapping[str, Any]) -> str | None:
    """The first difference that matters, as words, or None."""
    if worker.get("loadlib") != master.get("loadlib"):
        return f"it runs loadlib {worker.get('loadlib')}, the master {master.get('loadlib')}"
    theirs, ours = worker.get("locustfile"), master.get("locustfile")
    if theirs and ours and theirs != ours:
        return "its locustfile differs from the master's (another file or another version of it)"
    mine = master.get("options") or {}
    for key, value in sorted((worker.get("options") or {}).items()):
        if mine.get(key, _DEFAULTS.get(key)) != value:
            flag = "--" + key.replace("_", "-")
            return f"it was started with {flag} {value!r}, the master with {mine.get(key, _DEFAULTS.get(key))!r}"
    return None


def say_hello(environment: Any) -> None:
    """Worker: send the fingerprint and listen for a refusal."""
    runner = environment.runner
    runner.register_message(REFUSED, lambda msg, **__: _refused(environment, str(msg.data)))
    runner.send_message(HELLO, fingerprint(options_of(environment)))


class Gate:
    """Master: admits a worker into Locust's ready set only once its fingerprint matched. Locust counts a worker
    ready and hands it users (a rebalance, mid-run) as soon as it says `client_ready`, and a worker can say hello
    only after that message was acknowledged; so the gate acknowledges `client_ready` itself and holds it back
    until the hello came: a refused worker never gets a user, never counts towards --expect-workers, and never
    shrinks the others' share. A worker that says no hello within HELLO_WAIT_S (no loadlib in its locustfile) is
    admitted unchecked, with a warning; `await_hellos` holds the test's start (bounded) while any is held."""

    def __init__(self, environment: Any) -> None:
        self.runner = environment.runner
        self.own = fingerprint(options_of(environment))
        self.admitted: set[str] = set()
        self.held: dict[str, tuple[str, Any]] = {}  # node id -> its client_ready message, until its hello is checked
        self.on_refuse: Callable[[str, str], None] | None = None  # the run's ledger (loadlib.locust.workers)
        self._locust_handle = self.runner.handle_message
        self.runner.handle_message = self.handle

    def handle(self, client_id: str, msg: Any) -> None:
        """Every message from a worker, before Locust's own handling."""
        node = str(msg.node_id)
        if msg.type == HELLO:
            self.check(msg)
        elif msg.type == "client_ready" and msg.data and node not in self.admitted:
            self.hold(client_id, msg)
        elif msg.type == "quit" and node in self.held:
            del self.held[node]
        else:
            self._locust_handle(client_id, msg)

    def hold(self, client_id: str, msg: Any) -> None:
        """Acknowledge the worker (so it goes on to say hello) without making it ready."""
        node = str(msg.node_id)
        first = node not in self.held
        self.held[node] = (client_id, msg)
        index = self.runner.get_worker_index(client_id)
        self.runner.send_message("ack", client_id=client_id, data={"index": index})
        if first:
            gevent.spawn_later(HELLO_WAIT_S, self._admit_unchecked, node)

    def check(self, msg: Any) -> None:
        node = str(msg.node_id)
        why = mismatch(self.own, msg.data or {})
        if why is not None:
            self.refuse(node, why)
        else:
            self.admit(node)

    def admit(self, node: str) -> None:
        """Into Locust's ready set: Locust's own `client_ready` handling (a rebalance if the test runs)."""
        self.admitted.add(node)
        held = self.held.pop(node, None)
        if held is not None:
            self._locust_handle(*held)

    def _admit_unchecked(self, node: str) -> None:
        if node in self.held:
            log.warning("loadlib: worker %s said no hello within %.0f s: admitted unchecked", node, HELLO_WAIT_S)
            self.admit(node)

    def refuse(self, node_id: str, why: str) -> None:
        line = f"refused worker {node_id}: {why}; start it with the master's locustfile and options"
        log.error("loadlib: %s", line)
        self.held.pop(node_id, None)
        self.admitted.discard(node_id)
        _drop_ready(self.runner, node_id)
        if self.on_refuse is not None:
            self.on_refuse(node_id, why)
        self.runner.send_message(REFUSED, line, client_id=node_id)
        from locust.rpc import Message  # here: importing Locust patches the process (the pure parts stay plain)

        self.runner.server.send_to_client(Message("quit", None, node_id))

    def await_hellos(self, timeout_s: float = HELLO_WAIT_S) -> None:
        """Test start: wait (at most timeout_s) while a connected worker's hello is still awaited, so that it
        takes its users with the others instead of in a rebalance right after."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.held:
            gevent.sleep(0.05)


def _drop_ready(runner: Any, node_id: str) -> None:
    """A worker admitted unchecked and refused later: out of Locust's workers, its users onto the others."""
    node = runner.clients.pop(node_id, None)
    dispatcher = getattr(runner, "_users_dispatcher", None)
    if node is None or dispatcher is None:
        return
    from locust.runners import STATE_RUNNING

    dispatcher.remove_worker(node)
    if not dispatcher.dispatch_in_progress and runner.state == STATE_RUNNING:
        runner.start(runner.target_user_count, runner.spawn_rate)


def _refused(environment: Any, line: str) -> None:
    sys.stderr.write(f"error: {line}\n")
    sys.stderr.flush()
    environment.process_exit_code = 2
