"""Endpoint and run settings: one place, validated at start-up with one-line errors (docs/options.md).

Precedence is Locust's own: defaults < config file (locust.conf / pyproject [tool.locust]) < environment variables
< command line, because every option here is added to Locust's parser (so it also shows in the web UI). Secrets are
read from the environment only: an option names the variable, never holds the key.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from loadlib.errors import ConfigError
from loadlib.providers import registry

NO_KEY = "none"


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds. Each one maps to its own error class (timeout_connect, timeout_ttft, timeout_idle, timeout_total)."""

    connect: float = 10.0
    ttft: float = 60.0
    idle: float = 30.0
    total: float = 600.0

    def __post_init__(self) -> None:
        for name in ("connect", "ttft", "idle", "total"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or value <= 0:
                raise ConfigError(f"timeout {name} must be a positive number of seconds, got {value!r}")


@dataclass(frozen=True, slots=True)
class Limits:
    """Size caps of one response, in bytes: a line, an event, the whole response, its head. Crossing one ends the
    request as `oversized` and closes the connection, so whatever a server sends, a stream's memory stays bounded."""

    line: int = 4 << 20
    event: int = 8 << 20
    response: int = 128 << 20
    head: int = 64 << 10  # status line and header section (interim 1xx heads included): --llm-max-head-kb
    text: int = 1 << 20  # output characters a parser keeps (loadlib.providers.kept): --llm-max-text-kb

    def __post_init__(self) -> None:
        for name in ("line", "event", "response"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1024:
                raise ConfigError(f"--llm-max-{name}-mb must be at least 0.001 (1 KiB), got {value / (1 << 20):g}")
        for name in ("head", "text"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1024:
                raise ConfigError(f"--llm-max-{name}-kb must be at least 1, got {value / 1024:g}")

    @classmethod
    def from_mb(cls, line: float, event: float, response: float, head_kb: float = 64, text_kb: float = 1024) -> Limits:
        line_b, event_b, response_b = (int(v * (1 << 20)) for v in (line, event, response))
        return cls(line_b, event_b, response_b, int(head_kb * 1024), int(text_kb * 1024))


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One target: a provider speaking at a base URL, with a model and a key taken from the environment."""

    name: str
    provider: str
    base_url: str
    model: str
    api_key_env: str | None
    scheme: str
    host: str
    port: int
    base_path: str

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def __repr__(self) -> str:  # never show a key, only where it comes from
        return (
            f"Endpoint({self.name!r}, {self.provider}, {self.base_url}, model={self.model!r}, key=${self.api_key_env})"
        )


def parse_base_url(url: str) -> tuple[str, str, int, str]:
    """(scheme, host, port, path) of an http(s) base URL, or a ConfigError that says what is wrong."""
    if not url or not isinstance(url, str):
        raise ConfigError("base URL is empty: give one like http://127.0.0.1:8000/v1")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"malformed base URL {url!r}: {exc}") from None
    if parts.username or parts.password:
        raise ConfigError(
            "base URL must not carry credentials (they would end up in logs and reports): "
            "put the key in an environment variable named by --llm-api-key-env"
        )
    if parts.scheme not in ("http", "https"):
        raise ConfigError(f"malformed base URL {url!r}: it must start with http:// or https://")
    if not parts.hostname:
        raise ConfigError(f"malformed base URL {url!r}: no host name")
    if parts.query or parts.fragment:
        raise ConfigError(f"malformed base URL {url!r}: no query string or fragment allowed")
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return parts.scheme, parts.hostname, port, parts.path.rstrip("/")


DEFAULT_PORTS = {"http": 80, "https": 443}


def default_name(scheme: str, host: str, port: int) -> str:
    """An endpoint's name when none is given: the host, with the port unless it is the scheme's default. Two local
    servers are then `127.0.0.1:8001` and `127.0.0.1:8002` in tables and comparisons instead of one name twice, while
    `api.openai.com` stays as it reads."""
    if port == DEFAULT_PORTS.get(scheme):
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def check_provider(provider: str) -> None:
    """ConfigError naming the known providers unless `provider` is one."""
    if provider not in registry.names():
        raise ConfigError(f"unknown provider {provider!r}: use one of {', '.join(registry.names())}")


def key_variable(named: str | None, provider: str, mock: bool = False) -> str | None:
    """The environment variable holding an endpoint's key: the one named, else the provider's usual one (a mock
    needs none); None when there is no key ("none")."""
    variable = named or (None if mock else registry.key_env(provider))
    return None if not variable or variable.lower() == NO_KEY else variable


def make_endpoint(
    base_url: str,
    provider: str = registry.DEFAULT,
    model: str = "gpt-4o-mini",
    api_key_env: str | None = None,
    name: str | None = None,
    require_key: bool = True,
) -> Endpoint:
    """Validate and build an Endpoint. `api_key_env=None` means the provider's usual variable; "none" means no key."""
    provider = (provider or "").strip().lower()
    check_provider(provider)
    scheme, host, port, path = parse_base_url(base_url)
    name = name or default_name(scheme, host, port)
    if not model:
        raise ConfigError("no model given: set --llm-model (or LLM_MODEL)")
    key_env = key_variable(api_key_env, provider)
    if key_env and require_key and not os.environ.get(key_env):
        raise ConfigError(
            f"endpoint {name!r} needs an API key in the environment variable {key_env}, which is not set: "
            f"export {key_env}=... (or pass --llm-api-key-env none for a server without auth)"
        )
    return Endpoint(
        name=name,
        provider=provider,
        base_url=base_url.strip().rstrip("/"),
        model=model,
        api_key_env=key_env,
        scheme=scheme,
        host=host,
        port=port,
        base_path=path,
    )
