"""LLMUser.chat on the real stream path (a canned server): one record per attempt, counted equally by Locust and by
loadlib, also when something of ours fails after the stream."""

from __future__ import annotations

from locust import task

from typing import Any

from loadlib.errors import ErrorClass
from loadlib.locust import LLMUser
from loadlib.locust.context import context
from tests.support.locust_env import HOST, environment
from tests.support.wire import chunked, http_head, serving

EVENTS = [
    b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":"b"}}],"usage":{"prompt_tokens":5,"completion_tokens":2}}\n\n',
    b"data: [DONE]\n\n",
]


class Chat(LLMUser):
    host = HOST

    @task
    def ask(self) -> None:
        self.chat([{"role": "user", "content": "hi"}])


def user_with(pieces: list[bytes]) -> tuple[Chat, list[dict[str, Any]]]:
    env = environment(user_classes=[Chat])
    context(env).start()
    seen: list[dict[str, Any]] = []
    env.events.request.add_listener(lambda **kw: seen.append(kw))
    user = Chat(env)
    endpoint = user.settings.endpoint
    user._connections[endpoint.name] = serving(pieces)
    return user, seen


def test_a_request_is_one_record_for_locust_and_for_loadlib() -> None:
    user, seen = user_with([http_head(transfer_encoding="chunked"), *chunked(*EVENTS)])
    reply = user.chat([{"role": "user", "content": "hi"}])
    assert reply.ok and reply.text == "ab" and reply.record.completion_tokens == 2
    assert len(seen) == 1 and seen[0]["exception"] is None and seen[0]["name"] == "chat"
    assert user.context.stats.stats.total.requests == 1


def test_a_bug_after_the_stream_is_a_counted_internal_error(monkeypatch) -> None:
    import loadlib.locust.user as module

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("oops")

    monkeypatch.setattr(module, "build_record", broken)
    user, seen = user_with([http_head(transfer_encoding="chunked"), *chunked(*EVENTS)])
    reply = user.chat([{"role": "user", "content": "hi"}])
    assert reply.record.status is ErrorClass.INTERNAL_ERROR and "KeyError" in reply.record.error_message
    assert len(seen) == 1 and seen[0]["exception"] is not None
    assert user.context.stats.stats.total.requests == 1
