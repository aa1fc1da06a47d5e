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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import loadlib
from loadlib.options import OPTIONS

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
    root = Path(loadlib.__file__).parent
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return f"{version}+{h.hexdigest()[:12]}"


def fingerprint(options: Any) -> dict[str, Any]:
    """What a node measures with: loadlib's version, its locustfiles' digest, its measurement options as given."""
    given = {k: getattr(options, k, None) for k in MEASURED}
    return {
        "loadlib": loadlib_version(),
        "locustfile": locustfile_digest(str(getattr(options, "locustfile", "") or "")),
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
    runner.send_message(HELLO, fingerprint(environment.parsed_options))


class Gate:
    """Master: checks every worker's fingerprint against its own. A worker's hello can arrive just after Locust
    counted it ready, so `await_hellos` holds the test's start (bounded) until each connected worker has been
    checked; a refused one is removed before any user is dispatched to it."""

    def __init__(self, environment: Any) -> None:
        self.runner = environment.runner
        self.own = fingerprint(environment.parsed_options)
        self.checked: set[str] = set()
        self.runner.register_message(HELLO, lambda msg, **__: self.check(msg))

    def check(self, msg: Any) -> None:
        self.checked.add(str(msg.node_id))
        why = mismatch(self.own, msg.data or {})
        if why is not None:
            self.refuse(msg.node_id, why)

    def refuse(self, node_id: str, why: str) -> None:
        line = f"refused worker {node_id}: {why}; start it with the master's locustfile and options"
        log.error("loadlib: %s", line)
        node = self.runner.clients.pop(node_id, None)  # not counted towards --expect-workers
        dispatcher = getattr(self.runner, "_users_dispatcher", None)
        if node is not None and dispatcher is not None:
            dispatcher.remove_worker(node)
        self.runner.send_message(REFUSED, line, client_id=node_id)
        from locust.rpc import Message  # here: importing Locust patches the process (the pure parts stay plain)

        self.runner.server.send_to_client(Message("quit", None, node_id))

    def await_hellos(self, timeout_s: float = HELLO_WAIT_S) -> None:
        """Test start: wait until every connected worker was checked (a worker too old to say hello: timeout_s)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and any(str(c.id) not in self.checked for c in self.runner.clients.all):
            gevent.sleep(0.05)


def _refused(environment: Any, line: str) -> None:
    sys.stderr.write(f"error: {line}\n")
    sys.stderr.flush()
    environment.process_exit_code = 2
