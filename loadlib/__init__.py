"""loadlib: the library under the locustfiles. Streams LLM APIs over SSE and measures every request truthfully."""

from loadlib.errors import ConfigError, ErrorClass, LoadlibError, MalformedEventError, UnsupportedAPIError
from loadlib.records.record import RequestRecord

__all__ = [
    "ConfigError",
    "ErrorClass",
    "LoadlibError",
    "MalformedEventError",
    "RequestRecord",
    "UnsupportedAPIError",
]
