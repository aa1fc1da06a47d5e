"""A load shape of your own: a spike. A quarter of the users for the first third of the run, all of them for the
second, a quarter again for the last; -u sets the peak and -t the length. Locust asks `tick()` once a second.

    locust -f examples/custom_shape.py --headless -u 8 -t 12s --csv results/spike --csv-full-history
"""

from locust import LoadTestShape, between, task

from loadlib import LLMUser

QUESTION = [{"role": "user", "content": "Is the store open on Sunday?"}]


class SpikeShape(LoadTestShape):
    use_common_options = True  # users (-u) and run time (-t) come from the command line or the web UI's form

    def tick(self) -> tuple[int, float] | None:
        options = self.runner.environment.parsed_options
        peak, length = options.num_users or 4, options.run_time or 60
        elapsed = self.get_run_time()
        if elapsed >= length:
            return None  # the end of the run
        in_spike = length / 3 <= elapsed < 2 * length / 3
        users = peak if in_spike else max(1, peak // 4)
        return users, peak  # the user count to reach, and how many users to start (or stop) per second


class ShopperUser(LLMUser):
    scenario = "spike"
    wait_time = between(0.1, 0.3)

    @task
    def ask(self) -> None:
        self.chat(QUESTION)
