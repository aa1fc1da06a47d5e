"""The progress display of a headless run, as text: where the run is (elapsed against -t), its users, requests/s,
output tokens/s, TTFT p50/p95, errors by class, the thresholds so far and the client's health (docs/outputs.md,
"Progress during a run").

Pure: every function takes plain numbers and dicts and returns a value or text, so the wording is tested without a
run. loadlib.locust.progress reads the run into a `View` and writes it (a live panel on a terminal, drawn by
loadlib.outputs.progress_panel, or one line every few seconds into a pipe); both say the same things in the same
words, from `facts`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loadlib.option import checked_by
from loadlib.verdicts.verdict import lost

MODES = ("auto", "bar", "lines", "locust", "off")
LINE_EVERY_S = 10.0  # a CI log gets a line every 10 s by default: readable after the fact, not a flood
RATE_WINDOW_S = 10.0  # rates over the last 10 s: a master hears from each worker every 3 s
TOP_ERROR_CLASSES = 3


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The thresholds as they stand: passing, failing (named), and not judged or not reached yet."""

    passing: int = 0
    failing: tuple[str, ...] = ()
    pending: int = 0

    @property
    def total(self) -> int:
        return self.passing + len(self.failing) + self.pending


@dataclass(frozen=True, slots=True)
class Client:
    """The client-saturation verdict so far (`saturated` None: no samples judged yet)."""

    saturated: bool | None = None
    loop_lag_p99_ms: float | None = None
    cpu_p90_percent: float | None = None


@dataclass(frozen=True, slots=True)
class View:
    """One moment of the run, in plain numbers (None: not known yet)."""

    elapsed_s: float
    run_time_s: float | None = None
    users: int = 0
    target_users: int | None = None
    workers: int | None = None  # a distributed master's connected workers; None on a local run
    requests: int = 0
    requests_per_s: float | None = None
    output_tokens_per_s: float | None = None
    ttft_p50_ms: float | None = None
    ttft_p95_ms: float | None = None
    errors: Mapping[str, int] = field(default_factory=dict)
    thresholds: Thresholds | None = None  # None: the run has no thresholds
    capacity: str | None = None  # a capacity search's state, in place of the thresholds it judges per step
    client: Client = field(default_factory=Client)
    done: bool = False


def parse_mode(text: str) -> tuple[str, float]:
    """`--llm-progress MODE[:SECONDS]` as (mode, seconds between lines); ValueError on anything else."""
    mode, _, every = str(text or "auto").strip().partition(":")
    if mode not in MODES:
        raise ValueError(f"--llm-progress {text!r}: the mode is one of {', '.join(MODES)} (optionally :SECONDS)")
    try:
        seconds = float(every) if every else LINE_EVERY_S
    except ValueError:
        seconds = -1.0
    if not 0.5 <= seconds <= 3600:
        raise ValueError(f"--llm-progress {text!r}: the line interval is seconds from 0.5 to 3600, e.g. lines:30")
    return mode, seconds


checked_mode = checked_by(parse_mode, "--llm-progress")  # argparse type of --llm-progress


def display_kind(mode: str, headless: bool, worker: bool, terminal: bool) -> str | None:
    """What a node shows during the run: "bar" (live panel), "lines" (periodic lines) or None (nothing of ours).
    Only a headless master or local runner shows progress: a worker's output is not what anyone watches."""
    if not headless or worker or mode in ("off", "locust"):
        return None
    if mode == "auto":
        return "bar" if terminal else "lines"
    return mode


def quiets_locust(mode: str, headless: bool, worker: bool, print_stats: bool) -> bool:
    """Whether Locust's own request table (reprinted every 2 s) is turned off: it is when our display (or nothing,
    `off`) replaces it, unless --print-stats asked for it by name."""
    return headless and not worker and not print_stats and mode != "locust"


def rate(history: Sequence[tuple[float, int]], window_s: float = RATE_WINDOW_S) -> float | None:
    """Per second over the last `window_s` of (time, cumulative count) samples, oldest first: from the newest sample
    at least `window_s` old (else the oldest) to the newest. None before two samples. A count that went down (Locust
    reset its statistics) gives the new count over the span, never a negative rate."""
    if len(history) < 2:
        return None
    t1, n1 = history[-1]
    t0, n0 = next(((t, n) for t, n in reversed(history[:-1]) if t1 - t >= window_s), history[0])
    if t1 <= t0:
        return None
    return (n1 - n0 if n1 >= n0 else n1) / (t1 - t0)


def trimmed(history: list[tuple[float, int]], window_s: float = RATE_WINDOW_S) -> list[tuple[float, int]]:
    """The samples `rate` still needs: those within `window_s` of the newest, and the newest one older than that."""
    if not history:
        return history
    t1 = history[-1][0]
    older = [i for i, (t, _) in enumerate(history) if t1 - t >= window_s]
    return history[older[-1] :] if older else history


