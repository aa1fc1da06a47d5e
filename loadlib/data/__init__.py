"""Scenario data: generated deterministically from a seed (cached on disk) or loaded from user JSONL files.

Every data set is built, counted and loaded once per process (memoised here) and once per machine (the disk
cache), so a 128K-token document is tokenised when it is generated, never per request.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from loadlib.data import cache, compliance, long_document, support_chat
from loadlib.data.jsonl import (
    FINDINGS_SCHEMA,
    PREVIOUS,
    ComplianceCase,
    Conversation,
    Document,
    load_cases,
    load_conversations,
    load_documents,
)

__all__ = [
    "FINDINGS_SCHEMA",
    "PREVIOUS",
    "ComplianceCase",
    "Conversation",
    "Document",
    "compliance_cases",
    "conversations",
    "documents",
    "system_prompt",
]


def _dir(cache_dir: str) -> Path | None:
    return Path(cache_dir).expanduser() if cache_dir else None


@lru_cache(maxsize=16)
def conversations(seed: int, count: int, turns: int, cache_dir: str = "", path: str = "") -> tuple[Conversation, ...]:
    """The user's file when `path` is given, else `count` generated conversations of `turns` turns."""
    if path:
        return tuple(load_conversations(path))
    params = {"seed": seed, "count": count, "turns": turns}
    file = cache.cached(
        "conversations", params, lambda: support_chat.conversation_rows(seed, count, turns), _dir(cache_dir)
    )
    return tuple(load_conversations(file))


@lru_cache(maxsize=16)
def documents(
    seed: int, sizes: tuple[int, ...], per_size: int, cache_dir: str = "", path: str = ""
) -> tuple[Document, ...]:
    """The user's file when `path` is given, else `per_size` generated documents per target token size."""
    if path:
        return tuple(load_documents(path))
    params = {"seed": seed, "sizes": list(sizes), "per_size": per_size}
    file = cache.cached(
        "documents", params, lambda: long_document.document_rows(seed, sizes, per_size), _dir(cache_dir)
    )
    return tuple(load_documents(file))


@lru_cache(maxsize=16)
def compliance_cases(seed: int, count: int, cache_dir: str = "", path: str = "") -> tuple[ComplianceCase, ...]:
    """The user's file when `path` is given, else `count` generated cases (transactions, e-mails, clauses)."""
    if path:
        return tuple(load_cases(path))
    params = {"seed": seed, "count": count}
    file = cache.cached("cases", params, lambda: compliance.case_rows(seed, count), _dir(cache_dir))
    return tuple(load_cases(file))


@lru_cache(maxsize=64)
def system_prompt(seed: int, target_tokens: int) -> tuple[str, int]:
    """A support system prompt of about `target_tokens` tokens, and its exact count."""
    return support_chat.system_prompt(seed, target_tokens)
