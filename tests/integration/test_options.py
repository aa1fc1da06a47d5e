"""Every documented option is accepted by chat.py and by a scenario locustfile, from the command line and from its
environment variable, and reaches the parsed options with its value (a real Locust process each time)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from loadlib.option import Option
from loadlib.options import OPTIONS
from tests.integration.locust_runs import ROOT, env, locust_cmd

pytestmark = pytest.mark.integration

LOCUSTFILES = ["locustfiles/chat.py", "locustfiles/support_chat.py"]


def samples(tmp: Path) -> dict[str, str]:
    """A valid value for every option, as it would be typed; paths land in `tmp`."""
    prices = tmp / "prices.yaml"
    prices.write_text("models:\n  mock-llm: {input: 1.0, output: 2.0}\n")
    special = {
        "llm_provider": "openai",
        "llm_model": "mock-llm",
        "llm_api_key_env": "none",
        "llm_endpoint_name": "ep",
        "llm_price_table": str(prices),
        "llm_mock": "ttft_ms=5",
        "run_id": "opt-run",
        "llm_summary": str(tmp / "s.json"),
        "llm_records": str(tmp / "r-{worker}.jsonl"),
        "arrival_process": "constant",
        "scenario_slo": "off",
        "llm_request_slo": "ttft <= 1s",
        "data_cache_dir": str(tmp / "cache"),
        "chat_think_time": "0-1",
        "chat_sweep": "100,200",
        "doc_mode": "chunked",
        "doc_tokens": "4000",
        "doc_canary": "off",
        "audit_file": str(tmp / "audit.jsonl"),
        "influx_api": "v1",
        "influx_db": "db",
        "influx_rp": "autogen",
        "influx_org": "org",
        "influx_bucket": "bucket",
        "llm_policy": "weighted",
        "llm_max_attempts": "2",
        "llm_retry_budget": "0.5",
        "llm_hedge_after_ms": "250",
        "llm_drill": "ep:http_503@30s+5s",  # after the one-second run: it never fires
        "llm_confidence": "0.9",  # a level, between 0 and 1
        "llm_capacity_control": "rate",
        "llm_warmup": "2s",
        "llm_capacity_precision": "0.1",  # a share, between 0 and 1
        "llm_threshold": "requests >= 0",  # an empty value given is refused
        "llm_baseline": "tests/fixtures/summaries/chat_baseline.json",  # a summary with histograms
    }
    return {o.dest: special[o.dest] if o.dest in special else _changed(o) for o in OPTIONS if not o.flag_only}


def _changed(option: Option) -> str:
    """A value other than the default, of the option's type (so a value that did not arrive shows)."""
    if option.type is int:
        return str(int(option.default) + 1)
    if option.type is float:
        return str(float(option.default) + 1.5)
    return ""


def expected(option: Option, raw: str) -> Any:
    return option.type(raw) if option.type is not None and raw != "" else raw


def dump(locustfile: str, args: list[str], environ: dict[str, str], tmp: Path) -> dict[str, Any]:
    out = tmp / "dump.json"
    cmd = locust_cmd(
        "--headless", "-u", "1", "-t", "1s", *args, locustfile=f"{locustfile},tests/support/dump_options.py"
    )
    run_env = env(DUMP_OPTIONS=str(out), **environ)
    proc = subprocess.run(cmd, cwd=ROOT, env=run_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and out.exists(), proc.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("locustfile", LOCUSTFILES)
def test_every_option_on_the_command_line(locustfile: str, tmp_path: Path) -> None:
    values = samples(tmp_path)
    args = ["--host", "http://127.0.0.1:9/v1"]
    for option in OPTIONS:
        args += [option.flag] if option.flag_only else [option.flag, values[option.dest]]
    got = dump(locustfile, args, {}, tmp_path)
    for option in OPTIONS:
        want = True if option.flag_only else expected(option, values[option.dest])
        assert got[option.dest] == want, option.flag


@pytest.mark.parametrize("locustfile", LOCUSTFILES)
def test_every_option_from_its_environment_variable(locustfile: str, tmp_path: Path) -> None:
    values = samples(tmp_path)
    environ = {o.env_var: "true" if o.flag_only else values[o.dest] for o in OPTIONS}
    environ = {k: v for k, v in environ.items() if v != ""}  # an empty variable is the same as an unset one
    got = dump(locustfile, ["--host", "http://127.0.0.1:9/v1"], environ, tmp_path)
    for option in OPTIONS:
        if option.env_var in environ:
            want = True if option.flag_only else expected(option, values[option.dest])
            assert got[option.dest] == want, option.env_var
    assert os.environ.get("LLM_TIMEOUT_TOTAL") is None  # the test's own process is untouched
