"""Long-document maths, pure: overlapping chunks on token offsets, the silent-truncation check, outcome classes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from loadlib.data import Document
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


def truncation_check(ratio: float) -> Callable[[StreamResult | None, RequestRecord], Verdict]:
    """Silent truncation: the server billed fewer than `ratio` of the prompt tokens we sent."""

    def check(result: StreamResult | None, record: RequestRecord) -> Verdict:
        billed, sent = record.prompt_tokens, record.prompt_tokens_est
        if billed is not None and sent and billed < ratio * sent:
            return ErrorClass.TRUNCATED, f"server billed {billed} prompt tokens of about {sent} sent"
        return None

    return check


def outcome_of(record: RequestRecord) -> str:
    """fits, context_length_exceeded, truncated, unverified (no usage to compare) or error."""
    if record.status is ErrorClass.OK:
        return "fits" if record.prompt_tokens is not None else "unverified"
    if record.status in (ErrorClass.CONTEXT_LENGTH_EXCEEDED, ErrorClass.TRUNCATED):
        return record.status.value
    return "error"
