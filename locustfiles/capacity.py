"""The capacity search on the chat workload: the largest number of users the endpoint carries with TTFT p95 under
500 ms and under 1 % errors, found in one run (docs/capacity.md).

    locust -f locustfiles/capacity.py --headless --llm-mock engine=batching --llm-summary results/capacity.json

Any locustfile can search the same way: import `CapacityShape` (loadlib.locust.capacity_shape) beside its users;
`--llm-threshold` adds SLOs, `--llm-capacity-min 40` makes the run a CI gate (exit code 99 below 40 users).
"""

from locust import constant

import chat  # locustfiles/chat.py: Locust puts the locustfile's directory on the path

from loadlib.locust.capacity_shape import CapacityShape
from loadlib.locust.scenario_part import ScenarioSpec

__all__ = ["CapacityChatUser", "CapacityShape"]


class CapacityChatUser(chat.ChatUser):
    """The chat user back to back (a user is one concurrent stream, as the mock's answer key counts them), judged by
    the capacity SLO: the first token within 500 ms for 95 % of requests."""

    wait_time = constant(0)
    spec = ScenarioSpec("chat", slo=("ttft p95 < 500ms", "error_rate < 1%"))
