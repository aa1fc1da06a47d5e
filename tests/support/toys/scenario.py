"""A toy scenario, the one module docs/extending.md ("A new scenario") asks for: a user class, its ScenarioSpec with
its SLOs, and its section of the summary, with no list elsewhere to add it to.

Each user asks one short question after another; the scenario counts the answers and their characters, and the summary
gets a `toy_quiz` section with a line of its own in the printed block."""

from __future__ import annotations

from locust import task

from collections.abc import Mapping
from typing import Any

from loadlib.locust.scenario_part import ScenarioSpec
from loadlib.metrics.scenarios import ScenarioResults, Section, key, num
from loadlib.scenarios.base import ScenarioUser

NAME = "toy_quiz"
QUESTION = [{"role": "user", "content": "Name a prime number."}]


def answered(r: ScenarioResults, text: str) -> None:
    """One answered question: counted, with its characters."""
    r.count(key(NAME, "answers"))
    r.count(key(NAME, "chars"), len(text))


def summarize(r: ScenarioResults, summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """The toy's section of the summary; None when nothing was answered."""
    answers = r.counts.get(key(NAME, "answers"), 0)
    if not answers:
        return None
    return {"answers": answers, "chars_per_answer": round(r.counts.get(key(NAME, "chars"), 0) / answers, 1)}


def render(section: dict[str, Any]) -> list[str]:
    """The toy's line in the printed block after the LLM table."""
    return [f"{NAME}: {num(section['answers'])} answers, {num(section['chars_per_answer'])} characters each"]


SPEC = ScenarioSpec(NAME, slo=("error_rate < 50%",), results=Section(summarize, render))


class ToyQuizUser(ScenarioUser):
    """Asks, counts the answer, asks again (ScenarioUser's think time: none)."""

    scenario = NAME
    spec = SPEC

    @task
    def ask(self) -> None:
        reply = self.chat(QUESTION, max_tokens=8)
        if reply.ok:
            answered(self.found, reply.text)
