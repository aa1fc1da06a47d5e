"""The process's open-file budget: every stream holds a socket, and a worker past its limit (often 1,024 in containers
and CI runners) fails to connect. That is the load generator's failure, not the endpoint's: it is said in one line
before any load when the users cannot fit, and stops the run when it happens anyway."""

from __future__ import annotations

import errno
import resource

LOCUST_MINIMUM = 10_000  # what Locust asks for; it gives up entirely when the hard limit is lower
RESERVE = 64  # files beside the streams' sockets: logs, the sink, ZeroMQ, /proc reads of the health sampler


def raise_limit() -> int:
    """Raise the soft limit towards LOCUST_MINIMUM as far as the hard limit allows; the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = LOCUST_MINIMUM if hard == resource.RLIM_INFINITY else min(LOCUST_MINIMUM, hard)
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
        except (OSError, ValueError):
            return soft
        return want
    return soft


def users_problem(users: int, soft: int) -> str | None:
    """Why `users` streams cannot fit under `soft` open files (None: they can), in one line."""
    if soft == resource.RLIM_INFINITY or users + RESERVE <= soft:
        return None
    return (
        f"-u {users} needs at least {users + RESERVE} open files (a socket per user, {RESERVE} more for the rest) but "
        f"this process may open {soft} (`ulimit -n`): raise the limit (ulimit -n, or the container's nofile) or "
        "spread the users over more workers"
    )


def out_of_files(code: int) -> str:
    """The run-time line when a socket could not be opened for lack of files (EMFILE or ENFILE)."""
    if code == errno.ENFILE:
        return "this machine ran out of open files (ENFILE, the system-wide fs.file-max): lower the load per machine"
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return (
        f"this load generator ran out of open files (EMFILE: its limit is {soft}, `ulimit -n`; a user holds a socket "
        "per endpoint): raise the limit (ulimit -n, or the container's nofile) or spread the users over more workers"
    )
