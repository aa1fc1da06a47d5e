"""The run's verdict and exit code (docs/outputs.md, "Exit codes"), from threshold results and the summary. Pure.

Thresholds decide only when a run has some that could be judged (or drills); without them Locust's own rule stays
(any failed request: exit 1), so a run without thresholds keeps the exit code it always had, and a run whose only
thresholds are scenario SLO defaults too short to judge is not passed by them. A run in which no request succeeded is
never a pass, either way (loadlib.verdicts.no_success).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loadlib.metrics.summary_types import Outcome
from loadlib.verdicts.no_success import no_success
from loadlib.verdicts.thresholds import METRICS

# 130 = 128 + SIGINT, what a shell reports for a command stopped with Ctrl-C (SIGTERM gives the same here); 2 is
# a run that could not be made: bad input, an endpoint that cannot be used, workers that never came
EXIT_CODES = {
    "pass": 0,
    "fail": 99,
    "invalid": 3,
    "incomplete": 3,
    "interrupted": 130,
    "config_error": 2,
    "fatal": 2,
    "not_started": 2,
}


def verdict(
    results: Sequence[Mapping[str, Any]], summary: Mapping[str, Any], samples: Mapping[str, str] | None = None
) -> Outcome | None:
    """{"status", "exit_code", "reasons"}, or None when nothing decides (no thresholds, or only scenario SLO defaults
    that could not be judged; no drills; a complete run that ended on its own): then Locust's rule stays
    (`no_verdict`). `samples`: a server message per error class, for the line of a run in which nothing succeeded.

    In order, the first that applies decides:
    - `not_started`: the workers it waited for never came (`summary["not_started"]`);
    - `fatal`: stopped early because every request failed in a way that will not heal, the load generator ran out
      of open files, or Locust's own greenlets failed and ended the run (`summary["fatal"]` says which);
    - `interrupted`: a signal ended it before its end, whatever its numbers say;
    - `incomplete`: a worker was lost or under 95 % of the intended load ran (loadlib.metrics.integrity);
    - `invalid`: a test ran but no attempt completed (every one was cut off by its end, or none was sent): there is
      nothing to judge, even without thresholds;
    - `invalid`: the client was saturated (no number can be trusted), or a capacity search finished no step;
    - `fail`: no request succeeded (the line names the error class and what to set), a judged threshold failed, a
      drill missed its targets, a lost threshold aborted the run, or a capacity search found less than its gate (a
      capacity run judges its thresholds per step and its client per step: its whole-run saturation does not make
      it invalid); a failure that was measured stands even when other thresholds could not be judged;
    - `invalid`: a threshold the user gave could not be judged (too few samples, no matching requests);
    - `pass`. A scenario's SLO default that could not be judged is reported "not judged" and decides nothing: the
      user did not ask for it, and a short first run should not end invalid with zero errors. When nothing else
      decides either, Locust's rule does (`no_verdict`): a run with failed requests and nothing judged fails."""
    drills = (summary.get("failover") or {}).get("drills") or []
    integrity = summary.get("integrity") or {}
    incomplete = [f"run incomplete: {r}" for r in integrity.get("reasons") or []]
    stopped = _stopped(summary)
    empty = _nothing_completed(summary)
    capacity = summary.get("capacity")
    judged = _decisive(results) or summary.get("aborted")
    decides = judged or drills or incomplete or stopped or summary.get("interrupted") or empty or capacity
    if not decides:
        return None
    nothing = [line] if (line := no_success(summary, samples)) else []
    failed = nothing + _failed(results, drills, summary.get("aborted")) + _capacity_failed(capacity)
    untrusted = [*empty, *_capacity_unmeasured(capacity), *([] if capacity else _saturated(summary))]
    unjudged = [] if summary.get("aborted") else _unjudged(results)
    if stopped:
        status, reasons = stopped
    elif summary.get("interrupted"):
        status, reasons = "interrupted", [_interrupted(summary), *incomplete, *untrusted, *failed, *unjudged]
    elif incomplete:
        status, reasons = "incomplete", [*incomplete, *untrusted, *failed, *unjudged]
    elif untrusted:
        status, reasons = "invalid", [*untrusted, *failed, *unjudged]
    elif failed:
        status, reasons = "fail", [*failed, *unjudged]
    elif unjudged:
        status, reasons = "invalid", unjudged
    else:
        status, reasons = "pass", _capacity_held(capacity)
    return {"status": status, "exit_code": EXIT_CODES[status], "reasons": reasons}


def _decisive(results: Sequence[Mapping[str, Any]]) -> bool:
    """Thresholds decide when one was judged, or one of the user's own could not be (`invalid`); scenario SLO
    defaults that could not be judged alone leave the run to Locust's rule."""
    return any(r["passed"] is not None or not r.get("origin") for r in results)


def _stopped(summary: Mapping[str, Any]) -> tuple[str, list[str]] | None:
    """A run that never started or was stopped as hopeless: its one line is the verdict."""
    for status in ("not_started", "fatal"):
        if summary.get(status):
            return status, [str(summary[status])]
    return None


