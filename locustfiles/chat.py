"""Streaming chat: each user asks short questions of the endpoint, back to back with a little think time.

    locust -f locustfiles/chat.py                      # web UI, embedded mock LLM as the target
    locust -f locustfiles/chat.py --headless -u 20 -r 10 -t 30s --llm-summary results/summary.json
    OPENAI_API_KEY=... locust -f locustfiles/chat.py --host https://api.openai.com/v1 --llm-model gpt-4o-mini

The richer scenarios (multi-turn support chat, long documents, compliance review) build on the same LLMUser.
"""

from locust import between, task

import itertools

from loadlib.locust import LLMUser
from loadlib.locust.scenario_part import ScenarioSpec
from loadlib.records import tokens

SYSTEM = "You are a concise, friendly support assistant for an online electronics store."
QUESTIONS = [
    "My order 4471 has not arrived yet. What can I do?",
    "How do I reset the password of my account?",
    "Can I return headphones I opened last week?",
    "Which laptop do you recommend for video editing under 1500 dollars?",
    "Do you ship to Norway, and how long does it take?",
    "My invoice shows the wrong VAT number. How do I get it corrected?",
]
PROMPTS = [[{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}] for q in QUESTIONS]
PROMPT_TOKENS = [tokens.count_chat(p) for p in PROMPTS]  # counted once, before any request is timed


# interactive chat: the first token within a second for 95 % of requests, under 1 % errors (docs/thresholds.md)
SPEC = ScenarioSpec("chat", slo=("ttft p95 < 1s", "error_rate < 1%"))


class ChatUser(LLMUser):
    scenario = "chat"
    spec = SPEC
    wait_time = between(0.05, 0.2)

    def on_start(self) -> None:
        self._next = itertools.cycle(range(len(PROMPTS)))

    @task
    def ask(self) -> None:
        i = next(self._next)
        self.chat(PROMPTS[i], prompt_tokens_est=PROMPT_TOKENS[i])