def tally(results: Sequence[Mapping[str, Any]], expected: int = 0) -> Thresholds:
    """Threshold results (loadlib.verdicts.evaluate) so far: passing; failing as they stand, by the rule the abort
    watch uses (loadlib.verdicts.verdict.lost: a total like `requests > 1000` merely not reached yet is pending, as
    is one with too few samples). `expected`: the run's thresholds, some of which have no result until their rows
    have requests (pending too)."""
    failing = tuple(str(r["expression"]) for r in lost(results))
    passing = sum(1 for r in results if r.get("passed") is True)
    return Thresholds(passing, failing, max(len(results), expected) - passing - len(failing))


def client_of(summary: Mapping[str, Any]) -> Client:
    """The client-saturation verdict of a summary (loadlib.metrics.saturation) as the display needs it."""
    client = summary.get("client") or {}
    return Client(summary.get("client_saturated"), client.get("loop_lag_p99_ms"), client.get("cpu_p90_percent"))


def clock(seconds: float) -> str:
    """Elapsed time as m:ss, or h:mm:ss from an hour on."""
    s = max(int(seconds), 0)
    hours, rest = divmod(s, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def fraction(view: View) -> float | None:
    """How much of -t has passed, 0 to 1 (None: the run has no length)."""
    if not view.run_time_s:
        return None
    return min(max(view.elapsed_s / view.run_time_s, 0.0), 1.0)


def number(value: float | None, unit: str = "") -> str:
    """A figure to read at a glance: one decimal below 100, none above, thousands separated; "-" when unknown."""
    if value is None:
        return "-"
    text = f"{value:.1f}" if abs(value) < 100 else f"{value:,.0f}"
    return f"{text} {unit}" if unit else text


def time_text(view: View) -> str:
    if view.run_time_s:
        return f"{clock(view.elapsed_s)}/{clock(view.run_time_s)} {fraction(view) or 0.0:.0%}"
    return clock(view.elapsed_s)


def users_text(view: View) -> str:
    target = f"/{view.target_users}" if view.target_users is not None else ""
    workers = f" on {view.workers} worker{'s' * (view.workers != 1)}" if view.workers is not None else ""
    return f"users {view.users}{target}{workers}"


def requests_text(view: View) -> str:
    return f"{view.requests:,} req, {number(view.requests_per_s)}/s"


def tokens_text(view: View) -> str:
    return f"{number(view.output_tokens_per_s)} out tok/s"


def ttft_text(view: View) -> str:
    return f"TTFT p50 {number(view.ttft_p50_ms)} p95 {number(view.ttft_p95_ms, 'ms')}"


def errors_text(errors: Mapping[str, int], requests: int, top: int = TOP_ERROR_CLASSES) -> str:
    """`errors 0`, or the count, its share of requests and the largest classes: `errors 5 (1.6 %): timeout 3, ...`."""
    n = sum(errors.values())
    if not n:
        return "errors 0"
    share = f" ({n / requests:.1%})" if requests else ""
    ranked = sorted(errors.items(), key=lambda kv: (-kv[1], kv[0]))
    named = ", ".join(f"{cls} {count}" for cls, count in ranked[:top])
    more = f", {len(ranked) - top} more classes" if len(ranked) > top else ""
    return f"errors {n}{share}: {named}{more}"


def thresholds_text(t: Thresholds | None, done: bool = False) -> str:
    """`thresholds 2/3 pass, 1 pending`; a lost one is named: `thresholds 1/3 pass, FAIL ttft p95 < 1s`. Once the
    run is `done` nothing is pending any more: what never got enough samples is `not judged`, as the verdict says."""
    if t is None or not t.total:
        return "no thresholds"
    text = f"thresholds {t.passing}/{t.total} pass"
    if t.pending:
        text += f", {t.pending} {'not judged' if done else 'pending'}"
    if t.failing:
        text += f", FAIL {'; '.join(t.failing)}"
    return text


def client_text(c: Client, brief: bool = False) -> str:
    """`client OK (loop lag p99 2.8 ms, CPU p90 6.0 %)`, SATURATED when the verdict says so; `brief` (a log line)
    leaves the figures to a saturated client."""
    if c.saturated is None:
        return "client not judged yet"
    if brief and not c.saturated:
        return "client OK"
    measured = f"loop lag p99 {number(c.loop_lag_p99_ms, 'ms')}, CPU p90 {number(c.cpu_p90_percent, '%')}"
    return f"client {'SATURATED' if c.saturated else 'OK'} ({measured})"


def facts(view: View, brief: bool = False) -> dict[str, str]:
    """Every piece of the display by name, in display order: the line and the panel read the same words."""
    return {
        "time": time_text(view),
        "users": users_text(view),
        "requests": requests_text(view),
        "tokens": tokens_text(view),
        "ttft": ttft_text(view),
        "errors": errors_text(view.errors, view.requests),
        "thresholds": view.capacity or thresholds_text(view.thresholds, view.done),
        "client": client_text(view.client, brief),
    }


def line(view: View) -> str:
    """One compact record for a log that is not a terminal (CI): `loadlib progress 0:10/0:30 33% | users ... `."""
    head = "loadlib progress (end)" if view.done else "loadlib progress"
    return f"{head} " + " | ".join(facts(view, brief=True).values())
