"""The cache probe through LiteLLM's proxy with its in-memory response cache in front of the mock: the probe reads
LiteLLM's own header (`x-litellm-cache-key`, sent on a cached answer only) and names the request fields that are in
LiteLLM's cache key, and no header.

LiteLLM is not a dependency of the suite (its proxy extra pulls some fifty packages): the test runs when
LOADLIB_LITELLM names a `litellm` executable (docs/gateway.md, "A gateway's response cache"; tested with 1.110.2) and
is skipped otherwise, saying so.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.request import urlopen

import pytest

from loadlib.mock import MockConfig, start_subprocess
from tests.integration.locust_runs import free_port, headless, load, locust_cmd, run

pytestmark = pytest.mark.integration
LITELLM = os.environ.get("LOADLIB_LITELLM", "")
CONFIG = """model_list:
  - model_name: mock-llm
    litellm_params: {{model: openai/mock-llm, api_base: "{base}", api_key: none}}
litellm_settings:
  cache: true
  cache_params: {{type: local}}
"""
IN_LITELLMS_KEY = {"temperature", "temperature_float", "top_p", "user_field", "prefix_whitespace", "prefix_order"}


@contextmanager
def litellm_proxy(base: str, tmp_path: Path) -> Iterator[str]:
    """LiteLLM's proxy on a free loopback port in front of `base`, no key, the local cost map (no download)."""
    config, port = tmp_path / "litellm.yaml", free_port()
    config.write_text(CONFIG.format(base=base))
    env = dict(
        os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY="true"
    )
    cmd = [LITELLM, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                urlopen(url + "/health/liveliness", timeout=1).read()
                break
            except OSError:
                time.sleep(0.5)
        assert proc.poll() is None, f"litellm exited with {proc.returncode}"
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


@pytest.mark.skipif(not LITELLM, reason="LiteLLM is not installed here: set LOADLIB_LITELLM to its executable")
def test_the_probe_names_what_busts_litellms_response_cache(tmp_path: Path) -> None:
    summary = tmp_path / "summary.json"
    with start_subprocess(MockConfig(ttft_ms=50, itl_ms=2)) as mock, litellm_proxy(mock.url + "/v1", tmp_path) as url:
        p = run(
            locust_cmd(
                *headless(1, 6),
                *("--host", url + "/v1", "--llm-api-key-env", "none", "--llm-summary", str(summary)),
                *("--llm-model", "mock-llm", "--cache-probe-doc-tokens", "512"),
                locustfile="locustfiles/cache_probe.py",
            ),
            timeout=60,
        )
    assert p.returncode == 0, p.stderr[-3000:]
    probe = load(summary)["scenarios"]["cache_probe"]
    assert probe["response_cache_source"] == "header" and probe["rounds"] >= 2
    assert set(probe["busts"]["response_cache"]) == IN_LITELLMS_KEY
    hits = {v["name"]: v["response_cache_hits"] for v in probe["variations"]}
    assert all(hits[n] > 0 for n in ("none", "anthropic_version", "custom_header", "request_id")), hits
    assert "busts the response cache: temperature, temperature_float, top_p, user_field" in p.stdout
