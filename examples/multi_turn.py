"""Multi-turn conversations with state: each user keeps its conversation's history, sends it with every new turn,
and starts a new conversation after the last turn or a failed one. The records carry each request's turn number.

    locust -f examples/multi_turn.py --headless -u 2 -r 2 -t 10s --llm-records results/turns.jsonl
"""

from locust import between, task

from loadlib import LLMUser

SYSTEM = {"role": "system", "content": "You are a patient support assistant for a bicycle shop."}
TURNS = [
    "My rear brake squeaks. What could it be?",
    "I cleaned the rim, it still squeaks. What next?",
    "How much would new brake pads cost at your shop?",
]


class ConversationUser(LLMUser):
    scenario = "multi_turn"
    wait_time = between(0.1, 0.3)  # think time between turns

    def on_start(self) -> None:
        self.history = [SYSTEM]  # the state: this user's conversation so far
        self.turn = 0

    @task
    def next_turn(self) -> None:
        self.history.append({"role": "user", "content": TURNS[self.turn]})
        reply = self.chat(self.history, turn=self.turn + 1)
        self.history.append({"role": "assistant", "content": reply.text})
        self.turn += 1
        if not reply.ok or self.turn == len(TURNS):
            self.on_start()  # a new conversation
