"""A weighted mix of tasks: three quick questions for every long summary, each in a row of its own in the summary
(`scenario=`), plus a second user class, weighted like any Locust user class.

    locust -f examples/weighted_mix.py --headless -u 4 -r 4 -t 10s --llm-summary results/mix.json
"""

from locust import between, task

from loadlib import LLMUser

QUICK = [{"role": "user", "content": "What are your opening hours?"}]
REPORT = "Quarterly sales rose 4 % in the north and fell 2 % in the south; returns were flat. " * 20
SUMMARY = [{"role": "user", "content": "Summarise this report in five bullet points:\n" + REPORT}]


class ShopUser(LLMUser):
    weight = 3  # three of every four users are ShopUsers
    wait_time = between(0.1, 0.5)

    @task(3)
    def quick_question(self) -> None:
        self.chat(QUICK, max_tokens=32, scenario="quick")

    @task(1)
    def summarise(self) -> None:
        self.chat(SUMMARY, max_tokens=200, scenario="summary")


class AnalystUser(LLMUser):
    weight = 1
    scenario = "analyst"
    wait_time = between(0.5, 1.0)

    @task
    def long_summary(self) -> None:
        self.chat(SUMMARY, max_tokens=400)
