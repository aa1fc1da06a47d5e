"""loadlib's own event hooks, attached to a Locust Environment (extension through events, as Locust does).

Producers fire, consumers (stats, InfluxDB sink, SLO accounting) listen; nobody imports anybody else's internals.
"""

from __future__ import annotations

from locust.event import EventHook

from typing import Any


class LLMHooks:
    """Hooks of one Environment.

    - `record`: fired with `record=RequestRecord` once per request attempt, after the stream has ended.
    - `worker_health`: fired on every load-generating node a few times a second with
      `users=int, cpu_percent=float, loop_lag_ms=float`.
    - `endpoint_event`: fired with `kind=str, endpoint=str, message=str` on failover state changes
      (circuit_open, circuit_half_open, circuit_closed, failover, failback).
    """

    def __init__(self) -> None:
        self.record = EventHook()
        self.worker_health = EventHook()
        self.endpoint_event = EventHook()


def hooks(environment: Any) -> LLMHooks:
    """The LLMHooks of `environment`, created on first use."""
    h = getattr(environment, "_llm_hooks", None)
    if h is None:
        h = LLMHooks()
        environment._llm_hooks = h
    return h
