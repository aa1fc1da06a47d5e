"""The Locust integration: the user class scenarios subclass (`user`), the run context each Locust environment gets
(`context`) with its node parts merged on the master (`parts`, `sink_part`, `scenario_part`), start-up checks
(`checks`), the wiring to Locust's events (`install`), the web UI tab (`webui`), load shapes (`shapes`), client health
(`health`), the embedded mock (`embedded_mock`) and the stop for runs that can only fail (`fatal`).

`from loadlib.locust import LLMUser` imports Locust and installs the wiring (once); the pure modules of this package
(`checks`, `fatal`, `webui`'s table) can be imported without Locust.
"""

from typing import Any

__all__ = ["LLMUser", "Reply"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from loadlib.locust import user

        return getattr(user, name)
    raise AttributeError(f"module 'loadlib.locust' has no attribute {name!r}")
