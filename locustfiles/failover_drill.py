"""Failover drill: "our primary provider goes down at peak", rehearsed against two embedded mocks.

    locust -f locustfiles/failover_drill.py --headless -u 20 -r 20 -t 60s --llm-summary results/drill.json

The pool below starts two mock LLM servers (no configuration file, no API key). At 20 s the primary answers every
request with HTTP 503 for 20 s: each worker's circuit breaker opens after 5 consecutive failures, requests fail over
to the secondary (a failed attempt is retried there at once), the breaker probes the primary after its 5 s cool-down
and traffic fails back once the primary answers again. The summary prints the drill's figures (time to detect, to
fail over and to fail back, user-visible errors, TTFT before and after, traffic share) and a verdict against the
targets; `--llm-summary` writes them as JSON. Against real endpoints, give a pool file instead (--llm-pool, see
docs/failover.md): the same drill then breaks the endpoint on the client side.
"""

import gevent
from locust import constant_throughput, task

import itertools
import random

from loadlib.locust import LLMUser
from loadlib.records import tokens

QUESTIONS = [
    "My order 4471 has not arrived yet. What can I do?",
    "How do I reset the password of my account?",
    "Can I return headphones I opened last week?",
]
PROMPTS = [[{"role": "user", "content": q}] for q in QUESTIONS]
PROMPT_TOKENS = [tokens.count_chat(p) for p in PROMPTS]
RATE = 2.0  # requests per second and user

POOL = {
    "policy": "priority",
    "endpoints": [
        {"name": "primary", "mock": {"ttft_ms": 60, "itl_ms": 8, "output_tokens": 32}},
        {"name": "secondary", "priority": 2, "mock": {"ttft_ms": 150, "itl_ms": 12, "output_tokens": 32}},
    ],
    "breaker": {"failures": 5, "cooldown_s": 5, "probes": 2},
    "retry": {"max_attempts": 2, "budget": 0.5},
    "drills": [{"endpoint": "primary", "fault": "http_503", "at": "20s", "for": "20s"}],
    "targets": {"failover_within_s": 5, "user_error_rate_max": 0.02},
}


class FailoverDrillUser(LLMUser):
    scenario = "failover_drill"
    pool = POOL
    wait_time = constant_throughput(RATE)  # each user asks twice a second: a steady load across the outage

    def on_start(self) -> None:
        self._next = itertools.cycle(range(len(PROMPTS)))
        # users started together would fire together, and a drill could begin between their bursts with no stream
        # in flight: each user starts at a random point of its first period, spreading the requests evenly
        gevent.sleep(random.random() / RATE)

    @task
    def ask(self) -> None:
        i = next(self._next)
        self.chat(PROMPTS[i], prompt_tokens_est=PROMPT_TOKENS[i], max_tokens=32)
