"""Benchmark user: back-to-back streams with no think time and one fixed prompt (what the reference client does)."""

from locust import constant, task

from loadlib.locust.user import LLMUser

PROMPT = [{"role": "user", "content": "Tell me about load testing."}]


class BenchUser(LLMUser):
    scenario = "bench"
    wait_time = constant(0)

    @task
    def stream(self) -> None:
        self.chat(PROMPT, prompt_tokens_est=13)
