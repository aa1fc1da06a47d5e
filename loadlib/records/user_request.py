"""UserRequest: the user-visible request, from its first attempt's start to the answer the user got
(docs/records.md, "User-visible requests").

Attempts are RequestRecords, each counted on its own; a user-visible request groups them: the outcome the user saw,
the endpoint that answered, how many attempts it took, and latency and TTFT as the user experienced them (a retry's
wait and a failed first attempt included). With one endpoint, no retries and no hedging, it equals its one attempt.
"""

from __future__ import annotations

from dataclasses import dataclass

from loadlib.errors import ErrorClass


@dataclass(slots=True)  # not frozen: built once per request, and a frozen dataclass's __init__ costs twice as much
class UserRequest:
    """A user-visible request: its attempts (retries, hedges, failover) grouped, with the outcome, endpoint, latency
    and TTFT the user experienced (`Reply.user`; docs/records.md, "User-visible requests")."""

    run_id: str
    scenario: str
    worker_id: str
    request_id: str  # its first attempt's request_id (attempt records carry it as user_request_id)
    start_unix_ns: int
    preferred: str  # the endpoint the routing policy chose first
    endpoint: str | None  # the endpoint whose answer the user got; None when no breaker let a request through
    status: ErrorClass
    attempts: int
    e2e_ms: float
    ttft_ms: float | None
    hedged: bool = False
    hedged_won: bool = False  # answered by its hedge, which outran an attempt still running (that one: cancelled)
    error_message: str | None = None

    @property
    def ok(self) -> bool:
        """The user got an answer."""
        return self.status is ErrorClass.OK

    @property
    def failed_over(self) -> bool:
        """Answered, and by another endpoint than the policy's first choice, and not because a hedge was faster:
        a hedge that won its race answered for an endpoint that was still working (docs/failover.md)."""
        return self.ok and self.endpoint != self.preferred and not self.hedged_won

    @property
    def end_unix(self) -> float:
        return self.start_unix_ns / 1e9 + self.e2e_ms / 1000.0
