"""Long documents: chunk bounds, the silent-truncation check, outcome classes."""

from __future__ import annotations

import itertools

import pytest

from loadlib.errors import ConfigError, ErrorClass
from loadlib.records.record import RequestRecord
from loadlib.scenarios.documents import chunk_bounds, outcome_of, truncation_check
from tests.support.records import make_record


def rec(**kw: object) -> RequestRecord:
    return make_record(scenario="long_document", **kw)


@pytest.mark.parametrize(("n", "size", "overlap"), [(10_000, 4000, 200), (4000, 4000, 100), (100, 4000, 0), (9, 3, 1)])
def test_chunks_cover_the_document_with_the_overlap(n: int, size: int, overlap: int) -> None:
    bounds = chunk_bounds(n, size, overlap)
    assert bounds[0][0] == 0 and bounds[-1][1] == n
    assert all(b - a <= size for a, b in bounds)
    for (_, b1), (a2, _) in itertools.pairwise(bounds):
        assert b1 - a2 == overlap
    sent = sum(b - a for a, b in bounds)
    assert sent - n == overlap * (len(bounds) - 1), "the overhead is exactly the overlaps"


def test_chunk_size_must_exceed_overlap() -> None:
    with pytest.raises(ConfigError, match="must be larger"):
        chunk_bounds(100, 50, 50)


def test_truncation_check_flags_clearly_fewer_billed_tokens() -> None:
    check = truncation_check(0.7)
    assert check(None, rec(prompt_tokens=8000, prompt_tokens_est=16000)) == (
        ErrorClass.TRUNCATED,
        "server billed 8000 prompt tokens of about 16000 sent",
    )
    assert check(None, rec(prompt_tokens=15000, prompt_tokens_est=16000)) is None, "tokenizer differences pass"
    assert check(None, rec(prompt_tokens=None, prompt_tokens_est=16000)) is None, "no usage: cannot tell"


def test_outcomes() -> None:
    assert outcome_of(rec(prompt_tokens=10)) == "fits"
    assert outcome_of(rec()) == "unverified"
    assert outcome_of(rec(status=ErrorClass.CONTEXT_LENGTH_EXCEEDED)) == "context_length_exceeded"
    assert outcome_of(rec(status=ErrorClass.TRUNCATED)) == "truncated"
    assert outcome_of(rec(status=ErrorClass.HTTP_5XX)) == "error"
