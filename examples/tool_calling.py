"""Tool (function) calling: the model is asked to call `get_weather`, a check makes sure it did, and the tool's result
goes back in a second request for the final answer, the two requests an agent's tool use costs.

    locust -f examples/tool_calling.py --headless -u 2 -r 2 -t 10s
    locust -f examples/tool_calling.py --headless -u 2 -r 2 -t 10s --llm-provider anthropic

Tools go in the request body through `extra_body`, in the provider's own format; the calls come back parsed, the same
for both providers, in `reply.result.tool_calls`.
"""

from locust import task

import json
from typing import Any

from loadlib import ErrorClass, LLMUser, RequestRecord, StreamResult

TOOL = "get_weather"
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
QUESTION = {"role": "user", "content": "Do I need an umbrella in Oslo today?"}


def tool_options(provider: str) -> dict[str, Any]:
    """The tool and a forced tool choice, in the provider's format."""
    if provider == "anthropic":
        return {
            "tools": [{"name": TOOL, "description": "Today's weather in a city", "input_schema": PARAMETERS}],
            "tool_choice": {"type": "tool", "name": TOOL},
        }
    function = {"name": TOOL, "description": "Today's weather in a city", "parameters": PARAMETERS}
    return {
        "tools": [{"type": "function", "function": function}],
        "tool_choice": {"type": "function", "function": {"name": TOOL}},
    }


def called_the_tool(result: StreamResult | None, record: RequestRecord) -> tuple[ErrorClass, str] | None:
    """The answer must be a call of the tool whose arguments are a JSON object with a city."""
    call = next((c for c in result.tool_calls if c.name == TOOL), None) if result else None
    if call is None:
        return ErrorClass.SCHEMA_INVALID, f"the model did not call {TOOL}"
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        return ErrorClass.SCHEMA_INVALID, f"{TOOL}'s arguments are not JSON"
    if not isinstance(arguments, dict) or "city" not in arguments:
        return ErrorClass.SCHEMA_INVALID, f"{TOOL} called without a city"
    return None


def tool_turn(provider: str, call_id: str, arguments: str, output: str) -> list[dict[str, Any]]:
    """The model's call and the tool's result, as the next request's messages (each provider has its own)."""
    if provider == "anthropic":
        use = {"type": "tool_use", "id": call_id, "name": TOOL, "input": json.loads(arguments)}
        result = {"type": "tool_result", "tool_use_id": call_id, "content": output}
        return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    call = {"id": call_id, "type": "function", "function": {"name": TOOL, "arguments": arguments}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call_id, "content": output},
    ]


class ToolUser(LLMUser):
    scenario = "tool_call"  # the first request's row; the second is named "tool_answer"

    @task
    def ask_with_tool(self) -> None:
        provider = self.environment.parsed_options.llm_provider
        first = self.chat([QUESTION], check=called_the_tool, extra_body=tool_options(provider))
        if not first.ok:
            return  # counted as schema_invalid (or the transport's error): no tool to run
        call = first.result.tool_calls[0]
        output = json.dumps({"forecast": "rain", "temperature_c": 9})
        messages = [QUESTION, *tool_turn(provider, call.id or "call_1", call.arguments, output)]
        self.chat(messages, scenario="tool_answer", extra_body={"tools": tool_options(provider)["tools"]})
