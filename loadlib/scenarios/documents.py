"""Long-document maths, pure: overlapping chunks on token offsets, the two truncation checks, outcome classes.

Truncation is checked two ways (docs/scenarios.md, "Truncation checks"): by content (the answer quotes the canary
on the document's last line) and by billing (the server's prompt count against ours). Content decides when the
answer can show it, because a gateway may report a prompt count of its own; billing decides otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from loadlib.data import Document, canary
from loadlib.errors import ConfigError, ErrorClass
from loadlib.providers.base import StreamResult
from loadlib.records import tokens
from loadlib.records.record import RequestRecord

FITS = ("fits", "unverified")
Verdict = tuple[ErrorClass, str] | None


@dataclass(frozen=True)
class Chunked:
    """A document cut into overlapping chunks: (text, tokens) per chunk."""

    document: Document
    chunks: tuple[tuple[str, int], ...]


def chunk_bounds(n_tokens: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Token ranges [a, b) of chunks of `size` tokens where neighbours share `overlap` tokens (pure)."""
    if size <= overlap:
        raise ConfigError(f"--doc-chunk-tokens ({size}) must be larger than --doc-overlap-tokens ({overlap})")
    bounds = []
    start = 0
    while True:
        end = min(start + size, n_tokens)
        bounds.append((start, end))
        if end >= n_tokens:
            return bounds
        start = end - overlap


def chunk_document(doc: Document, size: int, overlap: int) -> Chunked:
    """Tokenise once, cut the token ids, decode each chunk: chunk texts with their exact token counts."""
    enc = tokens.get_encoding()
    ids = enc.encode(doc.text, disallowed_special=())
    parts = tuple(
        (enc.decode_bytes(ids[a:b]).decode("utf-8", "ignore"), b - a) for a, b in chunk_bounds(len(ids), size, overlap)
    )
    return Chunked(doc, parts)


CANARY_MISSING = (
    "the answer does not quote the document's reference code (canary): the end of the document did not reach the model"
)


def billing_verdict(record: RequestRecord, ratio: float) -> str | None:
    """fits, truncated (billed under `ratio` of what we sent) or unverified (no usage); None without an answer."""
    if record.status not in (ErrorClass.OK, ErrorClass.TRUNCATED):
        return None
    billed, sent = record.prompt_tokens, record.prompt_tokens_est
    if billed is None:
        return "unverified"
    return "truncated" if sent and billed < ratio * sent else "fits"


def canary_verdict(result: StreamResult | None, code: str | None) -> str | None:
    """quoted or missing in the answer's text; None without a code or a text answer to look in."""
    if code is None or result is None or not result.text:
        return None
    return "quoted" if canary.quoted(result.text, code) else "missing"


def document_check(ratio: float, code: str | None) -> Callable[[StreamResult | None, RequestRecord], Verdict]:
    """Truncated when the answer misses the canary; when it cannot show it, when the server billed too little."""
    billing = truncation_check(ratio)

    def check(result: StreamResult | None, record: RequestRecord) -> Verdict:
        seen = canary_verdict(result, code)
        if seen == "missing":
            return ErrorClass.TRUNCATED, CANARY_MISSING
        return billing(result, record) if seen is None else None

    return check


def truncation_check(ratio: float) -> Callable[[StreamResult | None, RequestRecord], Verdict]:
    """Silent truncation: the server billed fewer than `ratio` of the prompt tokens we sent."""

    def check(result: StreamResult | None, record: RequestRecord) -> Verdict:
        billed, sent = record.prompt_tokens, record.prompt_tokens_est
        if billed is not None and sent and billed < ratio * sent:
            return ErrorClass.TRUNCATED, f"server billed {billed} prompt tokens of about {sent} sent"
        return None

    return check


def outcome_of(record: RequestRecord, seen: str | None = None) -> str:
    """fits, context_length_exceeded, truncated, unverified (neither a quoted canary nor usage) or error."""
    if record.status is ErrorClass.OK:
        return "fits" if record.prompt_tokens is not None or seen == "quoted" else "unverified"
    if record.status in (ErrorClass.CONTEXT_LENGTH_EXCEEDED, ErrorClass.TRUNCATED):
        return record.status.value
    return "error"
