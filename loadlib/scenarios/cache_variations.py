"""The cache probe's request and its controlled variations, pure: each variation changes one thing a cache might
hash (a body field, a header, the prefix's text) and names it in `changes`, so a probe against a known cache key can
say which change should bust it.

The base request is a long shared prefix (system prompt, then a document) and a short question, temperature 0.7 so
that 0.7 and 0.7000000001 are one change. Anthropic requests carry the prefix as a system block with a
`cache_control` breakpoint at its end, which Anthropic needs to cache it at all.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SYSTEM = (
    "You are the document assistant of a legal team. Answer questions about the document below in two sentences, "
    "citing the section you rely on."
)
QUESTION = "Which obligations does the document put on the supplier?"
TEMPERATURE = 0.7
_IDS = itertools.count(1)


@dataclass(frozen=True)
class ProbeRequest:
    """What one probe request sends: the prefix's parts, the question, and what goes beside them."""

    system: str
    document: str
    temperature: float = TEMPERATURE
    body: dict[str, Any] = field(default_factory=dict)  # extra body fields (model alias, top_p, user, metadata)
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Variation:
    name: str
    changes: tuple[str, ...]  # the body fields ("model", "messages", ...) and header:NAME parts it changes
    apply: Callable[[ProbeRequest, str, str], ProbeRequest]  # (request, provider, model alias) -> request


def _same(req: ProbeRequest, provider: str, alias: str) -> ProbeRequest:
    return req


def _body(**extra: Any) -> Callable[[ProbeRequest, str, str], ProbeRequest]:
    def apply(req: ProbeRequest, provider: str, alias: str) -> ProbeRequest:
        return dataclasses.replace(req, body={**req.body, **extra})

    return apply


def _header(name: str, value: Callable[[], str]) -> Callable[[ProbeRequest, str, str], ProbeRequest]:
    def apply(req: ProbeRequest, provider: str, alias: str) -> ProbeRequest:
        return dataclasses.replace(req, headers={**req.headers, name: value()})

    return apply


def _temperature(value: float) -> Callable[[ProbeRequest, str, str], ProbeRequest]:
    return lambda req, provider, alias: dataclasses.replace(req, temperature=value)


def _alias(req: ProbeRequest, provider: str, alias: str) -> ProbeRequest:
    return dataclasses.replace(req, body={**req.body, "model": alias})


def _user(req: ProbeRequest, provider: str, alias: str) -> ProbeRequest:
    extra = {"metadata": {"user_id": "probe-user-2"}} if provider == "anthropic" else {"user": "probe-user-2"}
    return dataclasses.replace(req, body={**req.body, **extra})


def _whitespace(req: ProbeRequest, provider: str, alias: str) -> ProbeRequest:
    """A double space after the system prompt's first word: the prefix differs from its first message on."""
    head, _, tail = req.system.partition(" ")
    return dataclasses.replace(req, system=f"{head}  {tail}")


def _order(req: ProbeRequest, provider: str, alias: str) -> ProbeRequest:
    """The document's first two paragraphs swapped: the same text, in another order."""
    paras = req.document.split("\n\n")
    if len(paras) > 2:
        paras[0], paras[1] = paras[1], paras[0]
    return dataclasses.replace(req, document="\n\n".join(paras))


def _prefix(provider: str) -> tuple[str, ...]:
    return ("system",) if provider == "anthropic" else ("messages",)


def variations(provider: str) -> tuple[Variation, ...]:
    """Every variation, in the order a round sends them."""
    return (
        Variation("none", (), _same),
        Variation("model_alias", ("model",), _alias),
        Variation("temperature", ("temperature",), _temperature(0.5)),
        Variation("temperature_float", ("temperature",), _temperature(0.7000000001)),
        Variation("top_p", ("top_p",), _body(top_p=0.9)),
        Variation("user_field", ("metadata",) if provider == "anthropic" else ("user",), _user),
        Variation(
            "anthropic_version", ("header:anthropic-version",), _header("anthropic-version", lambda: "2023-01-01")
        ),
        Variation("custom_header", ("header:x-probe-team",), _header("x-probe-team", lambda: "probe")),
        Variation("request_id", ("header:x-request-id",), _header("x-request-id", lambda: f"probe-{next(_IDS)}")),
        Variation("prefix_whitespace", _prefix(provider), _whitespace),
        Variation("prefix_order", _prefix(provider), _order),
    )


NAMES = tuple(v.name for v in variations("openai"))


def messages(req: ProbeRequest, provider: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The chat messages and the extra body of one request: Anthropic gets the prefix as a system block with a
    `cache_control` breakpoint (in the extra body, which replaces the adapter's plain system string)."""
    prefix = f"{req.system}\n\n{req.document}"
    user = [{"role": "user", "content": QUESTION}]
    if provider != "anthropic":
        return [{"role": "system", "content": prefix}, *user], dict(req.body)
    block = {"type": "text", "text": prefix, "cache_control": {"type": "ephemeral"}}
    return user, {"system": [block], **req.body}
