"""Mock OpenAI/Anthropic streaming LLM server: the default target, the fault-injection rig and the ground truth.

with start_subprocess(MockConfig(ttft_ms=20, itl_ms=5)) as mock:
    client = openai.OpenAI(base_url=mock.url + "/v1", api_key="x")
"""

from loadlib.mock.render import text as expected_text
from loadlib.mock.runner import MockHandle, MockProcess, MockStartError, start_in_thread, start_subprocess
from loadlib.mock.server import MockServer
from loadlib.mockapi.config import FAULTS, KEYS, MockConfig, MockConfigError, parse_overrides, resolve

__all__ = [
    "FAULTS",
    "KEYS",
    "MockConfig",
    "MockConfigError",
    "MockHandle",
    "MockProcess",
    "MockServer",
    "MockStartError",
    "expected_text",
    "parse_overrides",
    "resolve",
    "start_in_thread",
    "start_subprocess",
]
