"""A check of your own: an answer cut short by max_tokens counts as a failure of class `truncated`, and a threshold
on that class decides the run's exit code.

    locust -f examples/custom_check.py --headless -u 2 -r 2 -t 10s --llm-threshold 'error_rate{class=truncated} < 5%'

With --llm-max-tokens 16 the mock's answers (64 tokens) are cut short: the threshold fails and the run exits 99.
"""

from locust import task

from loadlib import ErrorClass, LLMUser, RequestRecord, StreamResult

QUESTION = [{"role": "user", "content": "Explain in a few sentences how I return a parcel."}]


def complete_answer(result: StreamResult | None, record: RequestRecord) -> tuple[ErrorClass, str] | None:
    """Called for every successful attempt; a (class, message) pair makes it a failure of that class."""
    if result is not None and result.finish_reason == "length":
        return ErrorClass.TRUNCATED, f"the answer hit max_tokens after {record.output_tokens} tokens"
    return None


class CheckedUser(LLMUser):
    scenario = "custom_check"

    @task
    def ask(self) -> None:
        reply = self.chat(QUESTION, check=complete_answer)
        if not reply.ok:
            return  # the failure is already counted: in the summary, Locust's Failures tab and the thresholds
