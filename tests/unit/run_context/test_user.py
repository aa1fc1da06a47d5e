"""LLMUser.chat on the real stream path (a canned server): one record per attempt, counted equally by Locust and by
loadlib, also when something of ours fails after the stream."""

from __future__ import annotations

from typing import Any

import pytest

from loadlib.errors import ErrorClass
from tests.support.wire import chunked, http_head, serving

EVENTS = [
    b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":"b"}}],"usage":{"prompt_tokens":5,"completion_tokens":2}}\n\n',
    b"data: [DONE]\n\n",
]


@pytest.fixture
def user_with() -> Any:
    """Locust monkey-patches the process on import: imported when these tests run, not when pytest collects."""
    from locust import task

    from loadlib.locust import LLMUser
    from loadlib.locust.context import context
    from tests.support.locust_env import HOST, environment

    class Chat(LLMUser):
        host = HOST

        @task
        def ask(self) -> None:
            self.chat([{"role": "user", "content": "hi"}])

    def make(pieces: list[bytes]) -> tuple[Any, list[dict[str, Any]]]:
        env = environment(user_classes=[Chat])
        context(env).start()
        seen: list[dict[str, Any]] = []
        env.events.request.add_listener(lambda **kw: seen.append(kw))
        user = Chat(env)
        user._connections[user.settings.endpoint.name] = serving(pieces)
        return user, seen

    return make


def test_a_request_is_one_record_for_locust_and_for_loadlib(user_with: Any) -> None:
    user, seen = user_with([http_head(transfer_encoding="chunked"), *chunked(*EVENTS)])
    reply = user.chat([{"role": "user", "content": "hi"}])
    assert reply.ok and reply.text == "ab" and reply.record.completion_tokens == 2
    assert len(seen) == 1 and seen[0]["exception"] is None and seen[0]["name"] == "chat"
    assert user.run_context.stats.stats.total.requests == 1


def test_a_request_is_in_flight_on_its_node_while_it_is_under_way(user_with: Any) -> None:
    """The capacity search's drain counts them (docs/capacity.md, "The drain")."""
    user, _ = user_with([http_head(transfer_encoding="chunked"), *chunked(*EVENTS)])
    seen: list[int] = []
    user.run_context.events.record.add_listener(lambda **_: seen.append(user.run_context.in_flight))
    user.chat([{"role": "user", "content": "hi"}])
    assert seen == [1] and user.run_context.in_flight == 0


def test_a_bug_after_the_stream_is_a_counted_internal_error(monkeypatch, user_with: Any) -> None:
    import loadlib.locust.user as module

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("oops")

    monkeypatch.setattr(module, "build_record", broken)
    user, seen = user_with([http_head(transfer_encoding="chunked"), *chunked(*EVENTS)])
    reply = user.chat([{"role": "user", "content": "hi"}])
    assert reply.record.status is ErrorClass.INTERNAL_ERROR and "KeyError" in reply.record.error_message
    assert len(seen) == 1 and seen[0]["exception"] is not None
    assert user.run_context.stats.stats.total.requests == 1


def test_a_cut_off_attempt_says_how_long_it_had_run_not_its_e2e() -> None:
    """An attempt whose [DONE] came 12 ms after it was sent, stopped 3 s later (it was waiting on its body's end):
    its message said `0.0 s after it was sent`, from its E2E."""
    import time

    from loadlib.locust.user import cut_off
    from loadlib.transport.stream import StreamOutcome

    out = StreamOutcome(status=ErrorClass.CANCELLED, e2e_ms=12.0)
    out.t0 = time.perf_counter() - 3.0
    out.output_stamps_ms.extend([5.0, 8.0])
    cut_off(out)
    assert out.status is ErrorClass.CUT_OFF
    assert out.message == (
        "cut off by the end of the run 3.0 s after it was sent, 2 output events in (its user was stopped)"
    )


def test_an_attempt_cut_off_before_it_went_out_says_so() -> None:
    """A user stopped as it spawned an attempt: the request never left, and its message said `0.0 s after it was
    sent` (seen against a real engine, whose counters then had one request fewer than the records)."""
    from loadlib.locust.user import cut_off, not_sent

    out = not_sent()
    cut_off(out)
    assert out.status is ErrorClass.CUT_OFF and out.response_bytes == 0
    assert out.message == "cut off by the end of the run before it was sent (its user was stopped)"
