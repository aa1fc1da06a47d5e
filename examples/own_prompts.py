"""Prompts from your own JSONL file: one object per line, {"prompt": ..., "system": ..., "max_tokens": ...}.

    locust -f examples/own_prompts.py --headless -u 2 -r 2 -t 10s --llm-summary results/own_prompts.json
    locust -f examples/own_prompts.py --headless -u 2 -r 2 -t 10s --prompts-file my_prompts.jsonl

Without --prompts-file, the prompts.jsonl beside this file is sent.
"""

from locust import between, events, task

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loadlib import ConfigError, LLMUser, ScenarioSpec, count_chat, read_jsonl

DEFAULT_FILE = Path(__file__).with_name("prompts.jsonl")


@events.init_command_line_parser.add_listener
def add_options(parser: Any) -> None:
    parser.add_argument(
        "--prompts-file", default=str(DEFAULT_FILE), env_var="LOCUST_PROMPTS_FILE", help="JSONL file of prompts to send"
    )


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, str]]
    tokens: int  # counted once here, so no request spends time counting
    max_tokens: int | None


def to_prompt(where: str, line: dict[str, Any]) -> Prompt:
    if not isinstance(line.get("prompt"), str):
        raise ConfigError(f"{where}: every line needs a 'prompt' string")
    messages = [{"role": "user", "content": line["prompt"]}]
    if "system" in line:
        messages.insert(0, {"role": "system", "content": str(line["system"])})
    return Prompt(messages, count_chat(messages), line.get("max_tokens"))


def load_prompts(options: Any) -> list[Prompt]:
    """Runs once, before any request is timed (again only when the signature below changes); a bad line stops the
    run at start-up with its file:line."""
    path = options.prompts_file
    return [to_prompt(f"{path}:{number}", line) for number, line in read_jsonl(path)]


class OwnPromptsUser(LLMUser):
    scenario = "own_prompts"
    spec = ScenarioSpec(
        "own_prompts",
        prepare=load_prompts,
        validate=load_prompts,  # a master sends nothing, so it only checks the file
        signature=lambda options: (options.prompts_file,),
        slo=("ttft p95 < 2s", "error_rate < 1%"),
    )
    wait_time = between(0.1, 0.5)

    @task
    def ask(self) -> None:
        prompt = random.choice(self.data())
        self.chat(prompt.messages, prompt_tokens_est=prompt.tokens, max_tokens=prompt.max_tokens)
