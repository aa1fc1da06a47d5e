"""A run in which no request succeeded is never a pass (docs/outputs.md, "Exit codes"): its verdict says so in one
line, naming the error class that dominated with its count and what to set about it. The hints are one table, by
error class. Pure.

"No request succeeded" counts attempts: no attempt ended `ok` and at least one ended in error (a run whose attempts
were all cut off by its end completed nothing, which is another verdict: loadlib.verdicts.verdict). A request whose
retry succeeded has an `ok` attempt, so the rule holds for user-visible requests too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadlib.metrics.scenarios import num
from loadlib.providers.errors_body import context_limit_in

SAID = 120  # characters of the server's own message quoted in the line

_CONTEXT = (
    "every prompt was over the model's context{limit}: serve a longer context (vLLM --max-model-len, llama.cpp "
    "--ctx-size) or send {shorter}"
)
_TIMEOUT = "every request timed out ({option}): the server is stuck or overloaded; lower the load or raise {option}"

# what to set, by the dominant error class; {server} is the server's message when it sent one, {said} the message of
# a failure the client named (a connection, a stream, a body), {host} and {model} the run's, {limit} and {shorter}
# the context rule's (_context)
HINTS: dict[str, str] = {
    "context_length_exceeded": _CONTEXT,
    "http_4xx": (
        "the endpoint refused every request{server}: check the key (the variable --llm-api-key-env names), the model "
        "(--llm-model {model}) and the path of --host {host}"
    ),
    "rate_limited": "the endpoint rate-limited every request{server}: lower the load (-u, --arrival-rate) or raise the "
    "key's quota",
    "http_5xx": "the server failed every request{server}: look at the server behind {host} (its log, its health) "
    "before measuring it",
    "http_redirect": "every request was redirected{said}: point --host at the final URL",
    "http_invalid_status": "the server, or a proxy in front of it, answered no valid HTTP status{said}: check {host}",
    "connect_error": "no connection to {host} held{said}: check --host and that the server is up",
    "timeout_connect": "no connection to {host} opened within --llm-timeout-connect: check --host and the network",
    "timeout_ttft": _TIMEOUT.format(option="--llm-timeout-ttft"),
    "timeout_idle": _TIMEOUT.format(option="--llm-timeout-idle"),
    "timeout_total": "every request ran past --llm-timeout-total: raise it or ask for fewer tokens (--llm-max-tokens)",
    "stream_broken": "every response broke off before its end{said}: the server or a proxy in front of it cut them",
    "malformed_event": "no response could be read{said}: check --llm-provider against the API at {host}",
    "unsupported_api": "the endpoint speaks another API{said}: check --llm-provider and the path of --host {host}",
    "provider_error": "the server reported an error in every stream{server}: look at the server behind {host}",
    "empty_response": "every stream ended with no output: check the model (--llm-model {model})",
    "truncated": "every answer was cut short{said}: raise the request's max tokens, or send shorter prompts",
    "schema_invalid": "no answer matched its JSON schema{said}: the model ({model}) does not keep to structured output",
    "nondeterministic": "every repeated request got another answer: the endpoint is not deterministic at temperature 0",
    "oversized": "every response crossed a size cap{said}: raise the cap the message names",
    "internal_error": "an error of loadlib's own on every attempt{said}: please report it",
}
OTHER = "see the errors by class above and Locust's error report"


def no_success(summary: Mapping[str, Any], samples: Mapping[str, str] | None = None) -> str | None:
    """The verdict's line for a run in which no attempt succeeded and some failed, else None. `samples` holds a
    message per error class (Locust's error report: the server's words, or the client's), for the hint: the context
    a server states, what it said."""
    total = summary.get("total") or {}
    failed = int(total.get("errors_total") or 0)
    if not failed or total.get("ok"):
        return None
    classes = sorted(((str(k), int(v)) for k, v in (total.get("errors") or {}).items() if v), key=lambda c: -c[1])
    shown = ", ".join(f"{name} {num(n)}" for name, n in classes[:3])
    more = f" and {len(classes) - 3} more classes" if len(classes) > 3 else ""
    cut = f"; {num(total['cut_off'])} cut off by the end" if total.get("cut_off") else ""
    head = f"no request succeeded ({num(failed)} failed: {shown}{more}{cut})"
    return f"{head}: {hint(classes[0][0] if classes else '', summary, samples or {})}"


def hint(error_class: str, summary: Mapping[str, Any], samples: Mapping[str, str]) -> str:
    """What to set for a run that failed only (or mostly) with `error_class`, from the table."""
    meta = summary.get("meta") or {}
    said = samples.get(error_class)
    return HINTS.get(error_class, OTHER).format(
        server=f' (the server: "{_short(said)}")' if said else "",
        said=f' ("{_short(said)}")' if said else "",
        host=meta.get("host") or "(the --host)",
        model=meta.get("model") or "?",
        **_context(summary, said),
    )


def _context(summary: Mapping[str, Any], said: str | None) -> dict[str, str]:
    """The context rule's fields: the window the server stated, and what to send shorter (a long-document run's
    documents, --doc-tokens, leave room for the instructions and the summary's --doc-max-tokens)."""
    limit = context_limit_in(said)
    stated = f" ({limit:,} tokens, says the server)" if limit else ""
    ran = {str(r.get("scenario")) for r in summary.get("rows") or [] if isinstance(r, Mapping)}
    if "long_document" in ran:
        under = f"{limit:,}" if limit else "the context"
        shorter = f"shorter documents (--doc-tokens under {under}, less the instructions and --doc-max-tokens)"
    else:
        shorter = "shorter prompts (with room for --llm-max-tokens)"
    return {"limit": stated, "shorter": shorter}


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SAID else text[: SAID - 1] + "…"
