"""The mock's structured-output amplification: a JSON answer is `structured_ratio` times the request's prose answer,
filled with whitespace after the JSON, so a client's measured amplification has a known answer."""

from __future__ import annotations

import json

from loadlib.data import FINDINGS_SCHEMA
from loadlib.mock.llm_response import structured_answer
from loadlib.mock.structured import answer_text, padded, token_pieces
from loadlib.mockapi.config import MockConfig, parse_overrides

BODY = {"response_format": {"type": "json_schema", "json_schema": {"name": "f", "schema": FINDINGS_SCHEMA}}}


def test_the_answer_is_the_ratio_times_the_prose_answer_and_still_parses() -> None:
    cfg = MockConfig(output_tokens=100, structured_ratio=2.11)
    pieces, headers = structured_answer("openai", BODY, None, cfg, 7, 1024)
    assert pieces is not None and len(pieces) == 211 and headers == [("x-mock-json", "valid")]
    assert json.loads("".join(pieces)) == json.loads(answer_text(FINDINGS_SCHEMA, 7, True))


def test_the_prose_answer_is_capped_by_max_tokens_as_a_prose_answer_would_be() -> None:
    cfg = MockConfig(output_tokens=100, structured_ratio=3.0)
    pieces, _ = structured_answer("openai", BODY, None, cfg, 7, 60)
    assert pieces is not None and len(pieces) == 180, "3 x min(100, 60): the plan then cuts it at max_tokens"


def test_off_by_default_and_a_longer_json_is_left_alone() -> None:
    json_pieces = token_pieces(answer_text(FINDINGS_SCHEMA, 7, True))
    assert structured_answer("openai", BODY, None, MockConfig(), 7, None)[0] == json_pieces
    assert padded(json_pieces, 0.5, 10) == json_pieces
    assert padded(("{", "}"), 2.0, 3) == ("{", "}", " ", " ", " ", " ")


def test_the_key_parses_and_prose_requests_are_untouched() -> None:
    assert parse_overrides("structured_ratio=2.58") == {"structured_ratio": 2.58}
    assert structured_answer("openai", {}, None, MockConfig(structured_ratio=2.0), 7, None) == (None, [])
