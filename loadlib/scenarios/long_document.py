"""Long-document summarisation: documents of 4K to 128K tokens, three modes (--doc-mode).

- whole: one request per document; the outcome is `fits`, `context_length_exceeded` (the provider's error), or
  `truncated` when the server billed clearly fewer prompt tokens than we sent (fewer than --doc-truncation-ratio of
  our estimate: silent truncation). Without usage the outcome is `unverified`.
- chunked: map-reduce; the document is cut into chunks of --doc-chunk-tokens that overlap by --doc-overlap-tokens,
  each chunk is summarised, then the summaries are combined. The overlap's cost is reported as chunk tokens sent
  against document tokens.
- probe: one request per size, doubling from 4,000 tokens until the endpoint refuses or truncates, then bisecting to
  --doc-probe-resolution tokens: the endpoint's real context limit. Each probe user runs the search once.

Documents are tokenised once when they are generated (or loaded); chunking and probe prefixes cut the token ids
computed once at preparation, and prompt estimates are sums of per-message counts, never a recount.
"""

from __future__ import annotations

from locust import task
from locust.exception import StopUser

import dataclasses
import functools
import itertools
import logging
from dataclasses import dataclass
from typing import Any

from loadlib import data
from loadlib.data import Document, canary
from loadlib.data.long_document import document_text
from loadlib.errors import ConfigError, ErrorClass
from loadlib.locust.user import OnRecord, Reply
from loadlib.metrics import document_results as results
from loadlib.options import DOC_MODES
from loadlib.providers.base import StreamResult
from loadlib.records import tokens
from loadlib.records.build import counted_short
from loadlib.records.record import RequestRecord
from loadlib.scenarios.base import ScenarioSpec, ScenarioUser, parse_ints, positive, prompt_tokens
from loadlib.scenarios.documents import (
    FITS,
    Chunked,
    billing_verdict,
    canary_verdict,
    chunk_bounds,
    chunk_document,
    document_check,
    outcome_of,
    truncation_check,
)
from loadlib.settings import Options

log = logging.getLogger("loadlib.scenarios")
NAME = "long_document"
SLO = ("ttft p95 < 10s", "e2e p95 < 60s")
PROBE_START = 4000
MAX_PROBE_ERRORS = 5  # other failures (timeouts, 5xx) tolerated before the probe gives up

SUMMARY_INSTRUCTION = (
    "You are an analyst. Summarise the document the user sends: its purpose, the parties or organisations involved, "
    "the key obligations, figures and dates, and anything unusual or risky. Use at most ten bullet points."
)
MAP_INSTRUCTION = (
    "You are an analyst summarising one part of a longer document. Summarise this part in at most five bullet "
    "points, keeping figures, dates and defined terms exactly as written."
)
REDUCE_INSTRUCTION = (
    "You are an analyst. The user sends summaries of consecutive parts of one document. Combine them into one "
    "summary of at most ten bullet points, removing repetition caused by overlapping parts."
)
REDUCE_ASK = "Combine the part summaries above into the final summary of the whole document."


@dataclass(frozen=True)
class DocContext:
    mode: str
    documents: tuple[Document, ...]
    codes: tuple[str | None, ...]  # each document's canary (None: --doc-canary off, or chunked mode)
    chunked: tuple[Chunked, ...]
    probe_ids: tuple[int, ...]  # token ids of the probe document
    max_tokens: int
    truncation_ratio: float
    probe_max: int
    probe_resolution: int
    instruction_tokens: dict[str, int]
    canary: bool


def _signature(opts: Options) -> tuple[Any, ...]:
    return (
        opts.doc_mode,
        opts.doc_tokens,
        opts.doc_per_size,
        opts.doc_chunk_tokens,
        opts.doc_overlap_tokens,
        opts.doc_max_tokens,
        opts.doc_truncation_ratio,
        opts.doc_canary,
        opts.doc_probe_max,
        opts.doc_probe_resolution,
        opts.doc_data_file,
        opts.data_seed,
        opts.data_cache_dir,
    )


