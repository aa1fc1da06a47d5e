"""Support chat: multi-turn customer conversations with history, think time and a configurable system prompt.

    locust -f locustfiles/support_chat.py --headless -u 20 -r 5 -t 60s --llm-summary results/chat.json
    locust -f locustfiles/support_chat.py --headless -u 20 -r 20 -t 60s --chat-sweep on --chat-think-time 0.5
    locust -f locustfiles/support_chat.py,locustfiles/shapes.py --class-picker        # web UI, pick a shape

Options: --chat-turns, --chat-system-tokens, --chat-think-time, --chat-sweep, --chat-data-file, --arrival-rate
(see docs/scenarios.md). Without --host the embedded mock LLM server is the target.
"""

from loadlib.scenarios.support_chat import SupportChatUser

__all__ = ["SupportChatUser"]
