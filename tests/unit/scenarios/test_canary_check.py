"""The long-document truncation checks: the canary by content, billing by usage, and which decides."""

from __future__ import annotations

from typing import Any

import pytest

from loadlib.data import canary
from loadlib.errors import ErrorClass
from loadlib.metrics.scenarios import ScenarioResults, document_checks, scenario_summary
from loadlib.providers.base import StreamResult
from loadlib.scenarios.documents import billing_verdict, canary_verdict, document_check, outcome_of
from tests.support.records import make_record

CODE = canary.code_for("doc-16000-000")


def answer(text: str) -> StreamResult:
    return StreamResult(text_by_choice={0: text})


def test_code_line_round_trip() -> None:
    assert CODE.startswith("LD-") and len(CODE) == 11 and canary.code_for("doc-16000-000") == CODE
    text = canary.with_canary("A document.", CODE)
    assert canary.find(text) == (CODE, len(text))
    two = "Reference code: LD-00000000 then Reference code: LD-ABCDEF12 end"
    assert canary.find(two) == ("LD-ABCDEF12", two.index(" end")), "the last code, and the index after it"
    assert canary.find("no code here") is None
    assert canary.quoted(f"Sure. {CODE.lower()}\n- point", CODE)


@pytest.mark.parametrize(
    ("text", "billed", "sent", "status", "why"),
    [
        (f"{CODE}\n- summary", 128000, 128000, None, None),  # quoted: fits
        (f"{CODE}\n- summary", 30000, 128000, None, None),  # quoted wins over billing
        ("- summary", 128000, 128000, ErrorClass.TRUNCATED, "reference code"),  # a gateway's own count is not trusted
        ("", 30000, 128000, ErrorClass.TRUNCATED, "billed 30000"),  # no text: billing decides
        ("", None, 128000, None, None),  # neither can tell
    ],
)
def test_document_check(text: str, billed: Any, sent: int, status: Any, why: Any) -> None:
    rec = make_record(prompt_tokens=billed, prompt_tokens_est=sent)
    verdict = document_check(0.7, CODE)(answer(text), rec)
    assert (verdict[0] if verdict else None) == status
    assert why is None or why in verdict[1]


def test_verdicts_and_outcome() -> None:
    ok = make_record(prompt_tokens=None, prompt_tokens_est=100)
    assert billing_verdict(ok, 0.7) == "unverified"
    assert billing_verdict(make_record(prompt_tokens=60, prompt_tokens_est=100), 0.7) == "truncated"
    assert billing_verdict(make_record(status=ErrorClass.HTTP_5XX), 0.7) is None
    assert canary_verdict(answer(CODE), None) is None and canary_verdict(None, CODE) is None
    assert outcome_of(ok) == "unverified" and outcome_of(ok, "quoted") == "fits"


def test_summary_counts_both_checks_and_their_disagreement() -> None:
    r = ScenarioResults()
    for _ in range(3):
        document_checks(r, "whole", "quoted", "fits")
    for _ in range(2):
        document_checks(r, "whole", "missing", "fits")
    document_checks(r, "probe", None, "truncated")
    checks = scenario_summary(r, {})["long_document"]["checks"]
    assert checks == {
        "canary": {"quoted": 3, "missing": 2},
        "billing": {"fits": 5, "truncated": 1, "unverified": 0},
        "decided_by": {"canary": 5, "billing": 1},
        "disagree": 2,
    }