def _nothing_completed(summary: Mapping[str, Any]) -> list[str]:
    """A test that ran (its duration is known) and whose attempts all were cut off by its end, or that sent none."""
    total = summary.get("total")
    if total is None or not summary.get("duration_s"):
        return []
    cut = total.get("cut_off") or 0
    if (total.get("count") or 0) > cut:
        return []
    return [f"no attempt completed ({cut} cut off by the end of the run): nothing to judge"]


def _failed(results: Sequence[Mapping[str, Any]], drills: list[dict[str, Any]], aborted: Any) -> list[str]:
    failed = [f"{r['expression']}: {r['reason']}" for r in results if r["passed"] is False]
    failed += [f"drill {d['index']} on {d['endpoint']} failed its targets" for d in drills if d["passed"] is False]
    if aborted:
        failed.insert(0, f"aborted after {aborted['after_s']:.1f} s: {aborted['reasons'][0]}")
    return failed


def _capacity_failed(capacity: Mapping[str, Any] | None) -> list[str]:
    """A capacity search's CI gate (--llm-capacity-min) that the answer did not reach, or a search in which no load
    held at all (its smallest step failed the thresholds: the endpoint carries none of this traffic within them)."""
    if not capacity:
        return []
    if capacity.get("gate_passed") is False:
        return [_capacity_gate(capacity)]
    steps = capacity.get("steps") or []
    if steps and not any(s.get("passed") for s in steps):
        why = "; ".join(capacity.get("first_failed_by") or []) or "its thresholds"
        first = capacity_first_failed(capacity)
        return [f"capacity {capacity_answer(capacity)}: no load tried held (first failing {first}: {why})"]
    return []


def _capacity_unmeasured(capacity: Mapping[str, Any] | None) -> list[str]:
    """A capacity search that finished no step measured nothing: its `max_users 0` is no answer, even as a bound."""
    if not capacity or capacity.get("steps") != []:
        return []
    why = str(capacity.get("stopped") or "the run ended")
    if "saturated" in why:  # the load generator, not the run's length, ended it
        return [f"the capacity search finished no step: {why}; add workers or start lower (--llm-capacity-start)"]
    return [
        f"the capacity search finished no step: {why}; give -t room for at least one step "
        "(--llm-capacity-warmup-s plus --llm-capacity-window-s)"
    ]


def _capacity_held(capacity: Mapping[str, Any] | None) -> list[str]:
    """A capacity run that passed says what it found (and its gate)."""
    if not capacity:
        return []
    if capacity.get("minimum") is not None:
        return [_capacity_gate(capacity)]
    return [capacity_text(capacity)]


def _capacity_gate(c: Mapping[str, Any]) -> str:
    rel = ">=" if c.get("gate_passed") else "<"
    return f"{capacity_text(c)} {rel} --llm-capacity-min {c.get('minimum'):g}"


def capacity_text(c: Mapping[str, Any]) -> str:
    """`capacity max_users 24`, with ` (a lower bound)` when the search ended early."""
    return f"capacity {capacity_answer(c)}" + (" (a lower bound)" if c.get("lower_bound") else "")


def capacity_answer(c: Mapping[str, Any]) -> str:
    """`max_users 24` or `max_rate_per_s 31.5`: the search's answer by what it controlled."""
    if c.get("mode") == "rate":
        return f"max_rate_per_s {c.get('max_rate_per_s'):g}"
    return f"max_users {c.get('max_users')}"


def capacity_found(c: Mapping[str, Any]) -> str:
    """The answer as a load: `8 users` or `31.5 req/s`."""
    rate = c.get("max_rate_per_s")
    return f"{rate:g} req/s" if c.get("mode") == "rate" and rate is not None else users_text(c.get("max_users"))


def capacity_first_failed(c: Mapping[str, Any]) -> str:
    """The first load that failed as text: `26 users` or `40 req/s`."""
    rate = c.get("first_failed_rate_per_s")
    if c.get("mode") == "rate" and rate is not None:
        return f"{rate:g} req/s"
    return users_text(c.get("first_failed_users"))


def capacity_load(step: Mapping[str, Any]) -> str:
    """A step's load as text: `24 users` or `31.5 req/s`."""
    rate = step.get("rate_per_s")
    return users_text(step.get("users")) if rate is None else f"{rate:g} req/s"


def capacity_drain(step: Mapping[str, Any]) -> str:
    """The drain before a rate step (docs/capacity.md) in a few words: `2.0 s`, `30.0 s, not drained`; "" for none."""
    wait = step.get("drain_s")
    if wait is None:
        return ""
    return f"{wait:.1f} s" + ("" if step.get("drained") else ", not drained")


def users_text(users: Any) -> str:
    """`1 user`, `24 users`."""
    return f"{users} user" if users == 1 else f"{users} users"


