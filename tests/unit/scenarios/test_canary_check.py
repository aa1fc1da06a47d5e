"""The long-document truncation checks: the canary by content, billing by usage, and which decides."""

from __future__ import annotations

from typing import Any

import pytest

from loadlib.data import canary
from loadlib.errors import ErrorClass
from loadlib.metrics.document_results import document_checks, summarize, truncation_hints
from loadlib.metrics.scenarios import ScenarioResults
from loadlib.mock import MockConfig
from loadlib.mock.llm_response import canary_quote
from loadlib.mock.plan import billed_prompt_tokens, reported_prompt_tokens
from loadlib.mock.prompt import Canary, PromptCount
from loadlib.providers.base import StreamResult
from loadlib.records.build import counted_short
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
    checks = summarize(r, {})["checks"]
    assert checks == {
        "canary": {"quoted": 3, "missing": 2},
        "billing": {"fits": 5, "truncated": 1, "unverified": 0},
        "decided_by": {"canary": 5, "billing": 1},
        "disagree": 2,
        "missing_fits": {"counted_short": 0, "counted_whole": 2, "short_billed_pct": None},
        "quoted_truncated": 0,
    }


def mock_answers(cfg: MockConfig, sizes: list[int]) -> list[tuple[str | None, str | None, str | None, str | None]]:
    """Each document of `sizes` tokens (its canary on the last line) answered as the mock would with `cfg`: what
    the checks then say (canary, billing, prompt count) and the mock's ground truth for the canary."""
    out = []
    for sent in sizes:
        prompt = PromptCount(tokens=sent, canary=Canary(CODE, 1, 0), canary_at=sent)
        billed = billed_prompt_tokens(cfg, sent)
        lead, truth = canary_quote(prompt, cfg, prose=True)
        rec = make_record(prompt_tokens=reported_prompt_tokens(cfg, sent, billed), prompt_tokens_est=sent)
        counted = {True: "short", False: "whole", None: None}[counted_short(rec.prompt_tokens, sent)]
        out.append((canary_verdict(answer(lead + "- a summary"), CODE), billing_verdict(rec, 0.7), counted, truth))
    return out


def hints_for(cfg: MockConfig, sizes: list[int]) -> tuple[list[str], set[str | None]]:
    """The console's hints for a run of `sizes` against the mock with `cfg`, and the truth's canary values."""
    r = ScenarioResults()
    truths = set()
    for sent, (seen, billed, counted, truth) in zip(sizes, mock_answers(cfg, sizes), strict=True):
        document_checks(r, "whole", seen, billed, counted, 100.0 * billed_prompt_tokens(cfg, sent) / sent)
        truths.add(truth)
    return truncation_hints(summarize(r, {})["checks"]), truths


def test_truncated_behind_a_counting_gateway_is_never_told_to_turn_the_canary_off() -> None:
    """Issue 21: every document cut at 6,000 tokens behind a gateway reporting the prompt as sent. The old hint said
    `--doc-canary off`, which turned 32 of 32 truncations into fits. Evidence as the records hold it is identical
    to a model that will not quote, so the hint says both and how to tell, and the canary stays on."""
    cut, cut_truth = hints_for(MockConfig(truncate_to=6000, usage_prompt="sent"), [8087, 16000] * 16)
    ignored, ignored_truth = hints_for(MockConfig(quote_canary="never"), [8087, 16000] * 16)
    assert cut_truth == {"cut"} and ignored_truth == {"ignored"}
    assert cut == ignored, "the records cannot tell the two apart: the hint must not pretend to"
    (hint,) = cut
    assert hint.startswith("32 of 32 answers did not quote the document's reference code while usage said the prompt")
    assert "cannot tell which" in hint and "--doc-tokens 1000,16000" in hint and "only then is --doc-canary off" in hint
    assert "gateway" not in hint, "nothing in these records says a gateway counted"


def test_a_model_that_quotes_elsewhere_points_at_the_usage() -> None:
    """4K documents fit and are quoted, 16K ones are cut behind a gateway counting the prompt as sent: the model
    quotes, so the misses are cuts the usage did not see."""
    (hint,), truths = hints_for(MockConfig(truncate_to=6000, usage_prompt="sent"), [4000, 16000])
    assert truths == {"quoted", "cut"}
    assert hint.startswith("1 of 2 answers did not quote") and "other answers quoted theirs (1)" in hint
    assert "gateway counting the prompt itself?" in hint and "--doc-canary" not in hint


def test_an_honest_short_count_is_the_server_billing_what_it_kept() -> None:
    """Issue 21: 6,000 of 8,087 tokens reported by the server itself, above the 0.7 ratio. The old line blamed a
    gateway; the usage was honest and said the cut, only within the billing check's margin."""
    (hint,), truths = hints_for(MockConfig(truncate_to=6000), [8087])
    assert truths == {"cut"}
    assert "1 of 1 answers did not quote" in hint and "fewer prompt tokens than were sent (74 % of them)" in hint
    assert "billed what it kept" in hint and "gateway" not in hint and "--doc-canary" not in hint


@pytest.mark.parametrize(
    ("cfg", "sizes"),
    [
        (MockConfig(), [4000, 16000]),  # faithful: quoted and fits
        (MockConfig(truncate_to=6000), [4000, 16000]),  # cut and billed short: both checks say truncated
    ],
)
def test_checks_that_agree_give_no_hint(cfg: MockConfig, sizes: list[int]) -> None:
    assert hints_for(cfg, sizes)[0] == []


def test_a_quoted_code_billed_short_says_the_end_arrived() -> None:
    r = ScenarioResults()
    document_checks(r, "whole", "quoted", "truncated", "short", 50.0)
    (hint,) = truncation_hints(summarize(r, {})["checks"])
    assert hint.startswith("1 answers quoted the reference code though billing said truncated")


def test_counted_short_is_the_usage_disagreement_rule_one_way() -> None:
    assert counted_short(6000, 8087) is True, "the issue's honest count: 74 % of what was sent"
    assert counted_short(7500, 8087) is False, "within 10 %: tokenizers differ"
    assert counted_short(8087, 8087) is False and counted_short(None, 8087) is None
