"""Where a hedge's loser and a hedge's win are counted (docs/failover.md, "Hedging"): the loser is an attempt, with
its cost, in the records and the LLM statistics as `cancelled`, never an error nor a Locust request; a request its
hedge won is `hedged_won`, never a failover, in the user-visible statistics and in a drill."""

from __future__ import annotations

from typing import Any

import pytest

from loadlib.errors import ErrorClass
from loadlib.failover.figures import drill_figures
from loadlib.failover.ledger import Ledger
from loadlib.failover.pool import Targets
from loadlib.metrics.stats import LLMStats
from loadlib.metrics.summary import build_summary
from loadlib.metrics.user_requests import UserRequestStats
from loadlib.records.user_request import UserRequest
from tests.support.records import make_record

LOSER = {"status": ErrorClass.CANCELLED, "e2e_ms": 130.0, "prompt_tokens_est": 40, "completion_tokens_est": 3}


def user_request(endpoint: str, hedged_won: bool, start_ns: int = 0) -> UserRequest:
    return UserRequest(
        "run", "chat", "w1", "r1", start_ns, "primary", endpoint, ErrorClass.OK, 2, 150.0, 130.0, True, hedged_won
    )


def test_a_cancelled_loser_is_an_attempt_with_its_cost_but_no_error() -> None:
    stats = LLMStats()
    stats.add(make_record(endpoint="primary", cost_usd=0.0002, **LOSER))
    stats.add(make_record(endpoint="primary", status=ErrorClass.HTTP_5XX))
    merged = LLMStats()
    merged.merge_serialized(stats.serialize())  # as a worker ships it
    row = build_summary(merged, 10.0, None, {})["rows"][0]
    assert (row["count"], row["ok"], row["cancelled"], row["errors_total"]) == (2, 0, 1, 1)
    assert row["errors"] == {"http_5xx": 1} and row["error_rate"] == 0.5
    assert row["cost_usd"] == 0.0002 and row["prompt_tokens"] == 40


def test_a_cancelled_loser_is_not_a_locust_request(user_with_events: Any) -> None:
    user, seen = user_with_events
    user._report(make_record(endpoint=user.settings.endpoint.name, **LOSER))
    user._report(make_record(endpoint=user.settings.endpoint.name))
    assert [kw["exception"] for kw in seen] == [None]  # the winner alone
    total = user.run_context.stats.stats.total
    assert (total.requests, total.cancelled, total.failed) == (2, 1, 0)


def test_a_request_its_hedge_won_is_not_a_failover() -> None:
    users = UserRequestStats()
    users.add(user_request("secondary", hedged_won=True))
    users.add(user_request("secondary", hedged_won=False))  # the primary failed: the hedge was all that was left
    summary = users.summary(attempts_counted=4)
    assert (summary["hedged"], summary["hedged_won"], summary["failed_over"]) == (2, 1, 1)
    assert not user_request("secondary", hedged_won=True).failed_over


def test_a_drill_where_only_hedges_won_has_no_failover_and_no_attempt_errors() -> None:
    ledger = Ledger()
    ledger.start(1000.0)
    ledger.drill_started(1, "primary", "latency", 1010.0)
    ledger.attempt("primary", True, 1011.0)  # the loser: failover_part passes a cancelled attempt as not failed
    ledger.attempt("secondary", True, 1011.0)
    ledger.user_request(1010.8, 1011.0, "primary", "secondary", True, 130.0, 2, True)
    ledger.drill_stopped(1, 1015.0)
    ledger.user_request(1015.8, 1016.0, "primary", "secondary", True, 130.0, 2, True)  # no failback either
    fig = drill_figures(ledger, Targets(failover_within_s=5.0, user_error_rate_max=None))[0]
    assert (fig["user_requests"], fig["user_errors"], fig["attempts"], fig["attempt_errors"]) == (1, 0, 2, 0)
    assert fig["failover_s"]["max"] is None and fig["failback_s"]["max"] is None
    assert fig["workers"] == ["local"] and not fig["passed"]  # exposed, never failed over: hedging masked it


# -- fixtures ----------------------------------------------------------------------------------------------------------


@pytest.fixture
def user_with_events() -> Any:
    """An LLMUser on a local environment and the Locust request events it fires. Locust monkey-patches the process
    on import: imported when the test runs, not when pytest collects."""
    from loadlib.locust import LLMUser
    from loadlib.locust.context import context
    from tests.support.locust_env import HOST, environment

    class Chat(LLMUser):
        host = HOST

    env = environment(user_classes=[Chat])
    context(env).start()
    seen: list[dict[str, Any]] = []
    env.events.request.add_listener(lambda **kw: seen.append(kw))
    return Chat(env), seen