def build_context(opts: Options) -> DocContext:
    mode = str(opts.doc_mode)
    if mode not in DOC_MODES:
        raise ConfigError(f"--doc-mode must be one of {', '.join(DOC_MODES)}, got {mode!r}")
    seed = int(opts.data_seed)
    sizes = parse_ints(opts.doc_tokens, "--doc-tokens", minimum=100)
    per_size = positive(int(opts.doc_per_size), "--doc-per-size")
    chunk, overlap = int(opts.doc_chunk_tokens), int(opts.doc_overlap_tokens)
    positive(chunk, "--doc-chunk-tokens")
    positive(overlap, "--doc-overlap-tokens", 0)
    ratio = float(opts.doc_truncation_ratio)
    if not 0 < ratio <= 1:
        raise ConfigError(f"--doc-truncation-ratio must be in (0, 1], got {ratio}")
    docs: tuple[Document, ...] = ()
    codes: tuple[str | None, ...] = ()
    chunked: tuple[Chunked, ...] = ()
    probe_ids: tuple[int, ...] = ()
    use_canary = str(opts.doc_canary) == "on"
    if mode == "probe":
        probe_max = positive(int(opts.doc_probe_max), "--doc-probe-max", PROBE_START)
        text = document_text(seed, "contract", 0, probe_max + 1000)
        probe_ids = tuple(tokens.get_encoding().encode(text, disallowed_special=()))
    else:
        docs = data.documents(seed, sizes, per_size, str(opts.data_cache_dir or ""), str(opts.doc_data_file or ""))
        if mode == "chunked":
            chunk_bounds(1, chunk, overlap)  # validates size > overlap
            chunked = tuple(chunk_document(d, chunk, overlap) for d in docs)
        elif use_canary:
            docs, codes = zip(*(with_canary(d) for d in docs), strict=True)
    return DocContext(
        mode=mode,
        documents=docs,
        codes=codes or (None,) * len(docs),
        chunked=chunked,
        probe_ids=probe_ids,
        max_tokens=positive(int(opts.doc_max_tokens), "--doc-max-tokens"),
        truncation_ratio=ratio,
        probe_max=int(opts.doc_probe_max),
        probe_resolution=positive(int(opts.doc_probe_resolution), "--doc-probe-resolution"),
        instruction_tokens={
            "summary": tokens.count_text(SUMMARY_INSTRUCTION),
            "map": tokens.count_text(MAP_INSTRUCTION),
            "reduce": tokens.count_text(REDUCE_INSTRUCTION),
            "ask": tokens.count_text(REDUCE_ASK),
            "canary": tokens.count_text(f" {canary.INSTRUCTION}"),
        },
        canary=use_canary,
    )


def with_canary(doc: Document, key: str | None = None) -> tuple[Document, str]:
    """The document ending in its reference code, with the code; its token count grows by the code line's."""
    code = canary.code_for(key or doc.id)
    text = canary.with_canary(doc.text, code)
    return dataclasses.replace(doc, text=text, tokens=doc.tokens + tokens.count_text(text[len(doc.text) :])), code


def prompt_count(record: RequestRecord) -> tuple[str | None, float | None]:
    """How the server's prompt count stands to what we sent: `short` when it counted over 10 % fewer (it billed what
    it kept), else `whole` (it counted the prompt as sent); with billed / sent in %. (None, None) without usage."""
    billed, sent = record.prompt_tokens, record.prompt_tokens_est
    short = counted_short(billed, sent)
    if short is None or billed is None or not sent:
        return None, None
    return ("short" if short else "whole"), billed / sent * 100.0


def validate(opts: Options) -> None:
    if opts.doc_mode not in DOC_MODES:
        raise ConfigError(f"--doc-mode must be one of {', '.join(DOC_MODES)}, got {opts.doc_mode!r}")
    parse_ints(opts.doc_tokens, "--doc-tokens", minimum=100)
    if opts.doc_mode == "chunked":
        chunk_bounds(1, int(opts.doc_chunk_tokens), int(opts.doc_overlap_tokens))
    if opts.doc_data_file:
        data.documents(0, (100,), 1, "", str(opts.doc_data_file))


SPEC = ScenarioSpec(NAME, build_context, validate, _signature, SLO, results=results.SECTION)


