"""The cache probe through LiteLLM's proxy with its in-memory response cache in front of the mock: the probe reads
LiteLLM's own header (`x-litellm-cache-key`, sent on a cached answer only) and names the request fields that are in
LiteLLM's cache key, and no header.

LiteLLM is not a dependency of the suite: scripts/test.sh installs the version pinned in tools/litellm/requirements.txt
into a venv of its own (tools/litellm/.venv) and points LOADLIB_LITELLM at its `litellm` (docs/gateway.md, "A
gateway's response cache"). Without it the test is skipped, saying so, and fails in CI, where it must run.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.request import Request, urlopen

import pytest

from loadlib.mock import MockConfig, start_subprocess
from tests.integration.locust_runs import ROOT, free_port, headless, load, locust_cmd, run

pytestmark = pytest.mark.integration
VENV = ROOT / "tools" / "litellm" / ".venv"
LITELLM = os.environ.get("LOADLIB_LITELLM") or (
    str(VENV / "bin" / "litellm") if (VENV / "requirements.txt").exists() else ""
)
CONFIG = """model_list:
  - model_name: mock-llm
    litellm_params: {{model: openai/mock-llm, api_base: "{base}", api_key: none}}
  - model_name: mock-llm-2026
    litellm_params: {{model: openai/mock-llm, api_base: "{base}", api_key: none}}
litellm_settings:
  cache: true
  cache_params: {{type: local}}
"""
IN_LITELLMS_KEY = {
    "model_alias",
    "temperature",
    "temperature_float",
    "top_p",
    "user_field",
    "prefix_whitespace",
    "prefix_order",
}


@contextmanager
def litellm_proxy(base: str, tmp_path: Path) -> Iterator[str]:
    """LiteLLM's proxy on a free loopback port in front of `base`, no key, the local cost map (no download). Its
    start imports for some 16 s on a quiet machine, several times that on a loaded one."""
    config, log, port = tmp_path / "litellm.yaml", tmp_path / "litellm.log", free_port()
    config.write_text(CONFIG.format(base=base))
    env = dict(
        os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY="true"
    )
    cmd = [LITELLM, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        up = wait_up(url + "/health/liveliness", proc, 150)
        assert up, f"litellm {'exited' if proc.poll() is not None else 'did not answer'}: {log.read_text()[-2000:]}"
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def wait_up(url: str, proc: subprocess.Popen, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            urlopen(url, timeout=2).read()
            return True
        except OSError:
            time.sleep(0.5)
    return False


def warm(url: str) -> None:
    """One request before the probe: LiteLLM sets up its upstream client on the first (~0.5 s), which would land in
    the first round's cold request, the baseline of every variation's TTFT saved."""
    body = json.dumps({"model": "mock-llm", "messages": [{"role": "user", "content": "warm up"}], "max_tokens": 4})
    req = Request(url + "/v1/chat/completions", body.encode(), {"content-type": "application/json"})
    urlopen(req, timeout=30).read()


def table(stdout: str) -> dict[str, list[str]]:
    """The console's "what busts the cache" table: its cells by variation."""
    lines = stdout[stdout.index("cache probe: what busts the cache") :].splitlines()[1:]
    rows = [re.split(r"\s{2,}", line.strip()) for line in itertools.takewhile(lambda x: "busts the" not in x, lines)]
    return {row[0]: row for row in rows}


def test_the_probe_names_what_busts_litellms_response_cache(tmp_path: Path) -> None:
    if not LITELLM:
        if os.environ.get("CI"):
            pytest.fail("no LiteLLM: scripts/test.sh installs it into tools/litellm/.venv (see its install.log)")
        pytest.skip("LiteLLM is not installed here: scripts/test.sh installs it, or set LOADLIB_LITELLM")
    summary = tmp_path / "summary.json"
    with start_subprocess(MockConfig(ttft_ms=20, itl_ms=1)) as mock, litellm_proxy(mock.url + "/v1", tmp_path) as url:
        warm(url)
        p = run(
            locust_cmd(
                *headless(1, 10),  # a round answers every variation once: at least one whole round on a busy machine
                *("--host", url + "/v1", "--llm-api-key-env", "none", "--llm-summary", str(summary)),
                *("--llm-model", "mock-llm", "--cache-probe-doc-tokens", "512"),
                *("--cache-probe-model-alias", "mock-llm-2026"),
                locustfile="locustfiles/cache_probe.py",
            ),
            timeout=90,
        )
    assert p.returncode == 0, p.stderr[-3000:]
    probe = load(summary)["scenarios"]["cache_probe"]
    assert probe["response_cache_source"] == "header" and probe["rounds"] >= 1
    assert set(probe["busts"]["response_cache"]) == IN_LITELLMS_KEY
    assert probe["busts"]["prompt_cache"] is None, "the mock without its engine caches no prefix"
    rows = table(p.stdout)
    assert list(rows) == ["variation", *(v["name"] for v in probe["variations"])]
    for v in probe["variations"]:
        hit = v["name"] not in IN_LITELLMS_KEY
        assert (v["response_cache_hits"] > 0) == hit and (v["response_cache_hits"] == v["answered"]) == hit, v
        assert rows[v["name"]][1:3] == [str(v["requests"]), f"{v['response_cache_hits']} {'kept' if hit else 'BUSTS'}"]
    said = ", ".join(v["name"] for v in probe["variations"] if v["name"] in IN_LITELLMS_KEY)
    assert f"busts the response cache: {said}" in p.stdout
