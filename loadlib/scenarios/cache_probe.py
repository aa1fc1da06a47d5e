"""Cache probe: which change to a request busts a provider's prompt cache or a gateway's response cache.

Each round sends a long prefix (system prompt, then a document) that no earlier round sent (a round tag opens the
system prompt), first as it is (`warmup`: cold in every layer), then once per variation (loadlib.scenarios.
cache_variations): none, a model alias, temperature and top_p (0.7 against 0.7000000001 too), a user field, headers,
a request id, whitespace and order in the prefix. The response-cache layer is read from the gateway's headers
(`x-cache`, LiteLLM's, a CDN's), or when no response carries one inferred from the whole answer (the text of an
earlier answer of the round, its events all at once); the prompt cache from the usage's cached prompt tokens
(loadlib.metrics.cache_probe_results). Requests run one after another per user.
"""

from __future__ import annotations

from locust import task

import itertools
from dataclasses import dataclass
from typing import Any

from loadlib.errors import ConfigError, ErrorClass
from loadlib.metrics import cache_probe_results as results
from loadlib.metrics.cache_probe_results import NAME, WARMUP
from loadlib.metrics.scenarios import key
from loadlib.providers.base import StreamResult
from loadlib.records.record import RequestRecord
from loadlib.scenarios import cache_variations as cv
from loadlib.scenarios.base import ScenarioSpec, ScenarioUser, positive
from loadlib.settings import Options

SLO = ("error_rate < 1%",)
MAX_TOKENS = 32


@dataclass(frozen=True)
class ProbeContext:
    document: str
    provider: str
    alias: str
    variations: tuple[cv.Variation, ...]


def _names(opts: Options) -> tuple[str, ...]:
    text = str(opts.cache_probe_variations or "all").strip()
    names = cv.NAMES if text == "all" else tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in cv.NAMES]
    if unknown:
        raise ConfigError(f"--cache-probe-variations: unknown {', '.join(unknown)}; known: {', '.join(cv.NAMES)}")
    return names


def _signature(opts: Options) -> tuple[Any, ...]:
    return (opts.cache_probe_doc_tokens, opts.cache_probe_variations, opts.cache_probe_model_alias, opts.data_seed)


def build_context(opts: Options) -> ProbeContext:
    from loadlib.data.long_document import document_text

    names = _names(opts)
    alias = str(opts.cache_probe_model_alias or "")
    provider = str(opts.llm_provider or "openai")
    chosen = tuple(v for v in cv.variations(provider) if v.name in names and (alias or v.name != "model_alias"))
    tokens = positive(int(opts.cache_probe_doc_tokens), "--cache-probe-doc-tokens")
    return ProbeContext(document_text(int(opts.data_seed), "contract", 0, tokens), provider, alias, chosen)


def validate(opts: Options) -> None:
    _names(opts)
    positive(int(opts.cache_probe_doc_tokens), "--cache-probe-doc-tokens")


SPEC = ScenarioSpec(NAME, build_context, validate, _signature, SLO, results=results.SECTION)


class CacheProbeUser(ScenarioUser):
    """One round after another: the cold request, then each variation once."""

    abstract = False
    scenario = NAME
    spec = SPEC
    _rounds = itertools.count()

    def on_start(self) -> None:
        self.ctx: ProbeContext = self.data()
        names = [v.name for v in self.ctx.variations]
        self.found.gauge(key(NAME, "order"), ",".join(names))
        for v in self.ctx.variations:
            results.gauge_changes(self.found, v.name, v.changes)

    def _ask(self, name: str, req: cv.ProbeRequest, round_: results.Round) -> None:
        messages, body = cv.messages(req, self.ctx.provider)

        def counted(record: RequestRecord, result: StreamResult | None) -> None:
            count_request(self, name, record, result, round_)

        self.chat(
            messages,
            max_tokens=MAX_TOKENS,
            temperature=req.temperature,
            extra_body=body,
            extra_headers=req.headers,
            on_record=counted,
        )

    @task
    def probe(self) -> None:
        run_id = str(self.run_context.options.run_id or "")
        tag = f"[cache probe {run_id} round {next(CacheProbeUser._rounds)}-{self.user_index}]"
        base = cv.ProbeRequest(system=f"{tag} {cv.SYSTEM}", document=self.ctx.document)
        round_ = results.Round()
        self._ask(WARMUP, base, round_)
        for v in self.ctx.variations:
            self._ask(v.name, v.apply(base, self.ctx.provider, self.ctx.alias), round_)


def count_request(
    user: CacheProbeUser, name: str, record: RequestRecord, result: StreamResult | None, round_: results.Round
) -> None:
    """Count one answered request of a variation (a failed one only as a request); its answer joins the round's."""
    found = user.found
    results.count(found, name, requests=1)
    if record.status != ErrorClass.OK:
        return
    results.count(found, name, answered=1)
    said = results.response_hit(record.ratelimit)
    seen = results.answer(result.text if result is not None else "", record)
    inferred = name != WARMUP and seen is not None and round_.replayed(seen)
    if seen is not None:
        round_.add(seen, cold=name == WARMUP)
    results.count(found, name, header_seen=said is not None, response_hits=bool(said), inferred_hits=inferred)
    ttft = record.ttft_ms
    if ttft is not None:
        results.count(found, name, ttft_n=1, ttft_us=ttft * results.MICRO)
    hit = said if said is not None else inferred
    if hit or record.cost_usd is not None:
        results.count(found, name, costed=1, cost_nusd=0 if hit else (record.cost_usd or 0) * results.NANO)
    whole = record.cache_reported_prompt_tokens
    if not hit and whole is not None and record.prompt_tokens is not None:
        results.count(found, name, cached_tokens=record.cached_prompt_tokens or 0, whole_prompt_tokens=whole)
