"""Every example of docs/writing-load-tests.md runs headless against the embedded mock and does what the doc says it
does, read from its own outputs: the summary (`--llm-summary`), the records (`--llm-records`) or Locust's CSV history.

Each example runs a few seconds with a few users, as its own Locust process (an example's options and its classes
belong to it alone); they go PARALLEL at a time from one module fixture, so the whole module costs about half the sum
of its runs. A test reads its own run's outcome.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loadlib.records.tokens import count_chat
from tests.integration.locust_runs import ROOT, headless, load, locust_cmd, run

pytestmark = pytest.mark.integration

PARALLEL = 2
SECONDS = 4


@dataclass(frozen=True)
class Example:
    """One run: the example file and its extra arguments (`{out}` is the run's temporary directory)."""

    file: str
    args: tuple[str, ...] = ()
    users: int = 2
    seconds: int = SECONDS


@dataclass
class Outcome:
    code: int
    output: str
    out: Path

    def summary(self) -> dict[str, Any]:
        return load(self.out / "summary.json")

    def rows(self) -> dict[str, dict[str, Any]]:
        return {row["scenario"]: row for row in self.summary()["rows"]}

    def records(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (self.out / "records.jsonl").read_text().splitlines()]


EXAMPLES = {
    "own_prompts": Example("own_prompts.py", ("--llm-records", "{out}/records.jsonl")),
    "own_prompts_bad_file": Example("own_prompts.py", ("--prompts-file", "{out}/bad.jsonl")),
    "custom_check": Example(  # short answers: the threshold needs 20 requests to be judged, even on a busy machine
        "custom_check.py",
        ("--llm-threshold", "error_rate{class=truncated} < 5%", "--llm-max-tokens", "16", "--llm-mock", "itl_ms=2"),
    ),
    "tool_calling": Example("tool_calling.py", ("--llm-provider", "anthropic")),  # the doc runs it on OpenAI
    "multi_turn": Example("multi_turn.py", ("--llm-records", "{out}/records.jsonl"), seconds=5),
    "weighted_mix": Example("weighted_mix.py", users=4),
    "custom_shape": Example("custom_shape.py", ("--csv", "{out}/spike", "--csv-full-history"), users=4, seconds=6),
}
BAD_LINE = '{"promt": "a typo in the field name"}'


def run_example(example: Example, out: Path) -> Outcome:
    (out / "bad.jsonl").write_text('{"prompt": "fine"}\n' + BAD_LINE + "\n")
    args = [a.replace("{out}", str(out)) for a in example.args]
    cmd = locust_cmd(
        *headless(example.users, example.seconds),
        "--llm-summary",
        str(out / "summary.json"),
        *args,
        locustfile=f"examples/{example.file}",
    )
    done = run(cmd, timeout=60)
    return Outcome(done.returncode, done.stdout + done.stderr, out)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Outcome]]:
    dirs = {name: tmp_path_factory.mktemp(name) for name in EXAMPLES}
    with ThreadPoolExecutor(PARALLEL) as pool:
        futures = {name: pool.submit(run_example, example, dirs[name]) for name, example in EXAMPLES.items()}
        yield {name: future.result() for name, future in futures.items()}


def ran(outcomes: dict[str, Outcome], name: str, code: int = 0) -> Outcome:
    outcome = outcomes[name]
    assert outcome.code == code, f"examples/{EXAMPLES[name].file} exited {outcome.code}\n{outcome.output[-3000:]}"
    return outcome


def test_own_prompts_come_from_the_jsonl_file(outcomes: dict[str, Outcome]) -> None:
    outcome = ran(outcomes, "own_prompts")
    assert outcome.rows()["own_prompts"]["ok"] > 0
    lines = [json.loads(line) for line in (ROOT / "examples" / "prompts.jsonl").read_text().splitlines()]
    counts = {count_chat(messages(line)) for line in lines}
    sent = {r["prompt_tokens_est"] for r in outcome.records()}
    assert sent <= counts and len(sent) >= 2, (sent, counts)


def messages(line: dict[str, Any]) -> list[dict[str, str]]:
    system = [{"role": "system", "content": line["system"]}] if "system" in line else []
    return [*system, {"role": "user", "content": line["prompt"]}]


def test_a_bad_prompts_file_stops_the_run_at_start_up_naming_its_line(outcomes: dict[str, Outcome]) -> None:
    outcome = ran(outcomes, "own_prompts_bad_file", code=2)
    assert "bad.jsonl:2: every line needs a 'prompt' string" in outcome.output


def test_the_custom_check_class_feeds_the_threshold(outcomes: dict[str, Outcome]) -> None:
    outcome = ran(outcomes, "custom_check", code=99)
    assert outcome.rows()["custom_check"]["errors"].get("truncated", 0) > 0
    [threshold] = outcome.summary()["thresholds"]
    assert threshold["expression"] == "error_rate{class=truncated} < 5%" and threshold["passed"] is False


def test_tool_calls_are_requested_checked_and_answered(outcomes: dict[str, Outcome]) -> None:
    rows = ran(outcomes, "tool_calling").rows()
    calls, answers = rows["tool_call"], rows["tool_answer"]
    assert calls["ok"] > 0 and calls["errors"] == {}, calls["errors"]  # every answer called get_weather with a city
    assert answers["ok"] > 0


def test_multi_turn_sends_the_growing_history(outcomes: dict[str, Outcome]) -> None:
    done = [r for r in ran(outcomes, "multi_turn").records() if r["status"] == "ok"]
    prompt = {r["turn"]: r["prompt_tokens"] for r in done}
    assert sorted(prompt) == [1, 2, 3], prompt
    assert prompt[1] < prompt[2] < prompt[3]


def test_the_weighted_mix_runs_every_task_in_its_row(outcomes: dict[str, Outcome]) -> None:
    rows = ran(outcomes, "weighted_mix").rows()
    assert set(rows) == {"quick", "summary", "analyst"}
    assert all(rows[name]["ok"] > 0 for name in rows), rows  # the 3:1 task weights are Locust's (random) choice


def test_the_custom_shape_spikes_and_comes_back(outcomes: dict[str, Outcome]) -> None:
    outcome = ran(outcomes, "custom_shape")
    with (outcome.out / "spike_stats_history.csv").open() as f:
        users = [int(r["User Count"]) for r in csv.DictReader(f) if r["Name"] == "Aggregated"]
    peak = users.index(4)
    assert 1 in users[:peak] and 1 in users[peak:], users
    assert outcome.rows()["spike"]["ok"] > 0
    # the spike's end cuts attempts off; a plain chat() gives no prompt count, and they are priced all the same
    total = outcome.summary()["total"]
    assert total["cut_off"] > 0 and total["unpriced_requests"] == 0, total


def test_every_example_file_is_run_here() -> None:
    files = {path.name for path in (ROOT / "examples").glob("*.py")}
    assert files == {example.file for example in EXAMPLES.values()}