class LongDocumentUser(ScenarioUser):
    """An analyst summarising long documents, whole, map-reduce, or probing the context limit."""

    abstract = False
    scenario = NAME
    spec = SPEC
    _documents = itertools.count()

    def on_start(self) -> None:
        self.ctx = self.data()
        self.check = truncation_check(self.ctx.truncation_ratio)

    def _summarise(
        self,
        system: str,
        system_tokens: int,
        parts: list[tuple[str, int]],
        code: str | None = None,
        on_record: OnRecord | None = None,
    ) -> tuple[Reply, int]:
        """One summary request: the instruction as system message, each part as its own user message (so the
        prompt estimate is a sum of counts made earlier). With a canary `code` the model is asked to quote it and
        the answer is checked for it. Returns the reply and the estimate."""
        if code is not None:
            system, system_tokens = (
                f"{system} {canary.INSTRUCTION}",
                system_tokens + self.ctx.instruction_tokens["canary"],
            )
        check = self.check if code is None else document_check(self.ctx.truncation_ratio, code)
        messages = [{"role": "system", "content": system}] + [{"role": "user", "content": t} for t, _ in parts]
        estimate = prompt_tokens(("system", system_tokens), *(("user", n) for _, n in parts))
        reply = self.chat(
            messages, prompt_tokens_est=estimate, max_tokens=self.ctx.max_tokens, check=check, on_record=on_record
        )
        return reply, estimate

    def _whole(self, doc: Document, code: str | None, mode: str) -> tuple[str, Reply, int]:
        """Summarise a whole document (or probe prefix); each attempt's checks are counted as it is recorded."""
        count = functools.partial(self._count_whole, code, mode)
        reply, estimate = self._summarise(
            SUMMARY_INSTRUCTION, self.ctx.instruction_tokens["summary"], [(doc.text, doc.tokens)], code, count
        )
        return outcome_of(reply.record, canary_verdict(reply.result, code)), reply, estimate

    def _count_whole(self, code: str | None, mode: str, record: RequestRecord, result: StreamResult | None) -> None:
        """What both truncation checks said of an attempt and (whole documents) its outcome, inside the attempt, so
        the counts agree with the records when the run's end stops the user as the answer arrives."""
        if record.status is ErrorClass.CUT_OFF:
            return
        seen = canary_verdict(result, code)
        billed = billing_verdict(record, self.ctx.truncation_ratio)
        if seen is not None or billed is not None:
            results.document_checks(self.found, mode, seen, billed, *prompt_count(record))
        if mode == "whole":
            results.document_outcome(self.found, "whole", outcome_of(record, seen))

    @task
    def summarise(self) -> None:
        mode = self.ctx.mode
        if mode == "probe":
            self._probe()
        elif mode == "chunked":
            self._chunked(self.ctx.chunked[next(LongDocumentUser._documents) % len(self.ctx.chunked)])
        else:
            i = next(LongDocumentUser._documents) % len(self.ctx.documents)
            self._whole(self.ctx.documents[i], self.ctx.codes[i], "whole")

    def _chunked(self, item: Chunked) -> None:
        ctx = self.ctx
        summaries: list[tuple[str, int]] = []
        sent = 0
        chunk_tokens = 0
        ok = True
        for text, n in item.chunks:
            reply, estimate = self._summarise(MAP_INSTRUCTION, ctx.instruction_tokens["map"], [(text, n)])
            sent += estimate
            chunk_tokens += n
            if not reply.ok:
                ok = False
                break
            out = reply.record.output_tokens
            summaries.append((reply.text, out if out is not None else tokens.count_text(reply.text)))
        if ok:
            parts = [*summaries, (REDUCE_ASK, ctx.instruction_tokens["ask"])]
            reply, estimate = self._summarise(REDUCE_INSTRUCTION, ctx.instruction_tokens["reduce"], parts)
            sent += estimate
            ok = reply.ok
        results.chunked_document(self.found, item.document.tokens, chunk_tokens, sent, len(item.chunks), ok)

    def _probe_once(self, n: int) -> str:
        """One probe request with the first `n` tokens of the probe document (and its canary line); records the
        prompt size sent."""
        text = tokens.get_encoding().decode_bytes(list(self.ctx.probe_ids[:n])).decode("utf-8", "ignore")
        doc, code = Document(f"probe-{n}", "contract", "probe", text, n), None
        if self.ctx.canary:
            doc, code = with_canary(doc)
        outcome, reply, estimate = self._whole(doc, code, "probe")
        results.probe_step(self.found, estimate, outcome, reply.record.prompt_tokens)
        return outcome

    def _probe(self) -> None:
        """Double the document until the request fails, then bisect; then this user stops."""
        ctx = self.ctx
        limit = min(ctx.probe_max, len(ctx.probe_ids))
        fit, fail, errors = 0, None, 0
        n = min(PROBE_START, limit)
        while fail is None and errors < MAX_PROBE_ERRORS:
            outcome = self._probe_once(n)
            if outcome == "error":
                errors += 1
            elif outcome in FITS:
                fit = n
                if n >= limit:
                    break
                n = min(n * 2, limit)
            else:
                fail = n
        while fail is not None and fail - fit > ctx.probe_resolution and errors < MAX_PROBE_ERRORS:
            mid = (fit + fail) // 2
            outcome = self._probe_once(mid)
            if outcome == "error":
                errors += 1
            elif outcome in FITS:
                fit = mid
            else:
                fail = mid
        log.info("loadlib: context probe done: largest fitting document %s tokens, smallest failing %s", fit, fail)
        raise StopUser()
