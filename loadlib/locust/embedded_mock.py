"""The embedded mock: without a --host (or LLM_BASE_URL), the master or local runner starts the mock LLM server and
targets it; workers follow the master's target. Its settings come from --llm-mock, checked before it starts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loadlib.config import NO_KEY
from loadlib.mock import MockConfig, parse_overrides, start_subprocess
from loadlib.providers import registry

if TYPE_CHECKING:
    from loadlib.locust.context import RunContext


def mock_config(spec: str) -> MockConfig:
    """The mock's configuration from `--llm-mock` ('ttft_ms=200,itl_ms=10'); ConfigError names a bad item."""
    return MockConfig().with_overrides(parse_overrides(spec or "", "--llm-mock"))


def start_embedded_mock(ctx: RunContext) -> Any:
    """Start the mock, point the run at it and return its handle (stop it at quit)."""
    opts = ctx.options
    mock = start_subprocess(mock_config(opts.llm_mock))
    base = registry.base_url_at(mock.url, opts.llm_provider)
    ctx.environment.host = base
    ctx.amend(  # travels with the options: a node that targets this URL targets the mock
        llm_mock_base=base,
        llm_api_key_env=opts.llm_api_key_env or NO_KEY,
        llm_endpoint_name=opts.llm_endpoint_name or "mock",
    )
    print(
        f"loadlib: no --host given, targeting the embedded mock LLM server at {base} (pass --host URL for a real "
        "endpoint)",
        flush=True,
    )
    return mock
