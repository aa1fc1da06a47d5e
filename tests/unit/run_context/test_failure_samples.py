"""What the servers said, per error class, read from Locust's error report for the verdict of a run in which nothing
succeeded (loadlib.locust.verdict_part.failure_samples): exceptions on a local runner, their reprs on a master."""

from __future__ import annotations

from locust.stats import StatsError

from loadlib.locust.user import LLMRequestError
from loadlib.locust.verdict_part import failure_samples

LIMIT = "This model's maximum context length is 4096 tokens. However, your messages resulted in 8086 tokens."


def report(*entries: tuple[object, int]) -> dict[str, StatsError]:
    return {str(i): StatsError("mock", "chat", error, n) for i, (error, n) in enumerate(entries)}


def test_local_exceptions_and_a_masters_strings_give_the_commonest_message_per_class() -> None:
    local = report(
        (LLMRequestError(f"context_length_exceeded: {LIMIT}"), 3),
        (LLMRequestError("context_length_exceeded: a rarer wording"), 1),
        (LLMRequestError("http_5xx: upstream timed out"), 2),
    )
    expected = {"context_length_exceeded": LIMIT, "http_5xx": "upstream timed out"}
    assert failure_samples(local) == expected
    master = {k: StatsError.unserialize(v.serialize()) for k, v in local.items()}  # as workers ship them
    assert all(isinstance(e.error, str) for e in master.values())
    assert failure_samples(master) == expected


def test_what_is_no_attempts_failure_is_left_out() -> None:
    others = report((ValueError("a locustfile's bug"), 5), ("not a repr at all", 1), ("LLMRequestError(oops)", 1))
    assert failure_samples(others) == {}
