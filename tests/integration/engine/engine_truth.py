"""The engine's own account, for checking the suite's numbers against it: its Prometheus counters before and after a
run (the tier runs alone, so their difference is the run's), and a run of the suite against it."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.integration.engine.conftest import Engine
from tests.integration.locust_runs import locust_cmd, run

COUNTERS = (
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:request_success_total",
    "vllm:prefix_cache_hits_total",
    "vllm:time_to_first_token_seconds_sum",
    "vllm:time_to_first_token_seconds_count",
)


def counters(engine: Engine) -> dict[str, float]:
    """The engine's counters, each summed over its label sets (finish reasons, engines)."""
    with urllib.request.urlopen(engine.metrics_url, timeout=30) as resp:
        text = resp.read().decode()
    out = dict.fromkeys(COUNTERS, 0.0)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in out:
                out[sample.name] += sample.value
    return out


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in before}


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def suite_run(
    engine: Engine, out: Path, *args: str, locustfile: str = "locustfiles/chat.py", timeout: float = 180
) -> subprocess.CompletedProcess:
    """A headless run of `locustfile` against the engine writing its records and summary into `out`. Users finish
    the request they are in at the end (--stop-timeout): no attempt is cut off, so the engine's counters and the
    records describe the same requests."""
    cmd = locust_cmd(
        *("--headless", "--stop-timeout", "60", "--host", engine.url, "--llm-model", engine.model),
        *("--llm-api-key-env", "none", "--llm-records", str(out / "records.jsonl")),
        *("--llm-summary", str(out / "summary.json")),
        *args,
        locustfile=locustfile,
    )
    return run(cmd, timeout=timeout)


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def tokenize(engine: Engine, messages: Sequence[dict]) -> int:
    """The engine's count of a chat prompt (its chat template included): vLLM's /tokenize."""
    return int(engine.post("/tokenize", {"model": engine.model, "messages": list(messages)})["count"])
