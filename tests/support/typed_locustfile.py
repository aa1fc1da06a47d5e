"""A locustfile typed as a user's would be, checked by mypy with the strict settings (tests/unit/test_typing.py): the
public names (`from loadlib import ...`) reach a type checker with their own types, not as `Any` through the
package's lazy imports, so a subclass of LLMUser and what `chat` returns are checked in a user's code too."""

from __future__ import annotations

from locust import task

from typing import assert_type

from loadlib import ErrorClass, LLMUser, Reply, RequestRecord, ScenarioSpec, StreamResult, count_chat

QUESTION = [{"role": "user", "content": "Is the store open on Sunday?"}]


def short_answer(result: StreamResult | None, record: RequestRecord) -> tuple[ErrorClass, str] | None:
    """A check: an answer under three words is a failure of its own class."""
    words = len(result.text.split()) if result is not None else 0
    return (ErrorClass.EMPTY_RESPONSE, "under three words") if words < 3 else None


class TypedUser(LLMUser):
    scenario = "typed"
    spec = ScenarioSpec("typed", slo=("ttft p95 < 2s",))

    @task
    def ask(self) -> None:
        reply = self.chat(QUESTION, prompt_tokens_est=count_chat(QUESTION), check=short_answer)
        assert_type(reply, Reply)
        assert_type(reply.text, str)
        assert_type(reply.record, RequestRecord)