def _saturated(summary: Mapping[str, Any]) -> list[str]:
    if not summary.get("client_saturated"):
        return []
    why = (summary.get("client") or {}).get("reasons") or ["the load generator was saturated"]
    return [f"client saturated: {'; '.join(map(str, why))}"]


def _unjudged(results: Sequence[Mapping[str, Any]]) -> list[str]:
    """The user's own thresholds that could not be judged (scenario defaults are only reported)."""
    return [f"{r['expression']}: {r['reason']}" for r in results if r["passed"] is None and not r.get("origin")]


def not_judged_defaults(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Scenario SLO defaults that could not be judged: shown, but they decide nothing."""
    return [r for r in results if r["passed"] is None and r.get("origin")]


def _interrupted(summary: Mapping[str, Any]) -> str:
    return (
        f"interrupted after {summary.get('duration_s') or 0:.1f} s (a signal stopped the run before its end): the "
        "thresholds describe a shorter run than intended"
    )


def no_verdict(
    errors: int, exit_code: int, summary: Mapping[str, Any] | None = None, samples: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The verdict of a run without thresholds or drills (or whose scenario SLO defaults could none be judged):
    Locust's own rule (any failed request: exit code 1, or --exit-code-on-error), status `errors` when it fails. A run
    in which no request succeeded is never a pass: its line names the cause, and it exits 1 even with
    --exit-code-on-error 0 (which allows failed requests, not a run without an answer). A saturated client does not
    change the code (no number was judged), but the verdict line says so: a pass beside untrustworthy latencies must
    not read as a clean run."""
    summary = summary or {}
    untrusted = [f"{why} (without thresholds it does not set the exit code)" for why in _saturated(summary)]
    rule = _locust_rule_said(summary)
    nothing = no_success(summary, samples)
    if nothing:
        return {"status": "errors", "exit_code": exit_code or 1, "reasons": [f"{nothing} ({rule})", *untrusted]}
    if exit_code == 0:
        allowed = f"{_failed_requests(errors)}, allowed by --exit-code-on-error 0" if errors else "no failed request"
        return {"status": "pass", "exit_code": 0, "reasons": [f"{allowed} ({rule})", *untrusted]}
    what = _failed_requests(errors) if errors else "an unexpected error in Locust or a locustfile (see the log)"
    return {"status": "errors", "exit_code": exit_code, "reasons": [f"{what} ({rule})", *untrusted]}


def _failed_requests(errors: int) -> str:
    return f"{errors:,} failed request{'' if errors == 1 else 's'}"


def _locust_rule_said(summary: Mapping[str, Any]) -> str:
    """Why Locust's rule decides: no thresholds, or none that could be judged."""
    skipped = len(not_judged_defaults(list(summary.get("thresholds") or [])))
    if not skipped:
        return "no thresholds: Locust's rule"
    which = "the scenario SLO default" if skipped == 1 else f"none of the {skipped} scenario SLO defaults"
    return f"{which} could{' not' * (skipped == 1)} be judged: Locust's rule"


def lost(results: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The failed results a run can no longer win back. A sampled number (a percentile, a rate, a throughput) is
    judged as it stands, with its sample rule; a total (requests, errors, cost) only grows, so it is lost only when
    its upper bound is already passed: `requests > 1000` failing at 10 s is merely not reached yet."""
    out = []
    for r in results:
        if r["passed"] is not False:
            continue
        over = r["op"] in ("<", "<=") or (r["op"] == "==" and (r["value"] or 0) > r["limit"])
        if METRICS[r["metric"]].sampled or over:
            out.append(r)
    return out


def lines(results: list[dict[str, Any]], outcome: dict[str, Any] | None) -> list[str]:
    """The console's verdict table: one line per threshold, then the verdict with its exit code (always the code the
    process exits with: every path that sets one goes through a verdict). Without an outcome yet (the web UI during
    a run whose thresholds none could judge so far: Locust's rule would decide) the table alone."""
    if outcome is None and not results:
        return []
    out = [f"  {_mark(r)}  {r['expression']}: {r['reason']}" for r in results]
    skipped = len(not_judged_defaults(results))
    if skipped:
        out.append(
            f"  ({skipped} scenario SLO default{'s' * (skipped > 1)} not judged: too few samples in this run; "
            "defaults you did not write decide nothing until they can be judged)"
        )
    said = [verdict_line(outcome)] if outcome is not None else []
    return ["Thresholds:", *out, *said] if results else said


def verdict_line(outcome: dict[str, Any]) -> str:
    """`Verdict: FAIL (exit code 99): the first reason`."""
    head = f"Verdict: {outcome['status'].replace('_', ' ').upper()} (exit code {outcome['exit_code']})"
    return f"{head}: {outcome['reasons'][0]}" if outcome["reasons"] else head


def _mark(r: dict[str, Any]) -> str:
    if r["passed"] is None:
        return "skip" if r.get("origin") else "n/a "
    return "pass" if r["passed"] else "FAIL"
